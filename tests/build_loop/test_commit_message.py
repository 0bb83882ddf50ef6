"""What a kept commit says (issue 29, point 7): a keep that leaves the item open says "partial"."""
from __future__ import annotations

import sys

from shared.workspace import Workspace
from tests.helpers.workspaces import cli, git

HALF = ("import pathlib; pathlib.Path('textkit/slug.py').write_text("
        "'def slugify(text):\\n    return \\'-\\'.join(text.lower().split())\\n')")


def test_a_keep_that_leaves_the_item_open_says_partial(measured: Workspace) -> None:
    done = cli("build-loop", "once", "--workspace", str(measured.root), "--agent-command", f'{sys.executable} -c "{HALF}"')
    assert done.returncode == 0 and ": keep:" in done.stdout, done.stdout + done.stderr
    subject = git(measured.code, "log", "-1", "--format=%s")
    assert subject.startswith("implement TK-1.") and "(partial: 4 checks still failing)" in subject, subject
