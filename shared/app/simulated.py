"""The SIMULATED agent belongs to the bundled example: `banach up` and `banach run` refuse it anywhere else, before a
turn is spent (build_loop/agent_check.py says the same in `banach doctor`)."""
from __future__ import annotations

from shared.errors import AgentError
from shared.workspace import Workspace


def is_bundled_example(ws: Workspace) -> bool:
    return (ws.canon / "requirements" / "textkit.md").is_file() and (ws.code / "textkit").is_dir()


def refuse_simulated(ws: Workspace, agent_command: str = "") -> None:
    """The SIMULATED agent only knows the bundled example's reference changes, so on any other code every turn would
    stall until the budget runs out: say so before a turn is spent, and what to set."""
    if agent_command or is_bundled_example(ws):
        return
    agents = ws.config.agents
    simulated = [rung for rung in dict.fromkeys(ws.config.build.rungs) if rung in agents and agents[rung].preset == "sim"]
    if simulated:
        key = "build.ladder" if ws.config.build.ladder else "build.agent"
        raise AgentError(
            f"{ws.relative(ws.config_file)}: {key} names {simulated[0]!r}, the SIMULATED agent (a scripted stand-in "
            "for an LLM), and this workspace is not the bundled example: it only knows the example's reference "
            "changes, so every turn here would stall. Set build.agent to a real preset through the gateway (\"claude\" "
            "as banach init writes it; docs/agents.md has one for each CLI) or to a program of your own (preset = "
            "\"command\"; docs/agents.md, 'Your own program'), or give banach run --agent-command CMD")
