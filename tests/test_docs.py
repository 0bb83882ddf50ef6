"""The documents that promise things: published schemas match the models; every config key is described."""
from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

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
