"""The prompt an agent sees: a jinja2 template, overridable per workspace at templates/prompt.md.j2."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from shared.workspace import Workspace

TEMPLATE_NAME = "prompt.md.j2"


def environment(ws: Workspace) -> jinja2.Environment:
    loaders: list[jinja2.BaseLoader] = []
    override = ws.root / "templates"
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
