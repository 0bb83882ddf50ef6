"""One cgroup per run: a child and everything it starts stay in it, and are killed whole at the end.

A process cannot leave its cgroup without writing to cgroupfs. The agent, its context commands and
plan's checks run under Landlock, which denies every write outside their own trees, cgroupfs
included, so neither setsid(), a clean environment nor a double fork gets one out. That is what
this module adds over process groups and environment tags, which a process can shed.

Each run gets a uniquely named child of a `banach` cgroup created beneath the cgroup this process
already sits in (read from /proc/self/cgroup), never at the root: whatever limits the system put on
us keep applying to our children. cgroup v2 is used when it is writable and has cgroup.kill; the v1
controllers pids, memory and freezer fill in what v2 lacks (on a hybrid host v2 often has no
controllers). Killing whole is cgroup.kill on v2, freeze-kill-thaw on the v1 freezer, and, with only
v1 pids, SIGKILL to every member until none is left (pids.max bounds how fast new ones appear).
"""
from __future__ import annotations

import functools
import os
import secrets
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from shared.errors import BanachError

V1_CONTROLLERS = ("pids", "memory", "freezer")
KILL_WAIT = 5.0  # seconds for a killed cgroup to empty; the kernel takes milliseconds


class CgroupError(BanachError):
    pass


@dataclass(frozen=True)
class Layout:
    """Where this process may create run cgroups, and what they can do."""

    v2: Path | None  # the `banach` parent in the cgroup2 hierarchy, when it exists and has cgroup.kill
    v2_controllers: frozenset[str]  # controllers enabled for children of v2 (often none on a hybrid host)
    v1: tuple[tuple[str, Path], ...]  # (controller, its `banach` parent) for the v1 controllers we can use
    problems: tuple[str, ...]  # what is missing, for a person

    def v1_base(self, controller: str) -> Path | None:
        return dict(self.v1).get(controller)


def size_text(count: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            value = count / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{count} bytes"


def _own_paths(pid: int | str = "self") -> dict[str, str]:
    """Our cgroup (or process pid's) per hierarchy: "v2" and each v1 controller name."""
    paths: dict[str, str] = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        number, controllers, path = line.split(":", 2)
        if number == "0" and not controllers:
            paths["v2"] = path
        for controller in controllers.split(","):
            if controller:
                paths[controller] = path
    return paths


def _mounts() -> dict[str, tuple[Path, str]]:
    """Mount point and mount root per hierarchy: "v2" and each v1 controller name."""
    mounts: dict[str, tuple[Path, str]] = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        root, point = fields[3], Path(fields[4].replace("\\040", " "))
        if tail[0] == "cgroup2":
            mounts.setdefault("v2", (point, root))
        elif tail[0] == "cgroup":
            for option in tail[2].split(","):
                if option in V1_CONTROLLERS:
                    mounts.setdefault(option, (point, root))
    return mounts


def _banach_parent(key: str, mounts: dict[str, tuple[Path, str]], own: dict[str, str]) -> Path | str:
    """The `banach` parent for one hierarchy, created if need be, or why there is none."""
    if key not in mounts or key not in own:
        return f"no {'cgroup2' if key == 'v2' else key + ' cgroup'} hierarchy is mounted"
    point, root = mounts[key]
    path = own[key]
    if root != "/" and not (path == root or path.startswith(root.rstrip("/") + "/")):
        return f"our {key} cgroup {path} is outside its mount {point}"
    relative = path[len(root):] if root != "/" else path
    parent = point / relative.lstrip("/") / "banach"
    probe = parent / f"probe-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        try:
            os.mkdir(parent)
        except FileExistsError:
            pass
        os.mkdir(probe)  # the parent may exist yet not be ours to write
        os.rmdir(probe)
    except OSError as exc:
        return f"cannot create cgroups under {parent} ({exc.strerror}): run as root or delegate a cgroup to this user"
    return parent


@functools.cache
def layout() -> Layout:
    try:
        own, mounts = _own_paths(), _mounts()
    except OSError as exc:
        return Layout(None, frozenset(), (), (f"cannot read this process's cgroups ({exc.strerror})",))
    why_not: dict[str, str] = {}  # hierarchy -> why we cannot use it
    v2: Path | None = None
    controllers: frozenset[str] = frozenset()
    found = _banach_parent("v2", mounts, own)
    if isinstance(found, str):
        why_not["v2"] = found
    elif not (found / "cgroup.kill").exists():
        why_not["v2"] = "cgroup2 has no cgroup.kill (needs Linux >= 5.14)"
    else:
        v2 = found
        available = set((found / "cgroup.controllers").read_text().split())
        for controller in sorted(available & {"pids", "memory"}):
            try:
                (found / "cgroup.subtree_control").write_text(f"+{controller}")
            except OSError:
                pass  # not delegated to us; the v1 controller may stand in
        controllers = frozenset((found / "cgroup.subtree_control").read_text().split())
    v1: list[tuple[str, Path]] = []
    for controller in V1_CONTROLLERS:
        if controller in controllers or (controller == "freezer" and v2 is not None):
            continue
        found = _banach_parent(controller, mounts, own)
        if isinstance(found, str):
            why_not[controller] = found
        else:
            v1.append((controller, found))
    problems = []
    if v2 is None and not {"freezer", "pids"} & {controller for controller, _ in v1}:
        problems.append("runs cannot be contained in a cgroup, so a process that leaves its session and drops its "
                        "environment can outlive a turn: " + "; ".join(why_not.get(k, "") for k in ("v2", "freezer")))
    for controller, what in (("pids", "process limits"), ("memory", "memory limits")):
        if controller in why_not:
            problems.append(f"{what} are not enforced: {why_not[controller]}")
    found_layout = Layout(v2, controllers, tuple(v1), tuple(problems))
    sweep_stale(found_layout)
    return found_layout


def sweep_stale(where: Layout) -> list[str]:
    """Kill and remove the run cgroups of a Banach process that is gone (killed before its `finally` ran).

    Whatever its runs left inside would otherwise outlive them. Returns the names swept.
    """
    stale: dict[str, dict[str, Path]] = {}
    for key, base in (("v2", where.v2), *where.v1):
        if base is None:
            continue
        for entry in base.iterdir():
            kind, _, rest = entry.name.partition("-")
            owner = rest.split("-", 1)[0]
            if kind in ("run", "probe") and owner.isdigit() and entry.is_dir() and not _live(int(owner)):
                stale.setdefault(entry.name, {})[key] = entry
    for dirs in stale.values():
        group = Cgroup(dirs, next((k for k in ("v2", "freezer", "pids") if k in dirs), next(iter(dirs))), None, None)
        try:
            group.kill()
            group._wait_empty(KILL_WAIT, lambda: None, keep_killing=True)
            group.remove()
        except (OSError, CgroupError):
            pass  # left for `banach doctor` to show; never a reason to refuse a new run
    return sorted(stale)


def sweep_beside(pids: list[int]) -> list[str]:
    """Sweep the stale runs in the `banach` cgroups beside these processes (their cgroups read now, while they live):
    where `banach down` finds what a loop killed mid-turn left, once the loops are stopped. Creates nothing."""
    try:
        mounts = _mounts()
    except OSError:
        return []
    swept: list[str] = []
    seen: set[tuple[Path | None, tuple[tuple[str, Path], ...]]] = set()
    for pid in pids:
        try:
            own = _own_paths(pid)
        except OSError:
            continue
        bases: dict[str, Path] = {}
        for key in ("v2", *V1_CONTROLLERS):
            if key in mounts and key in own:
                point, root = mounts[key]
                relative = own[key][len(root):] if root != "/" and own[key].startswith(root) else own[key]
                if (point / relative.lstrip("/") / "banach").is_dir():
                    bases[key] = point / relative.lstrip("/") / "banach"
        v2 = bases.pop("v2", None)
        where = (v2, tuple(sorted(bases.items())))
        if where not in seen:
            seen.add(where)
            swept += sweep_stale(Layout(v2, frozenset(), where[1], ()))
    return swept


def containment_available() -> str:
    """"" when runs can be contained and limited here, else what is missing (for `banach doctor`)."""
    return "; ".join(layout().problems)


def _read_counter(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _live(pid: int) -> bool:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return raw[raw.rfind(")") + 2 :][:1] not in ("Z", "X")


class Cgroup:
    """One run's cgroups (one per hierarchy used): made before the child execs, killed and removed after."""

    def __init__(self, dirs: dict[str, Path], killer: str, max_processes: int | None, memory_bytes: int | None):
        self.dirs = dirs  # "v2" or a v1 controller -> this run's directory
        self.killer = killer  # which of dirs kills whole: "v2", "freezer" or "pids"
        self.max_processes = max_processes
        self.memory_bytes = memory_bytes

    @classmethod
    def create(cls, max_processes: int | None, memory_bytes: int | None) -> Cgroup | None:
        """A fresh, empty run cgroup with these limits, or None when this process cannot make one."""
        current = layout()
        bases: dict[str, Path] = {}
        for key, base in (("v2", current.v2), ("freezer", current.v1_base("freezer")), ("pids", current.v1_base("pids"))):
            if base is not None:
                bases[key] = base
                break
        else:
            return None
        killer = next(iter(bases))
        for controller, wanted in (("pids", max_processes), ("memory", memory_bytes)):
            base = current.v1_base(controller)
            if wanted is not None and controller not in current.v2_controllers and base is not None:
                bases[controller] = base
        name = f"run-{os.getpid()}-{secrets.token_hex(6)}"
        made = cls({}, killer, max_processes, memory_bytes)
        try:
            for key, base in bases.items():
                (base / name).mkdir()
                made.dirs[key] = base / name
            made._apply_limits()
        except OSError:
            made.remove()
            return None  # e.g. under Landlock (plan's check runner): the caller falls back
        return made

    def _apply_limits(self) -> None:
        if self.max_processes is not None:
            if "pids" in self.dirs:
                (self.dirs["pids"] / "pids.max").write_text(str(self.max_processes))
            elif "v2" in self.dirs and (self.dirs["v2"] / "pids.max").exists():
                (self.dirs["v2"] / "pids.max").write_text(str(self.max_processes))
        if self.memory_bytes is not None:
            limit = str(self.memory_bytes)
            if "memory" in self.dirs:
                folder = self.dirs["memory"]
                (folder / "memory.limit_in_bytes").write_text(limit)
                if (folder / "memory.memsw.limit_in_bytes").exists():  # so swap does not extend it
                    (folder / "memory.memsw.limit_in_bytes").write_text(limit)
            elif "v2" in self.dirs and (self.dirs["v2"] / "memory.max").exists():
                folder = self.dirs["v2"]
                (folder / "memory.max").write_text(limit)
                for knob, value in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
                    if (folder / knob).exists():
                        (folder / knob).write_text(value)

    def place(self, pid: int) -> None:
        """Move a child that has not exec'd yet into every hierarchy of this run."""
        for folder in self.dirs.values():
            try:
                (folder / "cgroup.procs").write_text(str(pid))
            except OSError as exc:
                raise CgroupError(f"cannot move process {pid} into {folder} ({exc.strerror}); "
                                  "check that cgroupfs is writable by this user") from None

    def members(self) -> set[int]:
        """Live processes in the run (zombies are already dead and are not listed by the kernel)."""
        try:
            text = (self.dirs[self.killer] / "cgroup.procs").read_text()
        except OSError:
            return set()
        return {int(pid) for pid in text.split() if _live(int(pid))}

    def stop(self, grace: float, on_wait: Callable[[], None] = lambda: None) -> int:
        """SIGINT, then SIGTERM to every member, then kill the cgroup whole. Returns how many there were."""
        initial = self.members()
        if not initial:
            return 0
        for sig in (signal.SIGINT, signal.SIGTERM):
            for pid in self.members():
                try:
                    os.kill(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
            if self._wait_empty(grace, on_wait):
                return len(initial)
        self.kill()
        if not self._wait_empty(KILL_WAIT, on_wait, keep_killing=True):
            raise CgroupError(f"processes {sorted(self.members())} in {self.dirs[self.killer]} survived SIGKILL "
                              f"for {KILL_WAIT:.0f}s (stuck in the kernel?); kill them and remove the directory")
        return len(initial)

    def kill(self) -> None:
        folder = self.dirs[self.killer]
        if self.killer == "v2":
            (folder / "cgroup.kill").write_text("1")
        elif self.killer == "freezer":
            # frozen, nothing can fork between our reading the members and signalling them
            (folder / "freezer.state").write_text("FROZEN")
            deadline = time.monotonic() + 1.0
            while (folder / "freezer.state").read_text().strip() != "FROZEN" and time.monotonic() < deadline:
                time.sleep(0.001)
            self._kill_members()
            (folder / "freezer.state").write_text("THAWED")
        else:
            self._kill_members()

    def _kill_members(self) -> None:
        for pid in self.members():
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def _wait_empty(self, seconds: float, on_wait: Callable[[], None], keep_killing: bool = False) -> bool:
        deadline = time.monotonic() + seconds
        pause = 0.0005
        while True:
            on_wait()
            if not self.members():
                return True
            if time.monotonic() >= deadline:
                return False
            if keep_killing and self.killer != "v2":
                self.kill()  # without cgroup.kill, children forked while we signalled need another round
            time.sleep(pause)
            pause = min(pause * 2, 0.02)

    def capped(self) -> str:
        """Which limit the run hit, read from the kernel's counters, or ""."""
        reasons = []
        pids = self.dirs.get("pids") or self.dirs.get("v2")
        if self.max_processes is not None and pids is not None and _read_counter(pids / "pids.events", "max") > 0:
            reasons.append(f"process limit {self.max_processes} reached")
        if self.memory_bytes is not None:
            if "memory" in self.dirs:
                killed = _read_counter(self.dirs["memory"] / "memory.oom_control", "oom_kill")
            else:
                killed = _read_counter(self.dirs.get("v2", Path("/nonexistent")) / "memory.events", "oom_kill")
            if killed > 0:
                reasons.append(f"memory limit {size_text(self.memory_bytes)} hit (OOM kill)")
        return "; ".join(reasons)

    def remove(self) -> None:
        """Remove this run's directories; the kernel refuses while a process is still inside."""
        for folder in self.dirs.values():
            deadline = time.monotonic() + 1.0
            while True:
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if time.monotonic() >= deadline:
                        raise CgroupError(f"cannot remove {folder} ({exc.strerror}); remove it once it is empty") from None
                    time.sleep(0.005)
