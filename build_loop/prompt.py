"""The prompt an agent sees: a jinja2 template, overridable per workspace at templates/prompt.md.j2."""
from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2

from shared.isolation.kinds import Confine
from shared.measurement.excerpt import excerpt
from shared.process import Limits, Request, run
from shared.workspace import Workspace

if TYPE_CHECKING:
    from build_loop.turn import Turn

TEMPLATE_NAME = "prompt.md.j2"


@functools.lru_cache(maxsize=8)
def _environment(root: Path) -> jinja2.Environment:
    """One environment per workspace, so each template is compiled once per process, not per iteration."""
    return _build(root)


def environment(ws: Workspace) -> jinja2.Environment:
    return _environment(ws.root)


def _build(root: Path) -> jinja2.Environment:
    loaders: list[jinja2.BaseLoader] = []
    override = root / "templates"
    if override.is_dir():
        loaders.append(jinja2.FileSystemLoader(str(override)))
    loaders.append(jinja2.FileSystemLoader(str(Path(__file__).parent / "templates")))
    return jinja2.Environment(loader=jinja2.ChoiceLoader(loaders), undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)


def render(ws: Workspace, **values: Any) -> str:
    """The prompt. Of canon_slice (the item's requirements and what they depend on), the template gets the item's own
    as task_requirements and the rest as done_dependencies: build picks an item only when no open item holds one of
    its dependencies, so those are done, and the prompt shows them as context, never as a task of their own."""
    item, canon_slice = values.get("item"), values.get("canon_slice")
    if item is not None and canon_slice is not None:
        values.setdefault("task_requirements", [req for req in canon_slice if req.id in item.requirements])
        values.setdefault("done_dependencies", [req for req in canon_slice if req.id not in item.requirements])
    try:
        return environment(ws).get_template(TEMPLATE_NAME).render(**values)
    except jinja2.TemplateError as exc:
        from shared.errors import ConfigError

        where = f"{getattr(exc, 'filename', None) or TEMPLATE_NAME}:{getattr(exc, 'lineno', '?')}"
        raise ConfigError(f"{where}: the prompt template does not render: {exc}") from None


def turn_prompt(ws: Workspace, turn: Turn, context: list[dict[str, str]]) -> str:
    """One turn's prompt: the item, its slice of canon, the sensors' reading at the checkpoint, and its failure history
    (in a later round, more of it: build.rounds)."""
    history = turn.history
    return render(ws, item=turn.item, canon_version=turn.canon.version, iteration=turn.n,
                  canon_slice=turn.canon.slice(turn.item.requirements), round=history.round,
                  rounds=ws.config.build.rounds, negative_knowledge=history.negative[-(5 if history.round == 1 else 12):],
                  feedback=turn.before.excerpts, context=context)


def context_outputs(ws: Workspace, scratch: Path, limits: Limits, *, reap_orphans: bool,
                    tree: Path | None = None) -> list[dict[str, str]]:
    """build.context_commands' output for the prompt. They read the work tree the agent wrote (the code's, or the
    turn's lane): they run sandboxed like the agent, read-only on it."""
    out = []
    env = {key: os.environ[key] for key in ws.config.build.env_allow if key in os.environ}
    env.update({"TMPDIR": str(scratch), "PYTHONDONTWRITEBYTECODE": "1"})
    confine = Confine(ws, "context", (tree or ws.code,))
    for command in ws.config.build.context_commands:
        argv = confine(("/bin/sh", "-c", command), python=sys.executable, writable=[scratch], env=env)
        result = run(Request(argv, cwd=tree or ws.code, env=env, timeout=60, limits=limits), reap_orphans=reap_orphans)
        out.append({"command": command, "output": excerpt(result.stdout + result.stderr, lines=80, chars=8000)})
    return out
