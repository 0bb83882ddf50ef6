"""spec-loop edit through a real $EDITOR program, including the re-open-on-error path."""
from __future__ import annotations

import stat
import sys
from pathlib import Path

from canon.store import CanonStore
from tests.helpers.workspaces import cli, example

EDITOR = """#!{python}
import sys
from pathlib import Path

counter = Path({counter!r})
count = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(count + 1))
path = Path(sys.argv[1])
text = path.read_text()
if count == 0 and {bad_first}:
    path.write_text(text + "\\n## TK-1: a duplicate\\n\\nbad\\n")
elif "## TK-1: a duplicate" in text:
    path.write_text(text.replace("\\n## TK-1: a duplicate\\n\\nbad\\n",
                                 "\\n## TK-7: reverse\\npaths: textkit/reverse.py\\n\\nReverses.\\n"))
else:
    path.write_text(text + "\\n## TK-7: reverse\\npaths: textkit/reverse.py\\n\\nReverses.\\n")
"""


def make_editor(tmp_path: Path, *, bad_first: bool) -> tuple[str, Path]:
    counter = tmp_path / "editor-runs"
    script = tmp_path / "editor.py"
    script.write_text(EDITOR.format(python=sys.executable, counter=str(counter), bad_first=bad_first))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script), counter


def test_edit_commits_a_valid_change_and_shows_the_diff(tmp_path: Path) -> None:
    ws = example(tmp_path)
    editor, counter = make_editor(tmp_path, bad_first=False)
    result = cli("spec-loop", "edit", "textkit.md", "--workspace", str(ws.root), env={"EDITOR": editor})
    assert result.returncode == 0, result.stderr
    assert "+## TK-7: reverse" in result.stdout and "accepted requirements/textkit.md as canon v2 (added TK-7)" in result.stdout
    assert CanonStore(ws.canon).version() == 2 and counter.read_text() == "1"


def test_an_invalid_save_reopens_the_editor_with_the_text_kept(tmp_path: Path) -> None:
    ws = example(tmp_path)
    editor, counter = make_editor(tmp_path, bad_first=True)
    result = cli("spec-loop", "edit", "textkit.md", "--workspace", str(ws.root), env={"EDITOR": editor}, input="y\n")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "duplicate id" in result.stdout and "Re-open the editor" in result.stdout
    assert counter.read_text() == "2"
    assert "TK-7" in CanonStore(ws.canon).load().requirements


def test_declining_to_reopen_keeps_the_text_and_canon_unchanged(tmp_path: Path) -> None:
    ws = example(tmp_path)
    editor, _ = make_editor(tmp_path, bad_first=True)
    result = cli("spec-loop", "edit", "textkit.md", "--workspace", str(ws.root), env={"EDITOR": editor}, input="n\n")
    assert result.returncode == 1
    assert CanonStore(ws.canon).version() == 1
    kept = ws.role_dir("spec") / "edit" / "requirements" / "textkit.md"
    assert "a duplicate" in kept.read_text() and "Your text is kept in state/spec/edit/requirements/textkit.md" in result.stdout


def test_a_new_document_saved_as_the_template_adds_nothing(tmp_path: Path) -> None:
    ws = example(tmp_path)
    result = cli("spec-loop", "edit", "requirements/scratch.md", "--workspace", str(ws.root), env={"EDITOR": "true"})
    assert result.returncode == 0, result.stderr
    assert "the template for requirements/scratch.md was saved as it came; nothing was added" in result.stdout
    assert CanonStore(ws.canon).version() == 1


def test_a_document_that_keeps_the_templates_placeholder_is_refused(tmp_path: Path) -> None:
    """Appending a requirement to the new document's template keeps its placeholder requirement: not canon."""
    ws = example(tmp_path)
    editor, counter = make_editor(tmp_path, bad_first=False)  # appends TK-7 to the template as it came
    result = cli("spec-loop", "edit", "requirements/scratch.md", "--workspace", str(ws.root), env={"EDITOR": editor},
                 input="n\n")
    assert "the template's placeholder is still there" in result.stdout, result.stdout
    assert CanonStore(ws.canon).version() == 1 and counter.read_text() == "1"


def test_text_from_takes_the_same_checks_without_an_editor(tmp_path: Path) -> None:
    """What the dashboard's editor runs: the placeholder, a pasted second header and a good text, in that order."""
    ws = example(tmp_path)

    def save(text: str) -> tuple[int, str]:
        ran = cli("spec-loop", "edit", "requirements/scratch.md", "--text-from", "-", "--workspace", str(ws.root),
                  input=text)
        return ran.returncode, ran.stdout + ran.stderr

    template = "---\narea: scratch\ntitle: scratch\n---\n\n## SCRA-1: one sentence that can be checked\n\nx\n"
    assert save(template) == (1, save(template)[1]) and "placeholder is still there" in save(template)[1]
    pasted = ("---\narea: scratch\n---\n\n## SC-1: reverse\npaths: textkit/reverse.py\n\nReverses.\n\n"
              "---\narea: other\n---\n\n## SC-2: more\n\nMore.\n")
    code, said = save(pasted)
    assert code == 1 and "requirements/scratch.md:10: a second header" in said, said
    assert CanonStore(ws.canon).version() == 1
    code, said = save("---\narea: scratch\n---\n\n## SC-1: reverse\npaths: textkit/reverse.py\n\nReverses.\n")
    assert code == 0 and "as canon v2" in said, said
    assert save("---\narea: scratch\n---\n\n## SC-1: reverse\npaths: textkit/reverse.py\n\nReverses.\n")[1] \
        .startswith("no change to requirements/scratch.md")
