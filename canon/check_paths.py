"""The files a check command names, so that intake can refuse a check that could never find them.

A check runs with `/bin/sh -c` in the code's root. A token of it counts as a path only when it can be
nothing else: a relative path with a '/' (`tests/test_x.py`, `scripts/check.py`, `src/pkg/`) or a bare
file name with a source or data suffix (`setup.py`, `style.txt`); a pytest node id counts by its file
(`tests/x.py::test_y`). Options, globs, URLs, variables, module names (`textkit.slug`), code (`-c "..."`)
and patterns are never paths. Nor is what a check may create or ask about: the operands of `test`/`[`
and of commands that make, move or fetch files, redirection targets, output options (`-o`,
`--junitxml`), a program run after an earlier command (`make && ./build/app`), and anything after a
`cd`. Refusing a good check costs more than letting a bad one through (plan reports it as failing), so
every doubt counts as "not a path".
"""
from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from pathlib import PurePosixPath

# No spaces, quotes, '$', '~', globs, braces, ':', '=' or ','; a path starts with a word character or a dot.
_PATH_SHAPE = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.@+\-/]*")
_FILE_SUFFIXES = frozenset({
    "py", "pyi", "ipynb", "sh", "bash", "zsh", "js", "mjs", "cjs", "ts", "tsx", "jsx", "rb", "pl", "php", "go",
    "rs", "c", "h", "cc", "cpp", "hpp", "java", "kt", "swift", "lua", "r", "sql", "toml", "cfg", "ini", "json",
    "yaml", "yml", "txt", "md", "rst", "csv", "xml", "html", "css", "lock",
})
_SEPARATORS = frozenset({";", ";;", "&", "&&", "|", "||", "|&", "(", ")"})
_RESERVED_WORDS = frozenset({"!", "{", "}", "if", "then", "elif", "else", "fi", "do", "done", "while", "until", "time"})
# Commands whose operands may rightly be missing: they ask about, make, move, print or fetch them, or
# take refs, targets and image names that look like paths.
_OPERANDS_NOT_NEEDED = frozenset({
    "test", "[", "[[", "echo", "printf", "export", "unset", "exit", "return", "set", "sleep", "expr", "seq",
    "for", "case", "mkdir", "touch", "rm", "rmdir", "mv", "cp", "ln", "install", "tee", "chmod", "chown",
    "truncate", "git", "make", "docker", "podman", "curl", "wget",
})
# Commands whose first operand is a pattern or a program, not a file (unless -e or -f gave it).
_PATTERN_FIRST = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "sed", "awk", "gawk", "mawk", "jq"})
_PATTERN_OPTIONS = frozenset({"-e", "-f", "--regexp", "--file", "--expression"})
_CHANGES_DIRECTORY = frozenset({"cd", "pushd"})
# A long option with one of these words takes a value that may not exist yet (or need not exist).
_VALUE_NOT_NEEDED_WORDS = ("out", "log", "report", "xml", "html", "json", "dir", "temp", "tmp", "cache", "dest",
                           "prefix", "root", "target", "save", "junit", "cov", "ignore", "exclude", "deselect")


def _tokens(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes: sh refuses it too, and says so when the check runs
        return []


def as_path(token: str) -> str | None:
    """The code-relative path a token names, or None when it is not surely a path."""
    file = token.split("::", 1)[0]  # a pytest node id names its file
    if not _PATH_SHAPE.fullmatch(file) or "..." in file:
        return None
    explicit = file.startswith("./")  # ./cmd is a path whatever its name
    while file.startswith("./"):
        file = file[2:]
    parts = file.split("/")
    if ".." in parts or not any(part not in ("", ".") for part in parts):
        return None
    if explicit or "/" in file:
        return file
    suffix = PurePosixPath(file).suffix.lower().removeprefix(".")
    return file if suffix in _FILE_SUFFIXES and not file.startswith(".") else None


def _value_not_needed(option: str, program: str) -> bool:
    if "=" in option:
        return False  # --out=x carries its value: nothing follows
    if program in _PATTERN_FIRST and option in _PATTERN_OPTIONS:
        return True
    name = option.lstrip("-").lower()
    return option == "-o" or (option.startswith("--") and any(word in name for word in _VALUE_NOT_NEEDED_WORDS))


def named_paths(command: str) -> list[str]:
    """The code-relative paths a check command needs to exist, in order, each once."""
    found: list[str] = []
    produced: list[str] = []  # made by an earlier part of the command: a redirection target, an output option
    program: str | None = None  # of the simple command being read, once known
    commands_before = 0
    pattern_pending = skip_next = cwd_changed = False

    def note(token: str, into: list[str]) -> None:
        path = as_path(token)
        if path is not None and path not in into and not any(_within(path, made) for made in produced):
            into.append(path)

    for token in _tokens(command):
        if token.startswith("#"):
            break  # a comment, to the end of the command (or a quoted '#...': stopping early only misses paths)
        if skip_next:
            skip_next = False
            note(token, produced)
        elif token in _SEPARATORS:
            if program is not None:
                commands_before += 1
            program, pattern_pending = None, False
        elif token in ("<<", "<<<", ">", ">>", ">|", "<>", ">&", "<&", "&>", "&>>"):
            skip_next = True
        elif token == "<":
            continue  # the file read from must exist: it is read as the next operand
        elif program is None:
            if token in _RESERVED_WORDS or ("=" in token and not token.startswith("=")):
                continue  # a keyword, or VAR=value before the program
            program = PurePosixPath(token).name
            pattern_pending = program in _PATTERN_FIRST
            if "/" in token and not cwd_changed and not commands_before:
                note(token, found)  # ./check.sh runs from the code's root; a bare name comes from PATH
        elif token.startswith("-"):
            cwd_changed = cwd_changed or token == "-C"  # make -C, git -C, tar -C: relative to somewhere else
            if _value_not_needed(token, program):
                skip_next, pattern_pending = True, False
        elif pattern_pending:
            pattern_pending = False
        elif program in _CHANGES_DIRECTORY:
            if not cwd_changed:
                note(token, found)
            cwd_changed = True
        elif program in _OPERANDS_NOT_NEEDED:
            note(token, produced)
        elif not cwd_changed:
            note(token, found)
    return found


def _within(path: str, folder_or_file: str) -> bool:
    return path == folder_or_file.rstrip("/") or path.startswith(folder_or_file.rstrip("/") + "/")


class KnownPaths:
    """The files of a tree (and so its folders), to ask whether a path a check names exists."""

    def __init__(self, files: Iterable[str]) -> None:
        self.files = set(files)
        self.folders = {str(parent) for file in self.files for parent in PurePosixPath(file).parents if str(parent) != "."}

    def exists(self, path: str) -> bool:
        path = path.rstrip("/")
        if path in self.files or path in self.folders:
            return True
        # under an entry listed as a file yet named as a folder: a submodule, whose files the tree does not list
        return any(str(parent) in self.files for parent in PurePosixPath(path).parents)

    def missing(self, command: str) -> list[str]:
        return [path for path in named_paths(command) if not self.exists(path)]
