"""Removing requirements is a change like any other (issue 29, point 3): a header with `removes:` alone, or in
another document's header; a document left empty goes, and so do the conformance tests only it named."""
from __future__ import annotations

from pathlib import Path

from canon.store import CanonStore
from tests.helpers.workspaces import cli, example


def add(ws_root: Path, name: str, text: str) -> str:
    done = cli("spec-loop", "add", "--name", name, "-w", str(ws_root), "--", text)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_a_header_with_removes_alone_removes_the_requirement_and_its_tests(tmp_path: Path) -> None:
    ws = example(tmp_path)
    said = add(ws.root, "drop-cli.md", "---\nremoves: TK-5\n---\n")
    store = CanonStore(ws.canon)
    canon = store.load()
    assert "TK-5" not in canon.requirements and store.version() == 2
    assert "as canon v2 (removed TK-5; conformance tests tests/test_cli.py)" in said, said
    assert "tests/test_cli.py" not in store.files()  # only TK-5 named it
    assert "requirements/drop-cli.md" not in store.files()  # a removal alone is no document
    assert "TK-1" in canon.requirements and "tests/test_slug.py" in store.files()


def test_removes_in_another_documents_header_takes_it_out_there(tmp_path: Path) -> None:
    ws = example(tmp_path)
    add(ws.root, "extra.md", "---\narea: extra\nremoves: TK-5\n---\n\n## EX-1: a new one\nchecks:\n  - true\n\nHolds.\n")
    canon = CanonStore(ws.canon).load()
    assert "TK-5" not in canon.requirements and "EX-1" in canon.requirements
    assert "## TK-5" not in (ws.canon / "requirements" / "textkit.md").read_text()
    assert "## TK-4" in (ws.canon / "requirements" / "textkit.md").read_text()


def test_removing_an_id_canon_does_not_have_is_refused_with_the_id(tmp_path: Path) -> None:
    ws = example(tmp_path)
    done = cli("spec-loop", "add", "--name", "drop.md", "-w", str(ws.root), "--", "---\nremoves: TK-55\n---\n")
    assert done.returncode == 1 and "removes TK-55, which canon does not have" in done.stdout, done.stdout
    assert CanonStore(ws.canon).version() == 1


def test_a_document_whose_every_requirement_is_removed_is_deleted(tmp_path: Path) -> None:
    ws = example(tmp_path)
    add(ws.root, "extra.md", "---\narea: extra\n---\n\n## EX-1: a new one\nchecks:\n  - true\n\nHolds.\n")
    add(ws.root, "drop.md", "---\nremoves: EX-1\n---\n")
    store = CanonStore(ws.canon)
    assert "requirements/extra.md" not in store.files() and "EX-1" not in store.load().requirements


def test_a_hand_edit_of_canon_is_named_and_set_aside_not_lost(tmp_path: Path) -> None:
    """Issue 29, point 4: status names it; the next change sets the edited text aside and says where."""
    ws = example(tmp_path)
    document = ws.canon / "requirements" / "textkit.md"
    edited = document.read_text().replace("## TK-6:", "## TK-9: written by hand\n\nBy hand.\n\n## TK-6:")
    document.write_text(edited)
    shown = cli("banach", "status", "-w", str(ws.root)).stdout
    assert "HAND EDITS in requirements/textkit.md" in shown, shown
    said = add(ws.root, "extra.md", "---\narea: extra\n---\n\n## EX-1: a new one\nchecks:\n  - true\n\nHolds.\n")
    assert "canon: requirements/textkit.md was changed outside spec-loop" in said, said
    kept = next((ws.state / "spec" / "set-aside").glob("*/requirements/textkit.md"))
    assert kept.read_text() == edited and f"spec-loop add {ws.relative(kept)}" in said
    assert "## TK-9" not in document.read_text() and "HAND EDITS" not in cli("banach", "status", "-w", str(ws.root)).stdout
