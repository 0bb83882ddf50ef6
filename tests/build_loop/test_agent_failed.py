"""An agent that cannot run is not an attempt on the item: it is its own outcome, shown with its exit code and
stderr, and after a few in a row build pauses with what to fix; banach doctor finds it before a turn does."""
from __future__ import annotations

import signal
import subprocess
import sys

from shared.journal import Journal
from shared.monitor.series import read_history
from shared.workspace import Workspace
from tests.helpers.workspaces import AGENTS, cli, custom, example

EXITS_55 = f"{sys.executable} -c \"import sys; print('folder is not trusted', file=sys.stderr); sys.exit(55)\""
CANON = ("---\narea: demo\ntitle: Demo\n---\n\n## DEMO-1: a file exists\npaths: hello.txt\nchecks:\n  - test -f hello.txt\n\n"
         "hello.txt exists.\n")


def once(ws: Workspace, command: str) -> str:
    result = cli("build-loop", "once", "--workspace", str(ws.root), "--agent-command", command)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_missing_agent_is_agent_failed_with_its_error_not_a_stall(measured: Workspace) -> None:
    once(measured, "/nonexistent/agent-cli --flag")
    with Journal(measured.journal_path("build"), readonly=True) as journal:
        data = journal.last("iteration.ended").data  # type: ignore[union-attr]
        assert journal.last("item.blocked") is None
    assert data["decision"] == "agent_failed" and data["exit_code"] == 127
    assert "/nonexistent/agent-cli" in data["stderr_tail"]
    shown = cli("banach", "status", "--workspace", str(measured.root)).stdout
    assert "AGENT FAILED iteration 1" in shown and "exited with code 127" in shown
    assert "agent_failed" in cli("build-loop", "report", "1", "--workspace", str(measured.root)).stdout
    assert "agent_failed" in {kind for _, kind in read_history(measured).events}
    plot = measured.root / "plot.png"
    assert cli("banach", "plot", "-o", str(plot), "--workspace", str(measured.root)).returncode == 0
    assert plot.read_bytes()[:4] == b"\x89PNG"


def test_repeated_failures_pause_build_with_what_to_fix(measured: Workspace) -> None:
    """Failures on one item count against it (blocked after max_attempts); once they span two items the agent is
    what is broken, and build pauses with what to fix, until `build-loop resume` or a new run."""
    said = [once(measured, EXITS_55) for _ in range(5)]
    assert all("agent_failed" in line for line in said), said  # 4 on the first item (now blocked), 1 on the next
    with Journal(measured.journal_path("build"), readonly=True) as journal:
        ended = [row.data for row in journal.rows("iteration.ended")]
        assert journal.last("item.blocked").data["item"] == ended[0]["item"]  # type: ignore[union-attr]
    assert len({data["item"] for data in ended}) == 2
    paused = once(measured, EXITS_55)
    assert "PAUSED: the agent failed to run on the last 3 turns" in paused
    assert "exit code 55" in paused and "folder is not trusted" in paused and "build-loop resume" in paused
    with Journal(measured.journal_path("build"), readonly=True) as journal:
        assert len(journal.rows("iteration.ended")) == 5  # no sixth turn was spent
    shown = cli("banach", "status", "--workspace", str(measured.root)).stdout
    assert "PAUSED      PAUSED: the agent failed to run on the last 3 turns" in shown, shown
    assert once(measured, EXITS_55).count("PAUSED") == 1  # said again, journaled once
    with Journal(measured.journal_path("build"), readonly=True) as journal:
        assert len(journal.rows("paused")) == 1
    # build-loop resume: the same agent gets a fresh try, and status no longer says PAUSED
    assert cli("build-loop", "resume", "-w", str(measured.root)).returncode == 0
    assert "PAUSED" not in cli("banach", "status", "--workspace", str(measured.root)).stdout
    assert "agent_failed" in once(measured, EXITS_55)
    # a restart (a new run, as `banach ctl restart build` makes) does too
    run = subprocess.Popen([sys.executable, "-m", "build_loop", "run", "-w", str(measured.root), "--agent-command",
                            EXITS_55], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert run.stdout is not None
    first = next(line for line in run.stdout if "iteration" in line or "PAUSED" in line)
    assert "agent_failed" in first, first  # a turn, not the old pause
    run.send_signal(signal.SIGTERM)
    run.communicate(timeout=60)
    # a different agent set-up gets a fresh try
    assert "keep" in once(measured, f"{sys.executable} {AGENTS / 'good.py'}")


def test_an_agent_that_fails_on_one_item_only_blocks_that_item_not_build(measured: Workspace) -> None:
    """Issue 29, point 1: the agent exits non-zero on TK-1 (it cannot do that one) and does the others."""
    good = AGENTS / "good.py"
    command = (f"{sys.executable} -c \"import os, subprocess, sys; sys.exit(3 if os.environ['BANACH_ITEM']"
               f".startswith('TK-1.') else subprocess.run([sys.executable, '{good}']).returncode)\"")
    said = [once(measured, command) for _ in range(7)]
    assert not any("PAUSED" in line for line in said), said
    with Journal(measured.journal_path("build"), readonly=True) as journal:
        blocked = journal.last("item.blocked")
        kept = [row.data["item"] for row in journal.rows("iteration.ended") if row.data["decision"] == "keep"]
    assert blocked is not None and blocked.data["item"].startswith("TK-1.")
    assert kept and not any(item.startswith("TK-1.") for item in kept)


def test_doctor_runs_the_agent_and_refuses_sim_on_a_real_repository(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ws = custom(tmp_path, CANON, "good.py")
    text = ws.config_file.read_text().replace('agent = "scripted"', 'agent = "sim"') + '\n[agents.sim]\npreset = "sim"\n'
    ws.config_file.write_text(text)
    shown = cli("banach", "doctor", "--workspace", str(ws.root))
    assert shown.returncode == 1
    assert "agent sim: the SIMULATED agent, on a workspace that is not the bundled example" in shown.stdout
    ws.config_file.write_text(text.replace('agent = "sim"', 'agent = "broken"')
                              + '\n[agents.broken]\npreset = "command"\ncommand = "/nonexistent/agent-cli"\n')
    shown = cli("banach", "doctor", "--workspace", str(ws.root))
    assert "agent broken: /nonexistent/agent-cli --version failed (exit code 127)" in shown.stdout
    assert "scripts/install_clis.py" in shown.stdout
    # a script that is not there, behind an interpreter that is: `python --version` alone would pass
    ws.config_file.write_text(text.replace('agent = "sim"', 'agent = "gone"')
                              + f'\n[agents.gone]\npreset = "command"\ncommand = "{sys.executable} agents/gone.py"\n')
    shown = cli("banach", "doctor", "--workspace", str(ws.root))
    assert shown.returncode == 1 and "agent gone: its command names agents/gone.py, which does not exist" in shown.stdout


def test_doctor_passes_a_runnable_agent_and_sim_on_the_example(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ws = example(tmp_path)
    assert "ok    agent sim: the SIMULATED agent (fine for the bundled example)" in cli(
        "banach", "doctor", "--workspace", str(ws.root)).stdout


# An agent whose --version talks to its gateway: it says what came back through the relay.
ASKS_THE_GATEWAY = """
import os, socket, sys, urllib.parse
address = urllib.parse.urlsplit(os.environ["BANACH_MODEL_URL"])
with socket.create_connection((address.hostname, address.port), timeout=10) as gateway:
    gateway.sendall(b"ping")
    print("version 1.0, gateway said", gateway.recv(4).decode())
"""


def test_doctor_runs_an_agent_with_a_provider_behind_its_relay(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The agent's --version runs as its turns do: in its view, behind the relay to a gateway that answers."""
    ws = custom(tmp_path, CANON, "good.py")
    agent = tmp_path / "asks_the_gateway"
    agent.write_text(f"#!{sys.executable}\n{ASKS_THE_GATEWAY}")
    agent.chmod(0o755)
    ws.config_file.write_text(ws.config_file.read_text().replace('agent = "scripted"', 'agent = "talks"')
                              + f'\n[agents.talks]\npreset = "command"\ncommand = "{agent}"\n'
                              'provider = "p"\n\n[gateway]\nnetwork = "gateway-only"\n\n[gateway.providers.p]\n'
                              'wire = "openai"\nbase_url = "http://192.0.2.1/v1"\nauth = "none"\n')
    shown = cli("banach", "doctor", "--workspace", str(ws.root))
    assert "FIX   agent talks: no turn can run it: the gateway-only network is made by the Landlock wrapper" in shown.stdout
    ws.config_file.write_text(ws.config_file.read_text().replace('backend = "none"', 'backend = "landlock"'))
    shown = cli("banach", "doctor", "--workspace", str(ws.root))
    assert "ok    agent talks:" in shown.stdout and "gateway said pong" in shown.stdout, shown.stdout
