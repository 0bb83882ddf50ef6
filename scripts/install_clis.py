"""Install the pinned real agent CLIs (tests/realcli/pins.toml) into a cache that survives between runs.

    python scripts/install_clis.py                  # all seven
    python scripts/install_clis.py claude codex     # some
    python scripts/install_clis.py --list           # where each is, installed or not; installs nothing

Each goes into ${XDG_CACHE_HOME:-~/.cache}/banach/clis/<name>-<version>/ (BANACH_CLI_CACHE overrides the
parent folder): npm packages with `npm install --prefix` there, PyPI ones into a virtualenv there. A CLI whose
folder is complete is skipped; one is built in a sibling temporary folder and renamed into place, so an
interrupted install leaves nothing that looks installed. Prints install time and size per CLI.

With no names it also installs, from Debian's packages (apt-get, as root), what other suites run on: the browser the
dashboard's tests drive (chromium, which Playwright for Python is pointed at; Playwright's own browser download is
never used), and Go (golang-go: conformance tests in Go, shared/measurement/gotest.py; node and npm come with the
machine). Without root or apt-get it says so, and those tests skip with that reason.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

PINS = Path(__file__).resolve().parent.parent / "tests" / "realcli" / "pins.toml"
DONE = ".banach-installed"  # written last: its presence is what "installed" means


@dataclass(frozen=True)
class Pin:
    name: str
    registry: str  # npm | pypi
    package: str
    version: str
    bin: str  # the executable, relative to the install folder

    def folder(self, cache: Path) -> Path:
        return cache / f"{self.name}-{self.version}"

    def executable(self, cache: Path) -> Path:
        return self.folder(cache) / self.bin


def cache_root() -> Path:
    if os.environ.get("BANACH_CLI_CACHE"):
        return Path(os.environ["BANACH_CLI_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "banach" / "clis"


def load_pins(path: Path = PINS) -> dict[str, Pin]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return {name: Pin(name, entry["registry"], entry["package"], entry["version"], entry["bin"])
            for name, entry in data["clis"].items()}


def installed(pin: Pin, cache: Path) -> Path | None:
    """The pinned CLI's executable when its install is complete, else None."""
    folder = pin.folder(cache)
    return pin.executable(cache) if (folder / DONE).exists() and pin.executable(cache).exists() else None


def _size(folder: Path) -> int:
    seen: dict[tuple[int, int], int] = {}  # by inode: an npm postinstall may hard-link its binary
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                info = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            seen[(info.st_dev, info.st_ino)] = info.st_size
    return sum(seen.values())


def _install_into(pin: Pin, target: Path) -> None:
    if pin.registry == "npm":
        command = ["npm", "install", "--prefix", str(target), "--no-audit", "--no-fund", "--loglevel=error",
                   f"{pin.package}@{pin.version}"]
        subprocess.run(command, check=True)
    elif pin.registry == "pypi":
        subprocess.run([sys.executable, "-m", "venv", str(target / "venv")], check=True)
        subprocess.run([str(target / "venv" / "bin" / "python"), "-m", "pip", "install", "--quiet",
                        f"{pin.package}=={pin.version}"], check=True)
    else:
        raise SystemExit(f"{PINS}: clis.{pin.name}.registry is '{pin.registry}'; use npm or pypi")


def install(pin: Pin, cache: Path) -> tuple[Path, float, int, bool]:
    """Returns (executable, seconds, bytes, freshly installed)."""
    folder = pin.folder(cache)
    if installed(pin, cache):
        return pin.executable(cache), 0.0, _size(folder), False
    cache.mkdir(parents=True, exist_ok=True)
    # npm's tree is relocatable (its .bin links are relative): build beside and rename. A venv records its own
    # path, so it is built in place; either way the DONE file, written last, is what marks it complete.
    building = folder if pin.registry == "pypi" else cache / f".{folder.name}.partial-{os.getpid()}"
    shutil.rmtree(building, ignore_errors=True)
    started = time.monotonic()
    try:
        _install_into(pin, building)
        if not (building / pin.bin).exists():
            raise SystemExit(f"{pin.package}@{pin.version} installed, but {pin.bin} is not in it: fix clis.{pin.name}.bin "
                             f"in {PINS}")
        (building / DONE).write_text(f"{pin.package}=={pin.version}\n")
        if building != folder:
            shutil.rmtree(folder, ignore_errors=True)
            os.replace(building, folder)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return pin.executable(cache), time.monotonic() - started, _size(folder), True


def install_debian(program: str, package: str, skipped: str) -> None:
    """Debian's package for program, unless it is there: apt-get as root, fetching the package lists when needed."""
    if shutil.which(program):
        print(f"{program:9} already installed: {shutil.which(program)}")
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        print(f"{program:9} not installed: needs root and apt-get (apt-get install {package}); {skipped} skip")
        return
    started = time.monotonic()
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", package]
    if subprocess.run(install, env=env, capture_output=True).returncode != 0:  # no package lists yet: fetch them
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True)
        ran = subprocess.run(install, env=env, capture_output=True, text=True)
        if ran.returncode != 0:
            print(f"{program:9} FAILED ({skipped} skip): {ran.stderr.strip()[-500:]}", file=sys.stderr)
            return
    print(f"{program:9} installed in {time.monotonic() - started:.1f} s: {shutil.which(program)}")


def install_browser() -> None:
    install_debian("chromium", "chromium", "the browser tests")


def install_go() -> None:
    install_debian("go", "golang-go", "the Go conformance tests")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="CLIs to install (default: all in pins.toml)")
    parser.add_argument("--list", action="store_true", help="show where each pinned CLI is; install nothing")
    args = parser.parse_args(argv)
    pins, cache = load_pins(), cache_root()
    unknown = [name for name in args.names if name not in pins]
    if unknown:
        parser.error(f"not in {PINS}: {', '.join(unknown)}; pinned: {', '.join(pins)}")
    failed = []
    for name in args.names or list(pins):
        pin = pins[name]
        if args.list:
            where = installed(pin, cache)
            print(f"{name:9} {pin.package}@{pin.version}: {where or 'not installed'}")
            continue
        print(f"{name:9} {pin.package}@{pin.version} ...", flush=True)
        try:
            executable, seconds, size, fresh = install(pin, cache)
        except (subprocess.CalledProcessError, OSError) as exc:
            print(f"{name:9} FAILED: {exc}", file=sys.stderr)
            failed.append(name)
            continue
        how = f"installed in {seconds:.1f} s" if fresh else "already installed"
        print(f"{name:9} {how}, {size / 2**20:.0f} MiB: {executable}", flush=True)
    if not args.names and not args.list:
        install_browser()
        install_go()
    if failed:
        print(f"failed: {', '.join(failed)} (see the npm or pip output above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
