"""The gateway's relay as a turn gets it: in a view, started by root and run as uid 65534, with Banach's interpreter in
a folder only root may enter (as pyenv installs it under /root). The relay is forked after root is given up and
before the view's root is in place, so anything it imported late failed, or not, depending on which came first (issue
38: 0 of 7 real CLIs reached the model). The program inside is bash, so that nothing but the relay needs Python."""
from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.isolation.trial import answering_gateway
from shared.isolation.view import SYSTEM_FOLDERS
from tests.helpers.isolation import view_unavailable
from tests.helpers.private_python import private_python

pytestmark = [pytest.mark.root,
              pytest.mark.skipif(os.geteuid() != 0, reason="a turn gives up root only when started by root"),
              pytest.mark.skipif(bool(view_unavailable()), reason=f"no view here: {view_unavailable()}"),
              pytest.mark.skipif(shutil.which("bash") is None, reason="the program inside is bash (its /dev/tcp)")]

RUNS = 100
ASK = "exec 3<>/dev/tcp/127.0.0.1/8080 && printf ping >&3 && head -c 4 <&3"


@pytest.fixture
def gateway() -> Iterator[Path]:
    """A unix socket that answers 'pong' to each 'ping', as doctor's trial uses."""
    with answering_gateway() as path:
        yield path


def test_the_relay_answers_every_time_as_nobody_with_an_interpreter_in_a_private_folder(tmp_path: Path,
                                                                                       gateway: Path) -> None:
    python = private_python(tmp_path)
    bare = subprocess.run((str(python), "-I", "-c", "import sys; print('threading' in sys.modules)"),
                          capture_output=True, text=True, timeout=60)
    assert bare.stdout.strip() == "False", "this interpreter imports threading at start-up: the test would prove nothing"
    work = tmp_path / "work"
    work.mkdir()
    argv = (str(python), "-I", "-m", "shared.isolation.sandbox", "--view",
            *(flag for folder in SYSTEM_FOLDERS for flag in ("--read", folder)), "--write", str(work),
            "--gateway-relay", f"{gateway}:8080", "--", "bash", "-c", ASK)
    failures = []
    for _ in range(RUNS):
        done = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=60)
        if done.stdout != "pong":
            failures.append((done.returncode, done.stderr.strip()[-300:]))
    assert not failures, f"{len(failures)} of {RUNS} got no answer; the first: {failures[0]}"


def test_doctor_tries_a_turns_view_with_its_relay_on_that_interpreter(tmp_path: Path) -> None:
    """`banach doctor` tries what a turn runs (a view, its relay, uid 65534, a gateway that answers), with the same
    interpreter: its check runs on the private one here, as a doctor started from a pyenv install would."""
    python = private_python(tmp_path)
    check = ("from shared.app.doctor import turn_network\n"
             "found = turn_network(in_view=True, configured=True)\nprint(found.ok, found.what)")
    done = subprocess.run((str(python), "-I", "-c", check), capture_output=True, text=True, timeout=120)
    assert done.stdout.startswith("True gateway-only network: works in a turn's view as uid 65534"), done
