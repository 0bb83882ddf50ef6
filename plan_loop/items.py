"""From check results to fix_plan items: one small, self-contained item per requirement that does not hold."""
from __future__ import annotations

import hashlib
from collections import defaultdict

from canon.model import Canon
from shared.checks.oracle import Result
from shared.contracts.fix_plan import Evidence, Item

NAMED_BY_LABEL = ("tests", "tamper", "held_back", "sealed")  # checks the evidence names by label alone, without an identity


def item_id(requirement: str, failing: list[str], kind: str = "") -> str:
    """Stable: the same requirement failing the same checks gives the same id, whatever the output says."""
    basis = "|".join([requirement, *sorted(failing)] + ([kind] if kind == "demolish" else []))
    return f"{requirement}.{hashlib.sha256(basis.encode()).hexdigest()[:6]}"


def items_from_results(
    canon: Canon,
    results: list[Result],
    code_files: set[str],
    *,
    demolish_areas: frozenset[str] = frozenset(),
    extra: list[Item] | None = None,
) -> list[Item]:
    from canon.scope import matches

    failing: dict[str, list[Result]] = defaultdict(list)
    for result in results:
        if not result.passed:
            failing[result.check.requirement].append(result)
    items: list[Item] = []
    for rid, bad in sorted(failing.items()):
        req = canon.requirements[rid]
        exists = any(matches(path, req.paths) for path in code_files) if req.paths else True
        kind = "demolish" if req.area in demolish_areas else ("fix" if exists else "implement")
        evidence = tuple(
            Evidence(check=r.check.label if r.check.identity in NAMED_BY_LABEL else f"{r.check.identity} {r.check.label}",
                     exit_code=r.exit_code, timed_out=r.timed_out, excerpt=r.excerpt, fingerprint=r.fingerprint)
            for r in bad
        )
        scope = req.paths
        if kind == "demolish":
            scope = tuple(sorted({p for other in canon.requirements.values() if other.area == req.area for p in other.paths}))
        items.append(Item(
            id=item_id(rid, [r.check.identity for r in bad], kind),
            kind=kind,  # type: ignore[arg-type]
            priority=req.priority,
            requirements=(rid,),
            title=req.title if kind != "demolish" else f"demolish and rebuild area '{req.area}': {req.title}",
            evidence=evidence,
            scope=scope,
            area=req.area,
        ))
    items.extend(extra or [])
    return _link_dependencies(canon, items)


def _link_dependencies(canon: Canon, items: list[Item]) -> list[Item]:
    by_requirement = {rid: item.id for item in items for rid in item.requirements}
    linked = []
    for item in items:
        waits: set[str] = set()
        for rid in item.requirements:
            for dep in canon.slice((rid,)):
                if dep.id != rid and dep.id in by_requirement and by_requirement[dep.id] != item.id:
                    waits.add(by_requirement[dep.id])
        linked.append(item.model_copy(update={"depends_on": tuple(sorted(waits))}))
    return sorted(linked, key=lambda i: (i.priority, i.id))
