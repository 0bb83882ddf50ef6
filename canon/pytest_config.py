"""Canon's pytest configuration: `pytest.ini` at canon's root, the one ini file every conformance run reads.

A project's tests may need its pytest options (markers, filterwarnings, asyncio_mode, a plugin's settings). The
code's own configuration is never read by a conformance run (the agent writes the code), so what the tests need is
frozen into canon by a person:

    spec-loop add --from-code pyproject.toml    its [tool.pytest.ini_options], as canon's pytest.ini
    spec-loop add --from-code setup.cfg         its [tool:pytest] (tox.ini: [pytest]; pytest.ini: [pytest])
    spec-loop add --plugin pytest_mock          `-p pytest_mock` added to canon's pytest.ini's addopts

From then on it changes only by a change to canon."""
from __future__ import annotations

import configparser
import io
import shlex
import tomllib

INI = "pytest.ini"
PROJECT_FILES = {"pytest.ini": "pytest", "pyproject.toml": "tool.pytest.ini_options", "tox.ini": "pytest",
                 "setup.cfg": "tool:pytest"}  # where pytest reads its options, in its own order of precedence


class PytestConfigError(ValueError):
    """A file that holds no pytest configuration pytest would read."""


def section_of(name: str, text: str) -> dict[str, str]:
    """The pytest options a project file holds (name: its file name), as ini values; {} when it has none."""
    base = name.rsplit("/", 1)[-1]
    if base == "pyproject.toml":
        try:
            table = tomllib.loads(text).get("tool", {}).get("pytest", {}).get("ini_options", {})
        except tomllib.TOMLDecodeError as exc:
            raise PytestConfigError(f"{name}: not TOML ({exc})") from exc
        return {key: _ini_value(key, value) for key, value in table.items()}
    section = PROJECT_FILES.get(base)
    if section is None:
        raise PytestConfigError(f"{name}: pytest reads its options from {', '.join(PROJECT_FILES)}, not from this file")
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text, source=name)
    except configparser.Error as exc:
        raise PytestConfigError(f"{name}: {str(exc).splitlines()[0]}") from exc
    return dict(parser.items(section)) if parser.has_section(section) else {}


def _ini_value(key: str, value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        items = [str(item) for item in value]
        return " ".join(shlex.quote(item) for item in items) if key == "addopts" else "\n" + "\n".join(items)
    return str(value)


def render(options: dict[str, str], origin: str = "") -> str:
    """options as canon's pytest.ini text."""
    out = io.StringIO()
    if origin:
        out.write(f"# {origin}\n")
    out.write("[pytest]\n")
    for key, value in options.items():
        lines = str(value).split("\n")
        out.write(f"{key} = {lines[0]}".rstrip() + "\n")
        out.writelines(f"    {line}\n" for line in lines[1:] if line.strip())
    return out.getvalue()


_KEPT_FLAGS = ("-p", "-W", "--strict-markers", "--strict-config", "--strict", "--runxfail", "--doctest-modules")


def kept_addopts(addopts: str) -> tuple[str, list[str]]:
    """(the addopts that decide outcomes, the rest): a project's addopts also hold options of reporting plugins
    (--cov, --junitxml, -n) that conformance runs do not load, which pytest would refuse."""
    try:
        args = shlex.split(addopts)
    except ValueError:
        return "", [addopts]
    kept: list[str] = []
    dropped: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        takes_value = arg in ("-p", "-W") and index + 1 < len(args)
        if arg.startswith(_KEPT_FLAGS):
            kept += args[index:index + 2] if takes_value else [arg]
        else:
            dropped.append(arg)
        index += 2 if takes_value else 1
    return " ".join(shlex.quote(arg) for arg in kept), dropped


def from_project(name: str, text: str, commit: str) -> str:
    """canon's pytest.ini from a project's file at a commit; refused when it holds no pytest options."""
    options = section_of(name, text)
    if not options:
        raise PytestConfigError(f"{name} at {commit[:12]} holds no pytest options "
                                f"(pytest reads them from its [{PROJECT_FILES.get(name.rsplit('/', 1)[-1], 'pytest')}])")
    origin = f"the project's pytest options, from {name} at code {commit[:12]}; canon's from now on"
    if "addopts" in options:
        options["addopts"], dropped = kept_addopts(options["addopts"])
        if not options["addopts"]:
            del options["addopts"]
        if dropped:
            origin += f"\n# left out of addopts (options of plugins conformance runs do not load): {' '.join(dropped)}"
    return render(options, origin)


def with_plugin(text: str | None, plugin: str) -> str:
    """canon's pytest.ini (or a new one) with `-p plugin` in its addopts."""
    options = section_of(INI, text) if text else {}
    current = shlex.split(options.get("addopts", ""))
    if any(current[i] == "-p" and current[i + 1] == plugin for i in range(len(current) - 1)):
        return text or render(options)
    options["addopts"] = " ".join([*map(shlex.quote, current), "-p", shlex.quote(plugin)])
    comment = "".join(line + "\n" for line in (text or "").splitlines() if line.startswith("#"))
    return comment + render(options)


def problems(text: str) -> list[str]:
    """What is wrong with a pytest.ini draft, as `line: reason`."""
    try:
        options = section_of(INI, text)
    except PytestConfigError as exc:
        return [f"1: {str(exc).split(': ', 1)[-1]}"]
    if not options and "[pytest]" not in text:
        return ["1: canon's pytest.ini needs a [pytest] section (pytest reads nothing else of it)"]
    return []
