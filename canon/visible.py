"""Canon as build sees it: every document and conformance test, less the held-back tests, the sealed cases and the
lines naming them.

Build exports canon for its agents, sensors and prompts through this module alone; plan's and spec's check runs get
the same documents (shared/checks/snapshot.py), their held-back runs a folder of their own. The held-back tests
(held_back/ in canon's tree) and the sealed cases (sealed/) are left out of the export, and each requirement's
`held_back:` and `sealed:` fields are taken out of the documents, so that no agent and nothing build starts learns
their files, names, asserts, values or count. Plan and spec
read canon whole.
"""
from __future__ import annotations

import os
from pathlib import Path

from canon.parser import FIELD, LIST_ITEM
from canon.store import HELD_BACK_DIR, REQUIREMENTS_DIR, SEALED_DIR
from shared.git import GitRepo


def without_held_back(text: str) -> str:
    """A document's text with its `held_back:` fields (inline, or a list of '- item' lines) taken out. The parser
    refuses a field line standing in prose, so every such line is a field."""
    kept: list[str] = []
    in_list = False
    for line in text.splitlines(keepends=True):
        if in_list and LIST_ITEM.match(line.rstrip("\n")):
            continue
        in_list = False
        match = FIELD.match(line.rstrip("\n"))
        if match and match["key"] in ("held_back", "sealed"):
            in_list = not match["value"]
            continue
        kept.append(line)
    return "".join(kept)


def export_visible(canon_git: GitRepo, commit: str, destination: Path) -> None:
    """Canon at commit, without its held-back tests, into destination (new, read-only when done)."""
    canon_git.export(commit, destination, leave_out=(HELD_BACK_DIR, SEALED_DIR))
    strip_documents(destination)


def strip_documents(destination: Path) -> None:
    """Take the `held_back:` fields out of the documents of an export of canon (read-only again afterwards)."""
    documents = destination / REQUIREMENTS_DIR
    if not documents.is_dir():
        return
    os.chmod(documents, 0o755)
    try:
        for path in sorted(documents.rglob("*.md")):
            if path.is_symlink() or not path.is_file():
                continue
            text = path.read_text(encoding="utf-8")
            stripped = without_held_back(text)
            if stripped != text:
                os.chmod(path.parent, 0o755)
                path.unlink()
                path.write_text(stripped, encoding="utf-8")
                os.chmod(path, 0o444)
                os.chmod(path.parent, 0o555)
    finally:
        os.chmod(documents, 0o555)


def visible_commit(canon_git: GitRepo, commit: str, into: GitRepo, scratch: Path) -> str:
    """Canon at commit as build sees it, as a commit of its own (no parent, the same version trailer) in `into`, a
    repository of build's: what a cluster node gets, so that no held-back test travels to a node."""
    import tempfile

    from canon.store import VERSION_TRAILER
    from shared.export import remove_tree

    work = Path(tempfile.mkdtemp(prefix=f"visible-{commit[:12]}-", dir=scratch))  # lanes may ask at once
    folder, index = work / "canon", work / "index"
    export_visible(canon_git, commit, folder)
    try:
        entries = []
        for path in sorted(p for p in folder.rglob("*") if p.is_file() or p.is_symlink()):
            if path.is_symlink():
                mode, data = "120000", os.fsencode(os.readlink(path))
            else:
                mode, data = ("100755" if os.access(path, os.X_OK) else "100644"), path.read_bytes()
            blob = into._git("hash-object", "-w", "--no-filters", "--stdin", input=data)
            entries.append(f"{mode} {blob}\t{path.relative_to(folder).as_posix()}\0")
        into._git("update-index", "-z", "--index-info", input="".join(entries).encode("utf-8", "surrogateescape"),
                  index_file=index)
        tree = into._git("write-tree", index_file=index)
        version = canon_git.trailer(commit, VERSION_TRAILER)
        body = f"canon v{version} as build sees it (held-back tests left out)\n\n{VERSION_TRAILER}: {version}\n"
        return into._git("commit-tree", tree, "-F", "-", input=body.encode(), role="build")
    finally:
        remove_tree(work)
