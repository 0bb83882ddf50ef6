"""Drafts taken from the code's current commit: the project's own test set-up, frozen into canon by a person.

    spec-loop add --from-code tests/conftest.py     the code's file, at the same path in canon
    spec-loop add --from-code pyproject.toml        its pytest options, as canon's pytest.ini (canon/pytest_config.py)
    spec-loop add --plugin pytest_mock              `-p pytest_mock` in canon's pytest.ini

Read from the commit's git objects (what the dry run measures), never from the work tree an agent may be writing.
Once in canon the agent cannot change them; a change to them is a change to canon."""
from __future__ import annotations

from collections.abc import Sequence

from canon.pytest_config import INI, PROJECT_FILES, PytestConfigError, from_project, with_plugin
from canon.store import CanonStore
from shared.errors import BanachError
from shared.git import is_repo
from shared.workspace import Workspace
from spec_loop.draft import Draft, target_for


class FromCodeError(BanachError):
    """A file asked for from the code that the code's commit does not have, or that canon cannot hold."""


def code_drafts(ws: Workspace, paths: Sequence[str], plugins: Sequence[str], drafts: Sequence[Draft],
                store: CanonStore) -> list[Draft]:
    """drafts, with the code's files and canon's pytest.ini (plugins added) among them."""
    result = list(drafts)
    if paths:
        if not (is_repo(ws.code, ws.code_git) or is_repo(ws.code)):
            raise FromCodeError(f"--from-code: the workspace {ws.root} has no code repository to read from")
        code = ws.code_repo()
        head = code.head()
        if head is None:
            raise FromCodeError("--from-code: the code has no commit yet; commit it first")
        for path in paths:
            path = path.strip("/")
            text = code.show(head, path)
            if text is None:
                raise FromCodeError(f"--from-code {path}: the code at {head[:12]} has no such file; give its path from "
                                    "the code's root, such as tests/conftest.py")
            if path.rsplit("/", 1)[-1] in PROJECT_FILES:
                try:
                    result.append(Draft(f"{path} (the code's, at {head[:12]})", INI, from_project(path, text, head)
                                        .encode()))
                except PytestConfigError as exc:
                    raise FromCodeError(f"--from-code {exc}") from exc
                continue
            target = "conftest.py" if path == "conftest.py" else target_for(path) if path.startswith("tests/") else None
            if target is None:
                raise FromCodeError(f"--from-code {path}: canon holds the project's test set-up (conftest.py files, "
                                    "files under tests/, its pytest options), not this file")
            result.append(Draft(path, target, text.encode()))
    if plugins:
        ini = next((d for d in result if d.target == INI), None)
        text = ini.content.decode("utf-8", errors="replace") if ini else (
            store.read("HEAD", INI) if store.head() is not None else None)
        for plugin in plugins:
            try:
                text = with_plugin(text, plugin)
            except PytestConfigError as exc:
                raise FromCodeError(f"--plugin {plugin}: canon's pytest.ini cannot be read ({exc})") from exc
        result = [d for d in result if d.target != INI] + [
            Draft(ini.name if ini else f"{INI} (canon's, with {', '.join(plugins)})", INI, (text or "").encode())]
    return result
