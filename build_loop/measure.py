"""What build measures an item by, and the measuring: build's own sensors from banach.toml, then each of the
item's requirements' checks and conformance tests, run sandboxed (read-only on the work tree, writing only scratch)
against build's own export of canon. A checkpoint's reading is kept by (commit, sensors): the same state is measured
once."""
from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from build_loop.flakes import Settled, settle
from build_loop.sensors import Reading, Sensor, read_sensors
from build_loop.turn import Turn
from canon.model import Canon
from canon.store import CanonStore
from canon.visible import export_visible
from shared.atomic import file_lock, write_json
from shared.contracts.fix_plan import Item
from shared.environment import OWN, ProjectEnv, ProjectEnvError, is_dependency_file, project_env
from shared.export import remove_tree
from shared.git import Entry, GitRepo
from shared.isolation.kinds import Confine
from shared.measurement import tamper, tamper_diff
from shared.process import Limits, Request, run
from shared.workspace import Workspace


@dataclass(frozen=True)
class ChangeSetup:
    """What Measurer.for_change found: the environment and sensors to measure a change with, or a refusal."""

    project: ProjectEnv | None
    sensors: list[Sensor]
    refusal: str = ""  # why the change is rolled back unmeasured, or ""
    facts: dict[str, Any] = field(default_factory=dict)  # journaled with the refusal
    feedback: dict[str, str] = field(default_factory=dict)  # for the next prompt


class Measurer:
    """tree: the work tree the sensors read, the code's own or a lane's (build_loop/lanes.py)."""

    def __init__(self, ws: Workspace, canon_store: CanonStore, state: Path, limits: Limits, *,
                 tree: Path | None = None, cancel: threading.Event | None = None) -> None:
        """cancel: when set (build-loop was asked to stop), the sensor running now is stopped, and the rest are not
        started; a reading taken so is never kept as a checkpoint's."""
        self.ws, self.canon_store, self.state, self.limits = ws, canon_store, state, limits
        self.tree = tree or ws.code
        self.cancel = cancel or threading.Event()

    def canon_snapshot(self, canon: Canon) -> Path:
        """Build's own export of canon at this version, made once (a crash mid-export leaves no '.done'): the held-back
        tests and the lines naming them left out (canon/visible.py)."""
        target = self.state / "canon" / canon.commit[:12]
        done = target.with_name(target.name + ".done")
        if done.exists():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        with file_lock(target.with_name(target.name + ".lock"), what="exporting canon"):  # lanes may ask at once
            if not done.exists():
                remove_tree(target)
                export_visible(self.canon_store.git, canon.commit, target)
                done.touch()
        return target

    def environment(self, code: GitRepo, commit: str, budget: float | None = None) -> ProjectEnv:
        """The project's environment at this commit (shared/environment/), built when the machine has none; budget:
        the seconds its build may take at most (else [env] max_seconds)."""
        return project_env(self.ws, "build", code, commit, self.tree, budget=budget)

    def sensors(self, item: Item, canon: Canon, canon_dir: Path, project: ProjectEnv | None = None) -> list[Sensor]:
        project = project or OWN
        # 'sh -c "CMD \"$@\"" sh ARGS' hands the junit flag of a pytest-kind sensor on to the command
        sensors = [Sensor(s.name, ("/bin/sh", "-c", s.command + (' "$@"' if s.kind == "pytest" else ""), "sh"), s.kind,
                          s.timeout, python=project.python, network=s.network, go_modules=project.go_modules)
                   for s in self.ws.config.build.sensors]
        timeout = self.ws.config.plan.check_timeout
        for rid in item.requirements:
            req = canon.requirements.get(rid)
            if req is None:
                continue
            for index, command in enumerate(req.checks):
                sensors.append(Sensor(f"canon:{rid}:check:{index}", ("/bin/sh", "-c", command), "command", timeout,
                                      python=project.python, network=req.network))
            if req.tests:
                sensors.append(Sensor(f"canon:{rid}:tests", (), "conformance", timeout, tuple(req.tests), canon_dir,
                                      project.python, project.roots, req.network, project.node_modules,
                                      project.go_modules))
        return sensors

    def env(self, canon_dir: Path, scratch: Path, project: ProjectEnv | None = None, tree: Path | None = None) -> dict[str, str]:
        """What sensors and fix commands get: build.env_allow, canon's export, the work tree's import roots on
        PYTHONPATH, and the project's interpreter as BANACH_PYTHON (its venv first on PATH)."""
        project = project or OWN
        env = {key: os.environ[key] for key in self.ws.config.build.env_allow if key in os.environ}
        env.update({"BANACH_CANON": str(canon_dir), "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": str(scratch),
                    "PYTHONPATH": os.pathsep.join(project.import_paths(tree or self.tree)), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
                    "BANACH_PYTHON": project.python})
        env["PATH"] = project.search_path(env.get("PATH", os.environ.get("PATH", "/usr/bin:/bin")))
        if project.go_modules is not None:  # `go test ./...` as a sensor: the modules its environment downloaded, offline
            env.update({"GOMODCACHE": str(project.go_modules), "GOPROXY": "off", "GOTOOLCHAIN": "local", "GOWORK": "off"})
        return env

    def read(self, sensors: list[Sensor], canon_dir: Path, scratch: Path, project: ProjectEnv | None = None,
             tree: Path | None = None) -> Reading:
        """tree: where the code is (the work tree unless given). Sensors read it and write only their own folder, each
        in a view of its own (shared/isolation/kinds.py): what they judge is what gets committed, and what they
        print can carry nothing else of the machine."""
        tree = tree or self.tree
        confine = Confine(self.ws, "sensor", (tree,))
        env = self.env(canon_dir, scratch, project, tree)

        def wrap(argv: tuple[str, ...], *, python: str, writable: Path, read: tuple[Path, ...], hidden: list[Path],
                 network: str) -> tuple[str, ...]:
            return confine(argv, python=python, writable=[writable], read=read, hidden=hidden, network=network, env=env)

        return read_sensors(sensors, tree, env, scratch, wrap, self.limits, self.cancel)

    def fix(self, turn: Turn, *, reap_orphans: bool) -> None:
        """build.fix_commands (formatters) on the work tree, each in a view of its own that may write the tree."""
        env = self.env(turn.canon_dir, turn.scratch, turn.project)
        python = (turn.project or OWN).python
        for command in self.ws.config.build.fix_commands:
            argv = Confine(self.ws, "fix")(("/bin/sh", "-c", command), python=python, writable=[self.tree, turn.scratch],
                                           env=env)
            run(Request(argv, cwd=self.tree, env=env, timeout=120, limits=self.limits), reap_orphans=reap_orphans)

    def settle(self, turn: Turn, after: Reading, code: GitRepo, *, checkpoint: str | None = None,
               before: Reading | None = None, scratch: Path | None = None) -> Settled:
        """A reading of the tree as it stands against `before`, the reading of commit `checkpoint` (the turn's own
        unless given), with the checks that flip on this tree and on the checkpoint's found and taken out, and those
        that flip on this tree only read red (build_loop/flakes.py)."""
        before, checkpoint, scratch = before or turn.before, checkpoint or turn.checkpoint, scratch or turn.scratch
        if self.cancel.is_set():
            return Settled(before, after)
        return settle(lambda chosen: self.read(chosen, turn.canon_dir, scratch, turn.project),
                      lambda chosen: self._read_commit(code, checkpoint, chosen, turn.canon_dir, scratch),
                      turn.sensors, before, after, self.ws.config.build.flake_reruns)

    def _read_commit(self, code: GitRepo, commit: str, sensors: list[Sensor], canon_dir: Path, scratch: Path) -> Reading:
        """The sensors on a clean export of commit (in scratch, made once), with the environment it needs."""
        tree = scratch / f"tree-{commit[:12]}"
        if not tree.exists():
            code.export(commit, tree)
        project = self.environment(code, commit)
        return self.read([replace(s, python=project.python, roots=project.roots, node_modules=project.node_modules,
                                  go_modules=project.go_modules) for s in sensors], canon_dir, scratch,
                         project, tree=tree)

    def for_change(self, code: GitRepo, turn: Turn, entries: dict[str, Entry | None], budget: float) -> ChangeSetup:
        """What a turn's change is measured with, or why it is not measured at all: the tamper scan first, then the
        environment: the checkpoint's, unless the change touches the project's dependency files; then the one its
        files need (built now, from a trial commit of the change, within `budget`: the seconds left of the turn, so
        that the build counts against the turn that asked for it), and a change that breaks it, or that cannot be
        built within the turn's budget or the build's caps, is refused."""
        tampered = self.tampering(code, entries, turn.item, turn.canon, turn.checkpoint)
        if tampered:
            return ChangeSetup(None, [], f"the tamper scan: {'; '.join(tampered[:3])}", {"tamper": tampered},
                               {"tamper scan": "\n".join(tampered)})
        if not any(is_dependency_file(path) for path in entries):
            return ChangeSetup(turn.project, turn.sensors)
        trial, _ = code.commit_entries(turn.checkpoint, entries, "a trial of the project's environment", {}, role="build")
        try:
            project = self.environment(code, trial, budget)
        except ProjectEnvError as exc:
            why = str(exc)
            return ChangeSetup(None, [], f"the change breaks the project's environment: {why.splitlines()[0]}",
                               {"environment_error": why}, {"environment": why})
        return ChangeSetup(project, self.sensors(turn.item, turn.canon, turn.canon_dir, project))

    def tampering(self, code: GitRepo, entries: dict[str, Entry | None], item: Item, canon: Canon,
                  checkpoint: str) -> list[str]:
        """The tamper scan's hits that a turn added to the files it changed (its checkpoint's own are not its doing:
        shared/measurement/tamper_diff.py) and the item's requirements do not allow, as lines."""
        blobs = {path: entry.blob for path, entry in entries.items() if entry is not None}
        hits = tamper_diff.scan_change(code, blobs, tamper_diff.contents(code, checkpoint, blobs))
        return [str(hit) for hit in tamper.unallowed(hits, canon, item.requirements)]

    def at_checkpoint(self, head: str, sensors: list[Sensor], canon_dir: Path, scratch: Path,
                      project: ProjectEnv | None = None) -> Reading:
        key = hashlib.sha256(repr((head, [(s.name, s.argv, s.kind, s.python, s.roots) for s in sensors],
                                   project.key if project else "")).encode()).hexdigest()[:24]
        cache = self.state / "readings" / f"{key}.json"
        if cache.exists():
            return Reading.from_json(json.loads(cache.read_text()))
        reading = self.read(sensors, canon_dir, scratch, project)
        if not self.cancel.is_set():
            write_json(cache, reading.as_json())
        return reading
