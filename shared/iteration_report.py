"""The record of one build iteration, as `build-loop report` and the dashboard replay it: why it was kept or rolled
back, the exact text it saw, and its model calls."""
from __future__ import annotations

import json
from typing import Any

from shared.bodies import BodyStore
from shared.contracts.fix_plan import pass_numbers
from shared.errors import BanachError
from shared.journal import Journal
from shared.workspace import Workspace


def latest_iteration(ws: Workspace) -> int:
    journal = Journal.reader(ws.journal_path("build"))
    if journal is None:
        raise BanachError("build-loop has not run any iteration yet")
    with journal:
        row = journal.last("iteration.started")
    if row is None:
        raise BanachError("build-loop has not run any iteration yet")
    return int(row.data["n"])


def iteration_text(ws: Workspace, n: int, what: str) -> str:
    folder = ws.role_dir("build") / "iterations" / str(n)
    name = {"prompt": "prompt.md", "output": "output.txt"}[what]
    path = folder / name
    if not path.exists():
        from shared.contracts import current_turn

        running = next((t for t in current_turn.read_all(ws.role_dir("build")) if t.n == n and not t.stale), None)
        if running is not None and what == "output":
            raise BanachError(f"iteration {n} is running now ({running.agent} on {running.item}, for "
                              f"{running.seconds:.0f} s): its output is on record when the turn ends; "
                              f"the prompt it was given: build-loop report {n} --prompt")
        raise BanachError(f"iteration {n} has no {what} on record ({ws.relative(path)}); "
                          "iterations that found their item already green run no agent")
    return path.read_text(encoding="utf-8", errors="replace")


def _plan_pass(ws: Workspace, pass_seq: object) -> str:
    """The pass number plan-loop printed for the fix_plan a turn acted on (build records the pass's journal row)."""
    journal = Journal.reader(ws.journal_path("plan"))
    number = None
    if journal is not None and isinstance(pass_seq, int):
        with journal:
            number = pass_numbers(journal).get(pass_seq)
    return f"plan pass {number}" if number is not None else f"plan pass ? (plan journal row {pass_seq})"


def summary(ws: Workspace, n: int) -> str:
    journal = Journal.reader(ws.journal_path("build"))
    if journal is None:
        raise BanachError("build-loop has not run any iteration yet")
    with journal:
        rows = [row for row in journal.rows() if row.data.get("n") == n]
    if not rows:
        raise BanachError(f"no iteration {n} in the build journal")
    lines = []
    for row in rows:
        data = row.data
        if row.kind == "iteration.started":
            lines.append(f"iteration {n}: item {data['item']} ({_plan_pass(ws, data.get('plan_pass'))}, "
                         f"canon v{data.get('canon_version')})")
            lines.append(f"  checkpoint {data['checkpoint'][:12]}, agent: {data.get('agent')}")
            if data.get("failing_before"):
                lines.append(f"  failing at the checkpoint: {', '.join(data['failing_before'])}")
        elif row.kind == "iteration.ended":
            lines.append(f"  decision: {data['decision']}: {data.get('reason', '')}")
            if data.get("held_back"):
                lines.append("  held-back tests: its item fails tests only plan runs; build judged the checks it can see, "
                             "plan's next pass judges the rest (each such keep counts as an attempt)")
            if data.get("capped"):
                lines.append(f"  capped: {data['capped']}")
            for key in ("guard_violations", "hostile", "reverted", "ignored_removed", "regressions", "failing_after",
                        "changed"):
                if data.get(key):
                    lines.append(f"  {key.replace('_', ' ')}: {', '.join(map(str, data[key]))}")
            if data.get("commit"):
                lines.append(f"  commit: {data['commit']}")
            if data.get("claimed_success"):
                lines.append("  the agent claimed success (not believed; sensors decide)")
        elif row.kind == "model.call":
            lines.append(f"  {_call_line(data)}")
        else:
            lines.append(f"  {row.kind}: {json.dumps(data, sort_keys=True)}")
    return "\n".join(lines)


def _call_line(call: dict[str, object]) -> str:
    model = str(call.get("model"))
    if call.get("requested_model") and call.get("requested_model") != call.get("model"):
        model += f" (the CLI asked for {call['requested_model']})"
    cost = f", ${call['cost_usd']:.4f}" if isinstance(call.get("cost_usd"), float) else ""
    tokens = (f"{call.get('input_tokens')} in, {call.get('output_tokens')} out, {call.get('cache_read_tokens')} cache read, "
              f"{call.get('cache_write_tokens')} cache write")
    line = (f"model call {call.get('seq')}: {call.get('path')} -> {call.get('provider')}: {model}: status {call.get('status')}"
            f"{', streamed' if call.get('stream') else ''}; {tokens}{cost}; {call.get('latency_ms')} ms")
    return line + (f"; {call['error']}" if call.get("error") else "")


def _body_text(data: bytes | None) -> str:
    if data is None:
        return "(not in the store)"
    if not data:
        return "(empty)"
    text = data.decode("utf-8", errors="replace")
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text.rstrip("\n")  # a stream, as the provider sent it


def _no_calls(n: int, ended: dict[str, Any] | None) -> str:
    """Why iteration n has no transcript: no such turn, a turn with no provider, or one whose calls never arrived."""
    if ended is None:
        return f"iteration {n} has no model calls on record: it has not ended (build-loop report lists the iterations)"
    if "model_calls" not in ended:  # the governor records the count for every turn that had a route to the gateway
        return (f"iteration {n} has no model calls on record: its agent ({ended.get('agent')}) had no provider, and only "
                "turns whose agent talks to the model through Banach's gateway (agents.NAME.provider) are recorded")
    return (f"iteration {n} had a provider, but no call reached the gateway ({ended.get('decision')}: "
            f"{ended.get('reason')}); build-loop report {n} --output shows what the agent printed, banach doctor runs "
            "it as a turn does")


def transcript(ws: Workspace, n: int) -> str:
    """Every model call of iteration N through the gateway, with the request and the answer exactly as they went."""
    journal = Journal.reader(ws.journal_path("build"))
    if journal is None:
        raise BanachError("build-loop has not run any iteration yet")
    with journal:
        calls = [row.data for row in journal.rows("model.call") if row.data.get("n") == n]
        ended = next((row.data for row in journal.rows("iteration.ended") if row.data.get("n") == n), None)
    if not calls:
        raise BanachError(_no_calls(n, ended))
    store = BodyStore(ws.role_dir("build") / "bodies")
    parts = [f"iteration {n}: {len(calls)} call(s) through the gateway"]
    for call in calls:
        parts.append(f"\n=== {_call_line(call)}")
        parts.append(f">>> request (sha256 {call['request_digest']})\n{_body_text(store.get(str(call['request_digest'])))}")
        parts.append(f"<<< response (sha256 {call['response_digest']})\n{_body_text(store.get(str(call['response_digest'])))}")
    return "\n".join(parts)
