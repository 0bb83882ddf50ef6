"""A person's queue: what waits for a person now (a blocked item, a pause, an unmeasured requirement, a refused draft),
each with its real cause and the one action that clears it. `banach status`, the dashboard's first screen and `banach
run`'s last line lead with it; the dashboard offers the action as a button where one exists."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from canon.model import Canon
from shared.contracts.blocks import cause_of, counts, has_rounds_left, many, requirement_of
from shared.workspace import Workspace

REFUSED_LIMIT = 5  # refused drafts shown; the rest are counted


@dataclass(frozen=True)
class Need:
    kind: str  # blocked, paused, unmeasured, refused
    subject: str  # a requirement id, "build", or a draft's name
    what: str  # what waits, in one line
    cause: str  # why: the failing assertion, the error line, the refusal
    action: str  # the one command that clears it
    before: str = ""  # what to do first, or what the action costs
    button: str = ""  # the dashboard action that does `action` ("unblock", "resume"), or ""
    target: str = ""  # its operand (the item id)
    page: str = ""  # the dashboard page where it is done by hand (the canon editor), or ""

    def as_json(self) -> dict[str, str]:
        return asdict(self)


def waiting(ws: Workspace, canon: Canon | None, blocks: dict[str, dict[str, Any]], paused: str,
            unmeasured: list[str]) -> list[Need]:
    """Everything that waits for a person, the most urgent first: what stops build, then what a certificate cannot
    cover, then what canon did not take."""
    at = f"-w {ws.root}"
    documents = {req.id: doc.path for doc in (canon.documents if canon else ()) for req in doc.requirements}
    needs = [_blocked(item, block, documents, at, ws) for item, block in sorted(blocks.items()) if not has_rounds_left(block)]
    if paused:
        needs.append(_paused(paused, at))
    by_document: dict[str, list[str]] = {}
    for requirement in unmeasured:
        by_document.setdefault(documents.get(requirement, "requirements/"), []).append(requirement)
    for document, requirements in sorted(by_document.items()):
        names = ", ".join(requirements)
        needs.append(Need("unmeasured", names, f"{names} unmeasured: no test or check measures "
                          f"{'them' if len(requirements) > 1 else 'it'}, so no certificate says anything about "
                          f"{'them' if len(requirements) > 1 else 'it'}", "nothing in canon can fail for it",
                          f"spec-loop edit {document} {at}", f"give {names} a `tests:` or `checks:` line",
                          page=f"/canon?edit={document}#editor"))
    needs += _refused(ws)
    return needs


def _blocked(item: str, block: dict[str, Any], documents: dict[str, str], at: str, ws: Workspace) -> Need:
    requirement = requirement_of(item)
    build = ws.config.build
    document = documents.get(requirement, "its document")
    why_stopped = (" (no attempt of its last round changed anything)" if block.get("changed_nothing") else "")
    return Need("blocked", requirement, f"{requirement} is blocked after {counts(block)}{why_stopped}", cause_of(block),
                f"build-loop unblock {requirement} {at}",
                f"it may spend up to {many(build.max_attempts * build.rounds, 'more turn')}; if the agent cannot fix the cause, "
                f"fix it first: a commit of yours brought in with banach refresh, or the requirement with spec-loop "
                f"edit {document}",
                button="unblock", target=item)


def _paused(message: str, at: str) -> Need:
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    said = [line for line in lines[1:] if not line.startswith("Fix ")]
    first = (lines[0] if lines else "").removeprefix("PAUSED: ").removesuffix(":").removesuffix("; its stderr ended with")
    cause = f"{first}; its stderr ended: {said[-1]}" if said else first
    if "oscillates" in message:
        return Need("paused", "build", "build is paused: the loop oscillates between requirements that conflict",
                    lines[0].removeprefix("build paused: ") if lines else "", f"spec-loop edit DOC {at}",
                    "make the requirements in the cycle compatible, or drop one; build resumes on the new canon version",
                    page="/canon")
    return Need("paused", "build", "build is paused: its agent failed to run on several items", cause,
                f"build-loop resume {at}", "fix the agent first (banach doctor runs it)", button="resume")


def _refused(ws: Workspace) -> list[Need]:
    """Drafts spec-loop refused from the inbox that are still where it put them, beside their .error."""
    folder = ws.inbox / "rejected"
    if not folder.is_dir():
        return []
    errors = sorted((path for path in folder.glob("*.error") if path.with_suffix("").is_file()),
                    key=lambda path: path.stat().st_mtime, reverse=True)
    needs = []
    for error in errors[:REFUSED_LIMIT]:
        draft = error.with_suffix("")
        needs.append(Need("refused", draft.name, f"spec-loop refused the draft {ws.relative(draft)}: canon did not move",
                          _first_problem(error), f"mv {ws.relative(draft)} {ws.relative(ws.inbox)}/",
                          f"fix what {ws.relative(error)} names first; or delete both files to drop the draft"))
    if len(errors) > REFUSED_LIMIT:
        needs.append(Need("refused", "more", f"{len(errors) - REFUSED_LIMIT} more refused drafts in "
                          f"{ws.relative(folder)}", "each .error names its problems", f"ls {ws.relative(folder)}"))
    return needs


def _first_problem(error: Path) -> str:
    """The first problem a .error names (after its header lines)."""
    try:
        lines = error.read_text(errors="replace").splitlines()
    except OSError:
        return "its .error file could not be read"
    body = lines[lines.index("") + 1:] if "" in lines else lines
    return next((line for line in body if line.strip()), "no problem recorded")


def render(needs: list[dict[str, str]]) -> list[str]:
    """The lines status prints first."""
    if not needs:
        return []
    lines = [f"WAITING FOR YOU ({len(needs)})"]
    for number, need in enumerate(needs, 1):
        lines.append(f"  {number}. {need['what']}")
        lines.append(f"     why: {need['cause']}")
        lines.append(f"     do:  {need['action']}")
        if need["before"]:
            lines.append(f"          ({need['before']})")
    return lines


def last_line(needs: list[dict[str, str]]) -> str:
    """One line for the end of `banach run`: the first thing that waits, its cause and the action."""
    if not needs:
        return ""
    first = needs[0]
    more = f" (and {len(needs) - 1} more: banach status)" if len(needs) > 1 else ""
    return f"waiting for you: {first['what']}: {first['cause']}; do: {first['action']}{more}"
