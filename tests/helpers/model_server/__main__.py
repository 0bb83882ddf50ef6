"""Run the scripted model server by hand: `python -m tests.helpers.model_server --write PATH CONTENT --echo`."""

from __future__ import annotations

import argparse
import threading
from pathlib import Path

from tests.helpers.model_server import ModelServer, Nothing, RateLimit, Script, Write


def main() -> None:
    parser = argparse.ArgumentParser(description="SCRIPTED MODEL SERVER: a stand-in for an LLM, no model is called.")
    parser.add_argument("--write", nargs=2, action="append", metavar=("PATH", "CONTENT"), help="a turn that writes a file")
    parser.add_argument("--rate-limit", type=int, metavar="SECONDS", help="a first turn answered 429 with this retry-after")
    parser.add_argument("--root", help="the CLI's cwd, for tools that want absolute paths")
    parser.add_argument("--model", action="append", help="model names to list")
    parser.add_argument("--api-key", help="the only key accepted")
    parser.add_argument("--log", type=Path, help="append each request to this file as a JSON line")
    parser.add_argument("--echo", action="store_true", help="print one line per request on stderr")
    args = parser.parse_args()
    turns = ([RateLimit(args.rate_limit)] if args.rate_limit else []) + [Write({p: c}) for p, c in args.write or []]
    script = Script(
        tuple(turns) or (Nothing(),), root=args.root, models=tuple(args.model or ["scripted-model"]), api_key=args.api_key
    )
    with ModelServer(script, log=args.log, echo=args.echo) as server:
        print(server.url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
