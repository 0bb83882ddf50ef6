"""Intake: take every draft in the inbox through review; accepted drafts move to inbox/accepted/,
refused ones to inbox/rejected/ beside a `.error` file that names the draft, the line and the reason.

A draft leaves the inbox only after its decision is committed and journaled, so a crash in between
leaves canon as it was and the draft where it was: the next intake takes it again.
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


def file_away(inbox: Path, draft_path: Path, decision: Decision) -> Path:
    if decision.accepted:
        destination = _unique(inbox / "accepted" / f"v{decision.version}-{draft_path.name}")
    else:
        destination = _unique(inbox / "rejected" / draft_path.name)
        error = "\n".join([f"draft: {draft_path.name}", f"canon version (unchanged): v{decision.version}", "",
                           *decision.problems, ""])
        write_text(destination.with_name(destination.name + ".error"), error)
    destination.parent.mkdir(parents=True, exist_ok=True)
    os.replace(draft_path, destination)
    return destination


def take_inbox(service: SpecService) -> list[Decision]:
    decisions = []
    with service.locked():
        for path in pending_drafts(service.ws.inbox):
            try:
                content = path.read_bytes()
            except FileNotFoundError:
                continue  # moved away while we listed it
            draft = Draft(path.name, target_for(path.name) or "", content)
            decision = service.decide(draft, source="inbox")
            file_away(service.ws.inbox, path, decision)
            decisions.append(decision)
    return decisions
