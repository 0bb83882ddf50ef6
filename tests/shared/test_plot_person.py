"""Issue 43: the plot marks what a person did and which item each mark belongs to, and shows the turns between plan
passes, so that burning turns looks different from idling. A real run: one requirement build cannot meet, a stall
that blocks it, a person's unblock, another stall, then two plan passes with nothing between them."""
from __future__ import annotations

from pathlib import Path

from shared.monitor.plot import figure
from shared.monitor.series import read_history
from tests.helpers.workspaces import cli, custom

CANON = "## ST-1: file 1 exists\npriority: 1\npaths: file1.txt\nchecks:\n  - test -f file1.txt\n\nfile1.txt exists.\n"


def test_a_persons_unblock_the_items_and_the_turns_between_passes_are_drawn(tmp_path: Path) -> None:
    ws = custom(tmp_path, CANON, "no_change.py")
    ws.config_file.write_text(ws.config_file.read_text().replace('agent = "scripted"',
                                                                 'agent = "scripted"\nmax_attempts = 1\nrounds = 1'))
    for program, *args in (("plan-loop", "once"), ("build-loop", "once"), ("build-loop", "unblock", "ST-1"),
                           ("build-loop", "once"), ("plan-loop", "once"), ("plan-loop", "once")):
        ran = cli(program, *args, "-w", str(ws.root))
        assert ran.returncode == 0, (program, args, ran.stdout, ran.stderr)
    history = read_history(ws)
    assert [text for _, text in history.person] == ["unblock ST-1"]
    assert {requirement for _, requirement in history.items} == {"ST-1"}

    fig, _ = figure(history)
    ax = next(a for a in fig.axes if a.get_gid() == "residual-axes")
    (person,) = [line for line in ax.get_lines() if line.get_gid() == "event:person"]
    assert len(person.get_xdata()) == 1  # type: ignore[arg-type]
    labels = {text.get_gid(): [] for text in ax.texts}
    for text in ax.texts:
        labels[text.get_gid()].append(text.get_text())
    assert labels["person-label"] == ["unblock ST-1"]
    assert "ST-1" in labels["item-label"]  # the stall before the unblock, and the one after it, are ST-1's
    strip = next(a for a in fig.axes if a.get_gid() == "turns-axes")
    counts = [text.get_text() for text in strip.texts if text.get_gid() == "turns-count"]
    idle = [text.get_position()[0] for text in strip.texts if text.get_gid() == "turns-idle"]
    assert counts == ["2"] and idle == [2.5]  # two turns burnt between passes 1 and 2; none between 2 and 3
    assert any(patch.get_gid() == "turns:stall" for patch in strip.patches)
    drawn = cli("banach", "plot", "-o", str(tmp_path / "plot.png"), "-w", str(ws.root))
    assert drawn.returncode == 0 and (tmp_path / "plot.png").stat().st_size > 20_000, drawn.stderr
