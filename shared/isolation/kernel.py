"""libc functions and raw system calls through ctypes, for the sandbox's own bindings (Landlock, namespaces, mounts).
Light on imports: every sandboxed child loads it at start-up."""
from __future__ import annotations

import ctypes
import os

_libc: ctypes.CDLL | None = None


def call(name: str, *args: object) -> int:
    """A libc function called with every argument a full register (syscall(2) is variadic and reads longs); an
    OSError with the errno when it returns a negative number."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    function = getattr(_libc, name)
    function.restype = ctypes.c_long if name == "syscall" else ctypes.c_int  # prctl's -1 is an int
    result = int(function(*(ctypes.c_long(a) if isinstance(a, int) else a for a in args)))
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result
