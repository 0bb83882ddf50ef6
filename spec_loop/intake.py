"""Intake: everything in the inbox, taken as one change. A requirement and the conformance tests it
names can be dropped together, in any order, and land as one canon version; or none of them lands.
Accepted drafts move to inbox/accepted/vN-NAME; refused ones to inbox/rejected/NAME, each beside a
`.error` file that names the problems in it (file:line, what is wrong, what to do) and those elsewhere
in its change.

Drafts leave the inbox only after their decision is committed and journaled, so a crash in between
leaves canon as it was and the drafts where they were: the next intake takes them again.
"""
from __future__ import annotations

import os
from pathlib import Path

from shared.atomic import write_text
from spec_loop.draft import Draft, target_for
from spec_loop.service import Decision, SpecService

SKIPPED_PREFIXES = (".", "#", "~")
SKIPPED_SUFFIXES = ("~", ".swp", ".swx", ".tmp", ".part", ".error")


def pending_drafts(inbox: Path) -> list[Path]:
    if not inbox.is_dir():
        return []
    return sorted(
        entry for entry in inbox.iterdir()
        if entry.is_file() and not entry.name.startswith(SKIPPED_PREFIXES) and not entry.name.endswith(SKIPPED_SUFFIXES)
    )


def _unique(path: Path) -> Path:
    candidate, n = path, 1
    while candidate.exists():
        candidate = path.with_name(f"{path.stem}.{n}{path.suffix}")
        n += 1
    return candidate


def error_text(name: str, decision: Decision) -> str:
    """The .error beside a refused draft: its own problems first, then the rest of its change's."""
    own, elsewhere = decision.problems_of(name)
    lines = [f"draft: {name}", f"canon version (unchanged): v{decision.version}"]
    if len(decision.drafts) > 1:
        lines.append(f"change: {decision.draft} (taken together as one change: none of it landed)")
    lines += ["", *(own or [f"{name}: no problem found in this file; it was refused with the rest of its change, "
                            "and is checked again with it"])]
    if elsewhere:
        lines += ["", "elsewhere in this change:", *elsewhere]
    if len(decision.drafts) > 1:
        again = "move every file of this change from inbox/rejected/ back into inbox/ at once: they are one change"
    else:
        again = "put the file back into inbox/"
    lines += ["", f"What to do: fix what is named above, then {again}.", ""]
    return "\n".join(lines)


def file_away(inbox: Path, draft_path: Path, decision: Decision) -> Path:
    if decision.accepted:
        destination = _unique(inbox / "accepted" / f"v{decision.version}-{draft_path.name}")
    else:
        destination = _unique(inbox / "rejected" / draft_path.name)
        write_text(destination.with_name(destination.name + ".error"), error_text(draft_path.name, decision))
    destination.parent.mkdir(parents=True, exist_ok=True)
    os.replace(draft_path, destination)
    return destination


def take_inbox(service: SpecService) -> Decision | None:
    """Every draft now in the inbox, as one change; None when the inbox is empty."""
    with service.locked():
        drafts: dict[Path, Draft] = {}
        for path in pending_drafts(service.ws.inbox):
            try:
                drafts[path] = Draft(path.name, target_for(path.name) or "", path.read_bytes())
            except FileNotFoundError:
                continue  # moved away while we listed it
        if not drafts:
            return None
        decision = service.decide_change(list(drafts.values()), source="inbox")
        for path in drafts:
            file_away(service.ws.inbox, path, decision)
        return decision
