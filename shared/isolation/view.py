"""What a confined program sees: a small file system of its own, its own processes, an unprivileged id, and no
network but what it is given. Set up by shared.isolation.sandbox (`--view`) before Landlock:

    enter(View(read_only=..., writable=..., home=(fresh_folder, home_path), network="none"))

returns in the program's namespace, as its first process (PID 1), with the new root in place; the process that
called it stays outside, waits, and exits with the program's status (it never returns). Then the caller restricts
itself with Landlock and calls `init(command)`, which runs the program and reaps whatever it leaves.

  user namespace  the program runs as the caller's own id, mapped to itself. Started by root, it runs as
                  TURN_UID (nobody) instead, and the folders it may write are idmapped mounts on which root's files
                  look like its own and its new files land on disk owned by root: nothing of the machine is root's
                  to it, and no file it leaves is owned by an id that is not the operator's.
  mount namespace a tmpfs root holding only the listed folders, each bound at its own path (read-only unless
                  writable), /dev with the harmless devices, a /proc of its own; the host's root is detached.
  PID namespace   it sees its own processes only; when its first process ends, the kernel ends the rest.
  network         "none": a namespace with loopback only; "gateway": the same, with 127.0.0.1:PORT relayed to the
                  gateway's unix socket (shared/isolation/netrelay.py); "host": the machine's network, on request.
  capabilities    none: the bounding set is emptied and the program runs with an empty effective set.

Anything that cannot be done is refused with what this machine lacks, never skipped.
"""
from __future__ import annotations

import ctypes
import errno
import os
import signal
import sys
from typing import NoReturn

from shared.errors import IsolationError
from shared.isolation.kernel import call

TURN_UID = 65534  # nobody: the id a turn started by root runs as
SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
NETWORKS = ("none", "gateway", "host")

_CLONE_NEWNS, _CLONE_NEWUTS, _CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
_CLONE_NEWUSER, _CLONE_NEWPID, _CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
_MNT_DETACH = 0x2
_OPEN_TREE, _MOVE_MOUNT, _MOUNT_SETATTR = 428, 429, 442  # the same numbers on every architecture
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
_OPEN_TREE_CLONE, _AT_RECURSIVE, _AT_EMPTY_PATH, _AT_FDCWD = 1, 0x8000, 0x1000, -100
_MOVE_MOUNT_F_EMPTY_PATH = 0x4
_MOUNT_ATTR_RDONLY, _MOUNT_ATTR_NOSUID, _MOUNT_ATTR_NODEV, _MOUNT_ATTR_IDMAP = 0x1, 0x2, 0x4, 0x100000
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_CAPBSET_DROP, _PR_CAP_AMBIENT = 1, 4, 24, 47
_LAST_CAP = 63  # dropping a capability the kernel does not know fails with EINVAL, which ends the loop


class ViewMissing(IsolationError):
    """This machine cannot give the program its own view (no user namespaces, no idmapped mounts, ...)."""


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64),
                ("userns_fd", ctypes.c_uint64)]


class View:
    """What the program gets. Paths are absolute and bound at the same path inside; `home` is (a fresh folder, the
    path it appears at). `gateway` is (socket path, port) for network "gateway"."""

    def __init__(self, read_only: list[str], writable: list[str], home: tuple[str, str] | None = None,
                 network: str = "none", gateway: tuple[str, int] | None = None) -> None:
        if network not in NETWORKS or (network == "gateway") != (gateway is not None):
            raise ValueError(f"network must be one of {NETWORKS}, with a gateway exactly when it is 'gateway'")
        self.read_only, self.writable, self.home = read_only, writable, home
        self.network, self.gateway = network, gateway

    def binds(self) -> list[tuple[str, str, bool]]:
        """(source, target, writable), parents before what is bound inside them; missing sources left out."""
        found: dict[str, tuple[str, bool]] = {}
        for path in self.read_only:
            if os.path.exists(path):
                found.setdefault(path, (path, False))
        if self.home is not None:
            found[self.home[1]] = (self.home[0], True)
        if self.gateway is not None:
            found[self.gateway[0]] = (self.gateway[0], True)
        for path in self.writable:
            found[path] = (path, True)  # a writable path wins over the same path read-only
        return [(source, target, rw) for target, (source, rw) in sorted(found.items(), key=lambda kv: kv[0].count("/"))]


class NoLateImports:
    """Refuses every import from here on. Once a turn started by root gives up root, the interpreter's own modules may
    sit in a folder it can no longer enter (pyenv's, under /root), and whether an import works then depends on whether
    the view's root is in place yet: a race. Refusing them all makes a late import fail on every machine, in the tests,
    instead of on some machines, some of the time."""

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> None:
        raise ImportError(f"{name} is imported while a view is built, after root may have been given up; import it at "
                          "the top of its module (shared/isolation/view.py, NoLateImports)")


def _sys(number: int, *args: object) -> int:
    return call("syscall", number, *args)


def _write(path: str, text: str) -> None:
    with open(path, "w") as file:
        file.write(text)


def _clone(source: str, *, read_only: bool, idmap_fd: int | None = None) -> int:
    """A detached copy of the mount tree at source, with its attributes set; its fd."""
    fd = _sys(_OPEN_TREE, _AT_FDCWD, os.fsencode(source), _OPEN_TREE_CLONE | os.O_CLOEXEC | _AT_RECURSIVE)
    attributes = _MOUNT_ATTR_NOSUID | (_MOUNT_ATTR_RDONLY | _MOUNT_ATTR_NODEV if read_only else 0)
    if source.startswith("/dev/"):
        attributes &= ~_MOUNT_ATTR_NODEV
    if idmap_fd is not None:
        attributes |= _MOUNT_ATTR_IDMAP
    attr = _MountAttr(attributes, 0, 0, idmap_fd or 0)
    try:
        _sys(_MOUNT_SETATTR, fd, b"", _AT_EMPTY_PATH | _AT_RECURSIVE, ctypes.byref(attr), ctypes.sizeof(attr))
    except OSError as exc:
        os.close(fd)
        if idmap_fd is not None and exc.errno in (errno.EINVAL, errno.EOPNOTSUPP, errno.EPERM):
            raise ViewMissing(f"cannot let the turn write {source} as uid {TURN_UID}: its file system has no idmapped "
                              f"mounts ({exc.strerror}). Run Banach as an ordinary user, or put the workspace on ext4, "
                              "xfs, btrfs or tmpfs") from None
        raise
    return fd


def _idmap_namespace() -> int:
    """A user namespace mapping root to TURN_UID, made by a helper child and kept by fd: what the writable folders'
    idmapped mounts are cut with. Root only."""
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    helper = os.fork()
    if helper == 0:
        try:
            call("unshare", _CLONE_NEWUSER)
            os.write(ready_w, b"1")
            os.read(go_r, 1)
        finally:
            os._exit(0)
    try:
        os.read(ready_r, 1)
        _write(f"/proc/{helper}/uid_map", f"0 {TURN_UID} 1")
        _write(f"/proc/{helper}/setgroups", "deny")
        _write(f"/proc/{helper}/gid_map", f"0 {TURN_UID} 1")
        return os.open(f"/proc/{helper}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.write(go_w, b"1")
        os.waitpid(helper, 0)
        for fd in (ready_r, ready_w, go_r, go_w):
            os.close(fd)


def _own_namespaces(network: str) -> None:
    """Unshare all but the PID namespace (and the network, for "host"), and map this process's id to itself."""
    uid, gid = os.geteuid(), os.getegid()
    flags = _CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWIPC | _CLONE_NEWUTS
    if network != "host":
        flags |= _CLONE_NEWNET
    try:
        call("unshare", flags)
    except OSError as exc:
        from shared.isolation.netrelay import why_no_user_namespace

        why = why_no_user_namespace(exc.errno or errno.EPERM)
        raise ViewMissing(f"cannot make the turn's namespaces ({exc.strerror}): {why}") from None
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")


def _become_turn_uid() -> None:
    os.setgroups([])
    os.setresgid(TURN_UID, TURN_UID, TURN_UID)
    os.setresuid(TURN_UID, TURN_UID, TURN_UID)
    call("prctl", _PR_SET_DUMPABLE, 1, 0, 0, 0)  # a changed id leaves /proc/self root's; this process must write it


def _clones(view: View, idmap_fd: int | None) -> list[tuple[int, str, bool]]:
    wanted = [*view.binds(), *((f"/dev/{name}", f"/dev/{name}", True) for name in DEVICES if os.path.exists(f"/dev/{name}"))]
    made = []
    for source, target, rw in wanted:
        try:
            fd = _clone(source, read_only=not rw, idmap_fd=idmap_fd if rw and not source.startswith("/dev/") else None)
        except OSError as exc:
            raise ViewMissing(f"cannot give the program {source} ({'writable' if rw else 'read-only'}): "
                              f"{exc.strerror}") from None
        made.append((fd, target, rw))
    return made


def probe(writable: str = "") -> str:
    """Why no program can get a view here ('' when one can): a real run of /bin/true in one, with `writable` (say,
    a workspace's folder) writable, as a turn's work tree would be."""
    import subprocess

    argv = [sys.executable, "-I", "-m", "shared.isolation.sandbox", "--view",
            *(flag for folder in SYSTEM_FOLDERS for flag in ("--read", folder)),
            *(("--write", writable) if writable else ()), "--no-landlock", "--", "/bin/true"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd="/")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the probe did not run: {exc}"
    if done.returncode == 0:
        return ""
    return done.stderr.strip().removeprefix("shared.isolation.sandbox: refusing to run /bin/true: ") or \
        f"the probe ended with status {done.returncode}"


def _mount(source: str, target: str, kind: str | None, flags: int, data: str | None = None) -> None:
    call("mount", os.fsencode(source), os.fsencode(target), kind.encode() if kind else None, flags,
         data.encode() if data else None)


def _place(fd: int, root: str, target: str, made: list[str]) -> None:
    inside = root + target
    folder = inside if os.path.isdir(f"/proc/self/fd/{fd}") else os.path.dirname(inside)
    missing = []
    while not os.path.exists(folder):
        missing.append(folder)
        folder = os.path.dirname(folder)
    for folder in reversed(missing):
        os.mkdir(folder)
        made.append(folder)
    if not os.path.exists(inside):
        os.close(os.open(inside, os.O_CREAT | os.O_WRONLY, 0o600))
    _sys(_MOVE_MOUNT, fd, b"", _AT_FDCWD, os.fsencode(inside), _MOVE_MOUNT_F_EMPTY_PATH)
    os.close(fd)


def _assemble(clones: list[tuple[int, str, bool]], root: str) -> None:
    """The new root at `root`: a tmpfs with the clones placed, /dev, /proc; then pivot into it."""
    _mount("none", "/", None, _MS_REC | _MS_PRIVATE)  # nothing we mount is seen outside
    _mount("banach-turn", root, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755")
    for folder, mode in (("/dev", "0755"), ("/dev/shm", "1777"), ("/tmp", "1777")):  # /tmp: for tools that ignore TMPDIR
        os.makedirs(root + folder)
        _mount("banach" + folder.replace("/", "-"), root + folder, "tmpfs", _MS_NOSUID | _MS_NODEV, f"mode={mode}")
    for name, points_to in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                            ("stderr", "/proc/self/fd/2")):
        os.symlink(points_to, f"{root}/dev/{name}")
    made: list[str] = []
    for fd, target, _ in clones:  # parents first, so that a folder bound inside another lands on top of it
        _place(fd, root, target, made)
    ours = {os.stat(root + folder).st_dev for folder in ("", "/dev", "/dev/shm", "/tmp")}
    for folder in reversed(made):  # the view's own folders leading to a bound one (in /tmp, too): nothing to write
        if os.stat(folder).st_dev in ours:  # never a bound folder's own root
            os.chmod(folder, 0o555)
    os.makedirs(root + "/proc", exist_ok=True)
    _mount("proc", root + "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    os.chdir(root)
    _sys(_PIVOT_ROOT[os.uname().machine], b".", b".")  # the old root now sits under the new one ...
    call("umount2", b".", _MNT_DETACH)  # ... and is detached: nothing of the host is left to reach
    _mount("none", "/", None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)


def _pass_on(pid: int, number: int) -> None:
    try:
        os.kill(pid, number)
    except ProcessLookupError:  # it ended in between; its status is on its way
        pass


def _wait_and_exit(child: int) -> NoReturn:
    """The outer process: pass stop signals on to the program's namespace, and end as it ends."""
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(number, lambda sig, _frame: _pass_on(child, sig))
    _, status = os.waitpid(child, 0)
    code = os.waitstatus_to_exitcode(status)
    os._exit(128 - code if code < 0 else code)


def enter(view: View) -> None:
    """Build the view and move into it. Returns in the namespace's first process; the caller's process waits
    outside and never returns. Call it while single-threaded."""
    if os.uname().machine not in _PIVOT_ROOT:
        raise ViewMissing(f"the turn's view is not built for {os.uname().machine} (x86_64 and aarch64 only)")
    from shared.isolation.netrelay import loopback_up, serve_gateway, why_no_user_namespace  # noqa: F401 (before root is
    # given up: the interpreter's own modules may sit in a folder only root can enter)

    sys.meta_path.insert(0, NoLateImports())
    cwd = os.getcwd()
    as_root = os.geteuid() == 0
    try:
        if as_root:  # the clones first, while root may still reach and idmap every folder
            idmap_fd = _idmap_namespace()
            clones = _clones(view, idmap_fd)
            os.close(idmap_fd)
            _become_turn_uid()
            _own_namespaces(view.network)
        else:
            _own_namespaces(view.network)
            clones = _clones(view, None)
    except OSError as exc:
        raise ViewMissing(f"cannot build the turn's view: {exc.strerror} ({exc.filename or 'a mount'})") from None
    if view.gateway is not None:
        serve_gateway(*view.gateway)
    elif view.network == "none":
        loopback_up()  # a suite's own local server still works on loopback
    try:
        call("unshare", _CLONE_NEWPID)  # after the relay, which must not be the namespace's first process
    except OSError as exc:
        raise ViewMissing(f"cannot make the turn's PID namespace: {exc.strerror}") from None
    first = os.fork()
    if first:
        for fd, _, _ in clones:
            os.close(fd)
        _wait_and_exit(first)
    call("prctl", _PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    try:
        _assemble(clones, "/tmp")
        os.chdir(cwd)
    except OSError as exc:
        print(f"shared.isolation.view: cannot build the turn's view: {exc}", file=sys.stderr, flush=True)
        os._exit(126)


def drop_capabilities() -> None:
    """Empty the bounding set, the ambient set and the effective, permitted and inheritable sets."""
    for capability in range(_LAST_CAP + 1):
        try:
            call("prctl", _PR_CAPBSET_DROP, capability, 0, 0, 0)
        except OSError:
            break
    call("prctl", _PR_CAP_AMBIENT, 4, 0, 0, 0)  # PR_CAP_AMBIENT_CLEAR_ALL
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()
    call("capset", header, data)
    call("prctl", _PR_SET_DUMPABLE, 0, 0, 0, 0)  # the program cannot trace this process


def init(command: list[str]) -> NoReturn:
    """PID 1 of the turn: run the program, pass stop signals on, reap every orphan, end with the program's status
    (which ends every process it left behind)."""
    program = os.fork()
    if program == 0:
        try:
            os.execvp(command[0], command)
        except OSError as exc:
            print(f"shared.isolation.sandbox: cannot run {command[0]}: {exc}", file=sys.stderr, flush=True)
        os._exit(127)
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(number, lambda sig, _frame: _pass_on(program, sig))
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == program:
            code = os.waitstatus_to_exitcode(status)
            os._exit(128 - code if code < 0 else code)
