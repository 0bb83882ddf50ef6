"""`spec-loop edit`: $EDITOR on a copy of a canon document; nothing reaches canon until it is valid.

As with `crontab -e` and `visudo`, an invalid save shows the problems and offers to re-open the
editor with the text kept; declining leaves the text in the spec role's edit folder.
"""
from __future__ import annotations

import difflib
import os
import shlex
import time
from collections.abc import Callable
from pathlib import Path

from canon.store import REQUIREMENTS_DIR
from shared.errors import CanonError
from shared.process import run_interactive
from spec_loop.draft import Draft, stored_text, target_for
from spec_loop.service import Decision, SpecService

TEMPLATE = """---
area: {area}
title: {area}
---

## {area_id}-1: one sentence that can be checked
priority: 3
paths: src/{area}/**, tests/test_{area}.py
checks:
  - python -m pytest -q tests/test_{area}.py

Say what must hold, so that a check can fail when it does not.
"""


# What TEMPLATE says for the person to replace: a document that still holds one has not been written yet.
PLACEHOLDERS = ("one sentence that can be checked", "Say what must hold, so that a check can fail when it does not.")


def editor_argv(path: Path) -> tuple[str, ...]:
    command = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    return (*shlex.split(command), str(path))


def resolve_target(name: str | None) -> str:
    if name is None:
        return f"{REQUIREMENTS_DIR}/draft-{time.strftime('%Y%m%d-%H%M%S')}.md"
    target = target_for(name.removeprefix("canon/"))
    if target is None:
        raise CanonError(f"{name}: canon holds requirement documents (*.md) and conformance tests (test_*.py)")
    return target


def _starting_text(service: SpecService, target: str) -> str:
    """The text an edit starts from: what canon holds at target, or the template for a new document."""
    current = stored_text(service.store, target)
    if current is not None:
        return current
    area = Path(target).stem.replace("draft-", "area")
    return TEMPLATE.format(area=area, area_id=area.upper()[:4].strip("-") or "REQ") if target.endswith(".md") else ""


def _unchanged_or_placeholder(service: SpecService, target: str, text: str, original: str) -> str:
    """Why this text is not a change to submit ("" when it is one)."""
    current = stored_text(service.store, target)
    if text == (current if current is not None else original):
        return (f"no change to {target}; canon stays at v{service.store.version()}" if current is not None else
                f"the template for {target} was saved as it came; nothing was added, canon stays at "
                f"v{service.store.version()}")
    left = [line for line in PLACEHOLDERS if line in text]
    if left:
        return (f"{target}: the template's placeholder is still there ({left[0]!r}); replace it with your requirement "
                "(a heading that states what must hold, its fields, and prose a check can fail)")
    return ""


def _submit(service: SpecService, target: str, text: str, echo: Callable[[str], None]) -> Decision:
    """The same decision every edit gets: parsed, validated, dry-run and reconciled, then one version or a refusal."""
    current = stored_text(service.store, target)
    with service.locked():
        decision = service.decide(Draft(target, target, text.encode("utf-8")), source="edit")
    for notice in service.notices:  # what the dry run of its new checks found
        echo(notice)
    service.notices.clear()
    if decision.accepted:
        diff = difflib.unified_diff((current or "").splitlines(keepends=True), text.splitlines(keepends=True),
                                    f"a/{target}", f"b/{target}")
        echo("".join(diff).rstrip())
    echo(decision.describe())
    return decision


def edit_text(service: SpecService, name: str, text: str, *, echo: Callable[[str], None]) -> Decision | None:
    """A document's new text given whole (by the dashboard, or `spec-loop edit DOC --text-from FILE`): no editor, the
    same checks. None when it is no change; the Decision otherwise (refused or a new version)."""
    target = resolve_target(name)
    original = _starting_text(service, target)
    why_not = _unchanged_or_placeholder(service, target, text, original)
    if why_not:
        if why_not.startswith(("no change", "the template")):
            echo(why_not)
            return None
        refused = Decision((target,), False, service.store.version(), (why_not,))
        echo(refused.describe())
        return refused
    return _submit(service, target, text, echo)


def edit(
    service: SpecService,
    name: str | None,
    *,
    reopen: Callable[[], bool],
    echo: Callable[[str], None],
) -> Decision | None:
    target = resolve_target(name)
    original = _starting_text(service, target)
    work = service.ws.role_dir("spec") / "edit" / target
    work.parent.mkdir(parents=True, exist_ok=True)
    work.write_text(original, encoding="utf-8")
    while True:
        status = run_interactive(editor_argv(work))
        if status != 0:
            echo(f"the editor exited with {status}; canon is unchanged. Your text is in {service.ws.relative(work)}")
            return None
        text = work.read_text(encoding="utf-8", errors="replace")
        why_not = _unchanged_or_placeholder(service, target, text, original)
        if why_not.startswith(("no change", "the template")):
            echo(why_not)
            work.unlink(missing_ok=True)
            return None
        if why_not:
            echo(why_not)
            if not reopen():
                echo(f"canon is unchanged (v{service.store.version()}). Your text is kept in {service.ws.relative(work)}")
                return None
            continue
        decision = _submit(service, target, text, echo)
        if decision.accepted:
            work.unlink(missing_ok=True)
            return decision
        if not reopen():
            echo(f"canon is unchanged (v{decision.version}). Your text is kept in {service.ws.relative(work)}")
            return decision
