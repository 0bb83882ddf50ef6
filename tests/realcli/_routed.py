"""What the realcli tests through Banach's gateway share: which CLI speaks which wire, the banach.toml a person writes
for it (the preset, its command, the model and the provider; Banach writes the rest), and the turn's model calls as
journaled. The provider is the SCRIPTED MODEL SERVER, a labelled stand-in."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from shared.journal import Journal
from shared.workspace import Workspace
from tests.helpers.model_server import ModelServer

MODEL = "scripted-model"


@dataclass(frozen=True)
class Routed:
    name: str  # in pins.toml; the preset, with a "-variant" suffix where one CLI runs on two wires
    wire: str  # the provider's wire format
    state: tuple[str, ...] = ()  # HOME folders the CLI may still write through the gateway

    @property
    def preset(self) -> str:
        return self.name.split("-")[0]


def configure(ws: Workspace, cli: Routed, command: str, server: ModelServer) -> None:
    """banach.toml as a person writes it for a CLI through the gateway; the key is in $SCRIPTED_KEY."""
    base = server.url + ("/v1" if cli.wire == "openai" else "")
    text = ws.config_file.read_text().replace('agent = "sim"', 'agent = "real"')
    text += (f'\n[agents.real]\npreset = "{cli.preset}"\ncommand = {json.dumps(command)}\nmodel = "{MODEL}"\n'
             'provider = "scripted"\n'
             f'\n[gateway.providers.scripted]\nwire = "{cli.wire}"\nbase_url = "{base}"\nkey_env = "SCRIPTED_KEY"\n'
             f'\n[gateway.prices.{MODEL}]\ninput = 3.0\noutput = 15.0\n')
    ws.config_file.write_text(text)


def model_calls(ws: Workspace, n: int) -> list[dict[str, Any]]:
    with Journal(ws.journal_path("build"), readonly=True) as journal:
        return [row.data for row in journal.rows("model.call") if row.data["n"] == n and row.data["model_call"]]
