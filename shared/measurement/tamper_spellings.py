"""What the tamper scan knows by name: the modules, calls, attributes and strings through which code under test
reaches the measurement, each with its kind (shared/measurement/tamper.py). The reader that applies them is
tamper_finder.py; a spelling the scan should learn is a line here.

A name is compared after it is resolved (tamper_finder.py): `getattr(sys, "modules")`, `vars(sys)["modules"]`,
`sys.__dict__["modules"]` and `operator.attrgetter("modules")(sys)` all stand for `sys.modules`, and
`sys.modules.get("_pytest.reports")` stands for the module `_pytest.reports`.
"""
from __future__ import annotations

import sys

# a module, imported or looked up (its submodules too) -> kind
MODULE_KINDS = {
    "gc": "gc", "ctypes": "ctypes", "_ctypes": "ctypes", "cffi": "ctypes", "_cffi_backend": "ctypes",
    "_testcapi": "ctypes", "_testinternalcapi": "ctypes", "_pytest": "pytest", "pluggy": "pytest",
    "__main__": "pytest",  # the conformance runner runs as __main__: its reporter plugin is there
    "atexit": "exit", "importlib.abc": "modules", "importlib.machinery": "modules", "importlib._bootstrap": "modules",
    "importlib._bootstrap_external": "modules", "_imp": "modules", "sys.monitoring": "frames",
    "faulthandler": "frames", "tracemalloc": "frames", "bdb": "frames", "pdb": "frames", "trace": "frames",
}
# a string naming one of these modules where a module is looked up (an argument, a key, `in`) -> kind
NAMED_MODULES = {**MODULE_KINDS, "pytest": "pytest"}
ONLY_FIRST = {"__main__", "pytest"}  # too common as other values: only as a call's first argument or a key

# a function, called or taken as a value -> kind
CALL_KINDS = {
    **{f"os.{name}": "exit" for name in ("_exit", "abort", "kill", "killpg", "fork", "forkpty", "execl", "execle",
                                          "execlp", "execlpe", "execv", "execve", "execvp", "execvpe")},
    "signal.raise_signal": "exit", "signal.pthread_kill": "exit", "signal.alarm": "exit", "signal.setitimer": "exit",
    **{f"os.{name}": "descriptors" for name in ("fdopen", "write", "pwrite", "writev", "pwritev", "sendfile", "dup",
                                                 "dup2", "close", "closerange", "set_inheritable", "set_blocking",
                                                 "get_blocking", "ftruncate", "splice", "copy_file_range")},
    "socket.fromfd": "descriptors", "fcntl.fcntl": "descriptors", "fcntl.ioctl": "descriptors",
    "os.rename": "rename", "os.renames": "rename", "os.replace": "rename", "shutil.move": "rename",
    "os.link": "rename", "os.symlink": "rename", "os.mkfifo": "fifo", "os.mknod": "fifo",
    "sys.settrace": "frames", "sys.setprofile": "frames", "sys.call_tracing": "frames", "sys.addaudithook": "frames",
    "sys._getframe": "frames", "sys._getframemodulename": "frames", "sys._current_frames": "frames",
    "threading.settrace": "frames", "threading.setprofile": "frames", "threading.settrace_all_threads": "frames",
    "threading.setprofile_all_threads": "frames", "inspect.currentframe": "frames", "inspect.stack": "frames",
    "inspect.trace": "frames", "inspect.getouterframes": "frames", "inspect.getinnerframes": "frames",
    "logging.currentframe": "frames", "traceback.extract_stack": "frames", "traceback.walk_stack": "frames",
    "traceback.format_stack": "frames", "traceback.print_stack": "frames", "traceback.StackSummary.extract": "frames",
    "importlib.reload": "modules", "importlib.util.spec_from_file_location": "modules",
    "importlib.util.spec_from_loader": "modules", "importlib.util.module_from_spec": "modules",
    "runpy.run_path": "exec", "runpy.run_code": "exec", "marshal.loads": "exec", "marshal.load": "exec",
    "pickle.loads": "exec", "pickle.load": "exec", "pickle.Unpickler": "exec", "types.FunctionType": "exec",
    "types.CodeType": "exec", "code.InteractiveInterpreter": "exec", "code.InteractiveConsole": "exec",
    "code.interact": "exec", "codeop.compile_command": "exec",
    "pytest.main": "pytest", "inspect.getmodule": "modules", "zipimport.zipimporter": "modules",
}
CALL_PREFIXES = {"sys.monitoring.": "frames"}  # every function of these
# an attribute, read or written on anything -> kind
ATTRIBUTE_KINDS = {
    "f_back": "frames", "f_locals": "frames", "f_globals": "frames", "f_builtins": "frames", "f_trace": "frames",
    "tb_frame": "frames", "gi_frame": "frames", "cr_frame": "frames", "ag_frame": "frames", "__globals__": "frames",
    "__subclasses__": "gc",
    **{name: "pytest" for name in (
        "pluginmanager", "ihook", "call_and_report", "call_runtest_hook", "runtestprotocol", "from_item_and_call",
        "TestReport", "CollectReport", "longrepr", "_hookexec", "_inner_hookexec", "get_hookimpls",
        "pytest_runtest_logreport", "pytest_runtest_makereport", "pytest_runtest_protocol", "pytest_collectreport",
        "pytest_sessionfinish", "pytest_report_teststatus", "PytestPluginManager", "hookimpl", "CallInfo")},
    "symlink_to": "rename", "hardlink_to": "rename",
}
# an attribute that, written, replaces another piece of code's code, class or namespace
REPLACING = {"__code__", "__class__", "__bases__", "__defaults__", "__kwdefaults__", "__dict__", "__getattribute__",
             "__setattr__", "__getattr__"}
# a word inside a string (not a docstring) -> kind: names nobody writes in a message, and the runner's own
WORDS = {**{name: kind for name, kind in ATTRIBUTE_KINDS.items() if name not in ("hookimpl", "longrepr")},
         "_getframe": "frames", "_current_frames": "frames", "settrace": "frames", "setprofile": "frames",
         "currentframe": "frames", "extract_stack": "frames", "_exit": "exit", "_pytest": "pytest",
         "get_objects": "gc", "get_referrers": "gc", "get_referents": "gc", "mkfifo": "fifo", "fdopen": "descriptors",
         "dup2": "descriptors", "__builtins__": "modules", "meta_path": "modules", "path_hooks": "modules"}
WORD_PREFIXES = {"pytest_": "pytest", "BANACH_": "pytest"}  # a hook's name; Banach's own settings (BANACH_CANON)

# names that stand for the module table, import hooks and builtins: writing them replaces modules
MUTABLE_SYS = {"sys.modules", "sys.meta_path", "sys.path_hooks", "sys.path_importer_cache", "builtins"}
MUTATORS = {"pop", "update", "setdefault", "clear", "__setitem__", "__delitem__", "insert", "append", "extend",
            "remove", "popitem"}
WALKS = {"values", "items", "keys", "copy", "__iter__"}  # sys.modules.values(): every module, test modules included
WALKERS = {"list", "dict", "tuple", "set", "frozenset", "sorted", "iter", "enumerate", "filter", "map", "reversed",
           "zip", "copy.copy", "copy.deepcopy"}
# a module of sys.modules looked up by a value these name is the caller's own, or its class's
OWN_MODULE = {"__name__", "__package__", "__module__", "__spec__.name"}

STRING_CALLS = {"exec", "eval", "compile", "__import__", "importlib.import_module", "importlib.__import__",
                "runpy.run_module", "pkgutil.resolve_name", "pydoc.locate"}  # of a value built at run time: exec
IMPORTERS = {"__import__", "importlib.import_module", "importlib.__import__", "runpy.run_module",
             "pkgutil.resolve_name", "pydoc.locate", "importlib.util.find_spec"}  # of a constant: that module
GETTERS = {"getattr", "inspect.getattr_static", "object.__getattribute__", "type.__getattribute__"}
SETTERS = {"setattr": 3, "delattr": 2, "object.__setattr__": 3, "type.__setattr__": 3, "object.__delattr__": 2,
           "type.__delattr__": 2}  # -> how many arguments: (owner, name[, value])
VALUE_BUILTINS = {"getattr", "setattr", "delattr", "__import__", "vars", "globals", "locals", "exec", "eval",
                  "compile"}  # taken as a value (not called where written), they hide what they are called with
TYPE_SLOTS = {"__setattr__", "__delattr__", "__getattribute__", "__subclasses__", "__dict__"}  # type(x).<slot>
# owners whose attributes, looked up by a name built at run time, could be anything the kinds name
SENSITIVE_OWNERS = {"os", "sys", "gc", "builtins", "_pytest", "pytest", "pluggy", "importlib", "signal", "inspect",
                    "__main__", "ctypes", "traceback", "operator", "threading", "io", "json"}
BUILTIN_NAMES = {"getattr", "setattr", "delattr", "__import__", "vars", "globals", "locals", "exec", "eval", "compile",
                 "open", "type", "object", "print", "input", "breakpoint"}
SAME_MODULE = {"posix": "os", "nt": "os", "_io": "io", "_signal": "signal", "_operator": "operator",
               "_pickle": "pickle", "__builtin__": "builtins", "__builtins__": "builtins",
               "_frozen_importlib": "importlib._bootstrap", "_frozen_importlib_external": "importlib._bootstrap_external",
               "_socket": "socket", "_traceback": "traceback"}
STANDARD_LIBRARY = frozenset(sys.stdlib_module_names) | {"pytest", "_pytest", "pluggy", "__main__"}
COMPILED_PYTHON = (".pyc", ".pyo")  # imported without their source (beside it, or in its place)
COMPILED_C = (".so", ".pyd", ".dylib")  # an extension module: C the scan cannot read
