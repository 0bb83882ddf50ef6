"""The documents that promise things: published schemas match the models; every config key is described."""
from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ValidationError

from plan_loop.agent_oracle import PLAN_AGENT_SCHEMA
from shared.config import Config
from spec_loop.reconcile_agent import RECONCILE_SCHEMA

ROOT = Path(__file__).resolve().parent.parent


def test_published_agent_schemas_match_the_models() -> None:
    assert json.loads((ROOT / "docs" / "plan-agent.schema.json").read_text()) == PLAN_AGENT_SCHEMA
    assert json.loads((ROOT / "docs" / "reconcile-agent.schema.json").read_text()) == RECONCILE_SCHEMA


def test_every_config_key_has_a_description() -> None:
    def walk(model: type[BaseModel], prefix: str) -> list[str]:
        missing = []
        for name, field in model.model_fields.items():
            annotation = field.annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                missing += walk(annotation, f"{prefix}{name}.")
            elif not field.description and prefix:
                missing.append(prefix + name)
        return missing

    assert walk(Config, "") == []


def test_every_banach_toml_shown_in_the_docs_is_valid() -> None:
    import re
    import tomllib

    blocks = [(doc, block) for doc in ("README.md", "docs/agents.md")
              for block in re.findall(r"```toml\n(.*?)```", (ROOT / doc).read_text(), re.S)]
    assert len(blocks) >= 6
    for doc, block in blocks:
        try:
            Config.model_validate(tomllib.loads(block))
        except ValidationError as exc:
            raise AssertionError(f"{doc} shows a banach.toml that does not load:\n{exc}\n{block}") from None
