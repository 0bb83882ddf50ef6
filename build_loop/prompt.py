"""The prompt an agent sees: a jinja2 template, overridable per workspace at templates/prompt.md.j2."""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jinja2

from shared.workspace import Workspace

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
    try:
        return environment(ws).get_template(TEMPLATE_NAME).render(**values)
    except jinja2.TemplateError as exc:
        from shared.errors import ConfigError

        where = f"{getattr(exc, 'filename', None) or TEMPLATE_NAME}:{getattr(exc, 'lineno', '?')}"
        raise ConfigError(f"{where}: the prompt template does not render: {exc}") from None
