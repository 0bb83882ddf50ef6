"""`banach init`: a new workspace, empty or a copy of the bundled example before any loop has run."""
from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

from canon.store import CanonStore
from shared.config import CONFIG_NAME
from shared.errors import WorkspaceError
from shared.git import GitRepo
from shared.journal import load_or_create_key
from shared.workspace import ROLES, Workspace

TEST_FOLDERS = ("tests", "test")  # where a project's own tests live, for the sensor banach.toml starts with


def starting_config(code: Path | None) -> str:
    """banach.toml for a new workspace: a real agent through the gateway, a program of your own, and the project's own
    tests as a sensor when the code has a test folder; every key commented."""
    import jinja2

    from shared.app.project_kind import detect

    tests = next((name for name in TEST_FOLDERS if code is not None and (code / name).is_dir()), "")
    loader = jinja2.FileSystemLoader(str(Path(__file__).parent / "templates"))
    template = jinja2.Environment(loader=loader, keep_trailing_newline=True, autoescape=False).get_template(
        "banach.toml.j2")
    return template.render(tests=tests, kind=detect(code))


def example_root() -> Path:
    return Path(str(resources.files("shared.app.example") / "workspace"))


def _copy_tree(source: Path, destination: Path) -> None:
    for path in sorted(source.rglob("*")):
        if "__pycache__" in path.parts:
            continue
        rel = path.relative_to(source)
        name = rel.name.removeprefix("dot-")
        target = destination / rel.parent / ("." + name if rel.name.startswith("dot-") else name)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)


def init_workspace(root: Path, *, example: bool, code_source: str = "") -> Workspace:
    """code_source: a git repository (path or URL) to clone as the code build-loop changes; empty: a new repo."""
    if example and code_source:
        raise WorkspaceError("--example brings its own code; leave out --code, or leave out --example")
    root = root.resolve()
    if (root / CONFIG_NAME).exists():
        raise WorkspaceError(f"{root} is already a Banach workspace (it has {CONFIG_NAME}); pick an empty folder")
    if root.exists() and any(root.iterdir()):
        raise WorkspaceError(f"{root} is not empty; banach init makes a workspace in a new or empty folder")
    created = not root.exists()
    root.mkdir(parents=True, exist_ok=True)
    staging = root / ".init-partial"
    try:
        if example:
            _copy_tree(example_root(), staging)
        else:
            staging.mkdir()
            if code_source:
                _clone_code(code_source, staging / "code")
            (staging / CONFIG_NAME).write_text(starting_config(staging / "code" if code_source else None))
            if code_source:
                from shared.app.project_kind import detect, write_drafts

                write_drafts(detect(staging / "code"), staging / "drafts")
        for item in staging.iterdir():
            item.rename(root / item.name)
        staging.rmdir()
        ws = Workspace.open(root)
        _init_stores(ws, example=example)
    except BaseException:
        for item in root.iterdir():
            shutil.rmtree(item, ignore_errors=True) if item.is_dir() else item.unlink()
        if created:
            root.rmdir()
        raise
    return ws


def next_steps(ws: Workspace, *, example: bool) -> str:
    """What a person does next, with the workspace's own path in every command."""
    w = f"-w {ws.root}"
    if example:
        return f"next: banach up {w}   (then: banach status {w}; banach plot {w}; banach down {w})"
    drafts = sorted(path.name for path in (ws.root / "drafts").glob("*") if path.name != "main.md")
    first = []
    if drafts:
        from shared.app.project_kind import detect

        first = [f"  the code is {detect(ws.code).label}: a first requirement and its conformance test wait in "
                 f"{ws.root / 'drafts'}; finish them, then: cd {ws.root / 'drafts'} && spec-loop add main.md "
                 f"{drafts[0]} {w}"]
    return "\n".join([
        "next:", *first,
        f"  spec-loop edit requirements/main.md {w}   write requirements ($EDITOR; validated before they land)",
        f"  spec-loop add REQ.md TEST.py {w}   or a requirement with the conformance tests it names, in one version",
        f"  $EDITOR {ws.config_file}   pick the agent (build.agent: claude through the gateway, or a program of "
        "your own), sensors and budgets",
        f"  build-loop key set anthropic {w} < KEYFILE   the provider's key, for claude (kept where no agent reads it)",
        f"  banach doctor {w}   check the machine and the agent",
        f"  banach up {w}   start spec, plan and build; banach status {w} shows where they stand",
        f"  banach run --until-certified {w}   or run them in the foreground until certified (for CI)",
        f"  banach deliver {w}   then put the governed commits on a branch of your repository",
    ])


def _clone_code(source: str, destination: Path) -> None:
    local = Path(source).expanduser()
    if local.exists():
        source = str(local.resolve())  # relative to where the person stands, not to the workspace
    if local.exists() and not (local / ".git").exists() and not (local / "HEAD").exists():
        raise WorkspaceError(f"{local} is not a git repository. Make it one (git init && git add -A && git commit -m "
                             "start, in that folder) or point --code at a clone; nothing was created")
    repo = GitRepo.clone(source, destination)
    if repo.head() is None:
        raise WorkspaceError(f"{source} has no commits yet; commit once there, then run banach init again")
    if repo.changes():
        raise WorkspaceError(f"the clone of {source} has a dirty work tree; check its .gitattributes and filters")


def _init_stores(ws: Workspace, *, example: bool) -> None:
    for folder in (ws.inbox, ws.inbox / "accepted", ws.inbox / "rejected", ws.plan_dir, ws.keys_dir):
        folder.mkdir(parents=True, exist_ok=True)
    for role in ROLES:
        ws.role_dir(role).mkdir(parents=True, exist_ok=True)
        load_or_create_key(ws.keys_dir / f"{role}.key")
    ws.keys_dir.chmod(0o700)
    canon_files: dict[str, str | None] = {}
    if ws.canon.exists():
        canon_files = {str(p.relative_to(ws.canon)): p.read_text() for p in sorted(ws.canon.rglob("*")) if p.is_file()}
        shutil.rmtree(ws.canon)
    store = CanonStore.create(ws.canon)
    if canon_files:
        # the first version goes through the same commit path spec-loop uses
        from canon.parser import parse_document

        ids = sorted(r.id for rel, text in canon_files.items() if rel.endswith(".md")
                     for r in parse_document(text or "", rel).requirements)
        store.commit(canon_files, "the bundled example", {"added": ids})
    if (ws.code / ".git").exists() or ws.code_git.exists():
        code = GitRepo.adopt(ws.code, ws.code_git)
    else:
        code = GitRepo.init(ws.code, git_dir=ws.code_git)
    if code.head() is None:
        if not any(p for p in ws.code.iterdir() if p.name != ".git"):
            (ws.code / "README.md").write_text("# code\n\nThe code repository build-loop writes.\n")
        code.commit_all("initial commit", {}, role="init")
