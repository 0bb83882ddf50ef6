"""The one place the dashboard reads a workspace: journals read-only, fix_plan, canon's repository, the code's
history and the iteration folders. Nothing here writes; every page and every live update asks through here.

All of it is read as data, never run or imported: iteration folders, diffs and model answers hold text an agent wrote,
which the templates escape (jinja2 autoescape) and the server scrubs of provider keys before it leaves."""
from __future__ import annotations

import difflib
import hmac
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from canon.store import CanonStore
from shared import iteration_report as report
from shared.app.status import status
from shared.app.verify import verify_all
from shared.contracts import cause, current_turn
from shared.contracts import fix_plan as fix_plan_file
from shared.contracts.blocks import cause_of, current_blocks, explain, has_rounds_left, requirement_of
from shared.dashboard import record
from shared.errors import BanachError
from shared.journal import Journal, canonical, head, row_hash, sign
from shared.workspace import ROLES, Workspace

PER_PAGE = 50
DECISIONS_SHOWN = ("keep", "rollback", "stall", "agent_failed", "interrupted", "rate_limited", "abandoned")


def heads(ws: Workspace) -> dict[str, int]:
    """Each journal's last row number: what the live updates watch (one indexed read per journal)."""
    found: dict[str, int] = {}
    for role in ROLES:
        last = head(ws.journal_path(role))
        found[role] = last[0] if last else 0
    return found


def overview(ws: Workspace) -> dict[str, Any]:
    """What `banach status` reads (its model spend included): the overview says the same words the CLI does."""
    return status(ws)


def _plan(ws: Workspace) -> fix_plan_file.FixPlan | None:
    try:
        return fix_plan_file.read(ws.fix_plan_json)
    except BanachError:
        return None


def items(ws: Workspace) -> dict[str, Any]:
    """fix_plan's items, each with its state: ready, waiting on others, in flight (lane, agent, tokens so far), kept
    since the plan was written, or blocked with the evidence that beat it."""
    plan = _plan(ws)
    if plan is None:
        return {"plan": None, "items": [], "kept": record.kept(ws)}
    turns = {turn.item: turn for turn in current_turn.read_all(ws.role_dir("build")) if not turn.stale}
    blocks: dict[str, dict[str, Any]] = {}
    kept: set[str] = set()
    spent: dict[int, dict[str, float]] = defaultdict(lambda: {"tokens": 0, "cost_usd": 0.0})
    journal = Journal.reader(ws.journal_path("build"))
    if journal is not None:
        with journal:
            blocks = current_blocks(journal, plan.canon_version)
            kept = {str(row.data.get("item")) for row in journal.rows("iteration.ended")
                    if row.data.get("decision") == "keep" and row.data.get("plan_pass") == plan.pass_seq}
    for running in turns.values():  # a turn's calls reach the journal when it ends; until then, its calls.jsonl
        for call in _calls_so_far(ws.role_dir("build") / "iterations" / str(running.n) / "calls.jsonl"):
            spent[running.n]["tokens"] += call_tokens(call)
            spent[running.n]["cost_usd"] += float(call.get("cost_usd") or 0.0)
    open_ids = {item.id for item in plan.items}
    shown = []
    for item in plan.items:
        turn = turns.get(item.id)
        block = blocks.get(item.id)
        waiting = [dep for dep in item.depends_on if dep in open_ids]
        if turn is not None:
            state = "in flight"
        elif block is not None:
            state = "blocked (another round to come)" if has_rounds_left(block) else "blocked"
        elif item.id in kept:
            state = "kept"
        elif waiting:
            state = "waiting"
        else:
            state = "ready"
        shown.append({"item": item, "state": state, "waiting_on": waiting,
                      "turn": None if turn is None else {**turn.as_json(), **spent[turn.n]},
                      "block": block, "explanation": explain(item.id, block) if block else "",
                      "cause": cause_of(block) if block else "", "requirement": requirement_of(item.id),
                      "evidence": [{"check": ev.check, "cause": cause.from_output(ev.excerpt), "excerpt": ev.excerpt}
                                   for ev in item.evidence]})
    return {"plan": plan, "items": shown, "kept": record.kept(ws)}


def call_tokens(call: dict[str, Any]) -> int:
    """A model call's tokens as the gateway counts them: in, out, and cache read and written."""
    return sum(int(call.get(key) or 0) for key in ("input_tokens", "output_tokens", "cache_read_tokens",
                                                   "cache_write_tokens"))


def _calls_so_far(path: Path) -> list[dict[str, Any]]:
    calls = []
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            call = json.loads(line)
        except ValueError:
            continue  # a line being written
        if isinstance(call, dict):
            calls.append(call)
    return calls


@dataclass(frozen=True)
class IterationPage:
    rows: list[dict[str, Any]]
    total: int
    page: int
    pages: int
    search: str


def iterations(ws: Workspace, *, page: int = 1, search: str = "", per_page: int = PER_PAGE) -> IterationPage:
    """Ended turns, newest first, a page at a time, found by any text in their record (item, decision, reason)."""
    journal = Journal.reader(ws.journal_path("build"))
    if journal is None:
        return IterationPage([], 0, 1, 1, search)
    page = max(1, page)
    with journal:
        rows, total = journal.page("iteration.ended", limit=per_page, offset=(page - 1) * per_page, contains=search)
    pages = max(1, -(-total // per_page))
    return IterationPage([{**row.data, "ts": row.ts, "seq": row.seq} for row in rows], total, page, pages, search)


def iteration(ws: Workspace, n: int) -> dict[str, Any]:
    """One turn whole: its record, the prompt, the agent's output, the model calls, the diff it left, and whether
    its journal rows verify under build's receipt key."""
    journal = Journal.reader(ws.journal_path("build"))
    if journal is None:
        raise BanachError("build-loop has not run any iteration yet")
    with journal:
        rows = [row for row in journal.rows("iteration.", prefix=True) if row.data.get("n") == n]
    if not rows:
        raise BanachError(f"no iteration {n} in the build journal")
    started = next((row.data for row in rows if row.kind == "iteration.started"), {})
    ended = next((row.data for row in rows if row.kind == "iteration.ended"), None)
    key_path = ws.keys_dir / "build.key"
    key = key_path.read_bytes() if key_path.exists() else None
    return {
        "n": n, "started": started, "ended": ended, "summary": report.summary(ws, n),
        "prompt": _text_or_reason(ws, n, "prompt"), "output": _text_or_reason(ws, n, "output"),
        "transcript": _transcript(ws, n), "diff": diff_left(ws, started, ended),
        "receipts": receipts_verify(rows, key),
    }


def receipts_verify(rows: list[Any], key: bytes | None) -> str:
    if key is None:
        return "build's receipt key is not readable here"
    for row in rows:
        anchors = canonical({role: list(pair) for role, pair in row.anchors.items()}) if row.anchors else ""
        if row_hash(row.prev, row.seq, row.ts, row.kind, canonical(row.data), anchors) != row.hash:
            return f"journal row {row.seq} does not match its hash (see banach journal verify)"
        if not hmac.compare_digest(sign(key, row.hash), row.receipt):
            return f"journal row {row.seq}: its receipt does not verify under build's key"
    return f"verified ({len(rows)} journal rows: hashes and receipts under build's key)"


def _text_or_reason(ws: Workspace, n: int, what: str) -> str:
    try:
        return report.iteration_text(ws, n, what)
    except BanachError as exc:
        return f"({exc})"


def _transcript(ws: Workspace, n: int) -> str:
    try:
        return report.transcript(ws, n)
    except BanachError as exc:
        return f"({exc})"


def diff_left(ws: Workspace, started: dict[str, Any], ended: dict[str, Any] | None) -> str:
    """What the turn's change was, from the checkpoint: the kept commit's, or the blobs the fence kept before the
    governor decided (recorded as `left`), which stay in the object store after a rollback."""
    if ended is None:
        return "(the turn has not ended)"
    checkpoint = str(started.get("checkpoint") or "")
    left: dict[str, str | None] = ended.get("left") or {}
    if not checkpoint or not left:
        return "(the turn left no change in scope)" if "left" in ended else "(not recorded for turns before this field)"
    repo = ws.code_repo()
    parts = []
    for path, blob in sorted(left.items()):
        before = repo.show(checkpoint, path)
        after = _blob(repo, blob)
        if after is None:
            parts.append(f"--- {path}: its content is no longer in the object store\n")
            continue
        parts.extend(difflib.unified_diff((before or "").splitlines(keepends=True), after.splitlines(keepends=True),
                                          "/dev/null" if before is None else f"a/{path}",
                                          "/dev/null" if blob is None else f"b/{path}"))
    return "".join(parts) or "(no textual difference)"


def _blob(repo: Any, blob: str | None) -> str | None:
    if blob is None:
        return ""
    try:
        data: bytes = repo.blobs([blob])[blob]
    except (BanachError, KeyError, OSError):
        return None
    return data.decode("utf-8", errors="replace")


def canon(ws: Workspace) -> dict[str, Any]:
    """Requirements with their checks and present status (from the fix_plan on record), the versions and what each
    changed, and each document's text for editing."""
    store = CanonStore(ws.canon)
    if store.head() is None:
        return {"version": 0, "documents": [], "history": [], "requirements": []}
    loaded = store.load()
    plan = _plan(ws)
    failing: dict[str, list[str]] = defaultdict(list)
    if plan is not None:
        for item in plan.items:
            for requirement in item.requirements:
                failing[requirement].append(item.id)
    unmeasured = set(plan.unmeasured) if plan else set()
    requirements = []
    for doc in loaded.documents:
        for req in doc.requirements:
            if plan is None or plan.canon_version != loaded.version:
                state = "not measured at this version yet"
            elif req.id in unmeasured:
                state = "unmeasured: no check measures it"
            elif failing.get(req.id):
                state = "failing: " + ", ".join(failing[req.id])
            else:
                state = "holds"
            requirements.append({"req": req, "document": doc.path, "state": state})
    documents = [{"path": doc.path, "text": store.read("HEAD", doc.path) or ""} for doc in loaded.documents]
    return {"version": loaded.version, "requirements": requirements, "documents": documents,
            "history": list(reversed(store.history()))}


def spend(ws: Workspace) -> dict[str, Any]:
    """Tokens and cost from the gateway's record, per iteration, per item and per rung."""
    per_iteration: dict[int, dict[str, Any]] = {}
    journal = Journal.reader(ws.journal_path("build"))
    total = {"calls": 0, "tokens": 0, "cost_usd": 0.0}
    if journal is not None:
        with journal:
            agents = {int(row.data["n"]): row.data for row in journal.rows("iteration.started") if "n" in row.data}
            for row in journal.rows("model.call"):
                n = int(row.data.get("n") or 0)
                started = agents.get(n, {})
                entry = per_iteration.setdefault(n, {"n": n, "item": row.data.get("item", ""), "calls": 0, "tokens": 0,
                                                     "cost_usd": 0.0, "rung": started.get("rung", started.get("agent", ""))})
                tokens = call_tokens(row.data)
                entry["calls"] += 1
                entry["tokens"] += tokens
                entry["cost_usd"] += float(row.data.get("cost_usd") or 0.0)
                total["calls"] += 1
                total["tokens"] += tokens
                total["cost_usd"] += float(row.data.get("cost_usd") or 0.0)
    by_item: dict[str, dict[str, Any]] = defaultdict(lambda: {"calls": 0, "tokens": 0, "cost_usd": 0.0})
    by_rung: dict[str, dict[str, Any]] = defaultdict(lambda: {"calls": 0, "tokens": 0, "cost_usd": 0.0})
    for entry in per_iteration.values():
        for table, key in ((by_item, entry["item"]), (by_rung, str(entry["rung"]))):
            for field in ("calls", "tokens", "cost_usd"):
                table[key][field] += entry[field]
    return {"total": total, "iterations": [per_iteration[n] for n in sorted(per_iteration)],
            "items": dict(by_item), "rungs": dict(by_rung)}


def journals(ws: Workspace, serve_journal: Path) -> dict[str, Any]:
    """`banach journal verify --receipts`, the dashboard's own chain, and what people did from the dashboard."""
    ok, lines = verify_all(ws, receipts=True)
    own = Journal.reader(serve_journal)
    if own is not None:
        with own:
            verdict = own.verify()
        lines.append(f"dashboard: {verdict.rows} rows, " + ("chain intact" if verdict.ok else
                                                          f"row {verdict.first_bad}: {verdict.reason}"))
        ok = ok and verdict.ok
    return {"ok": ok, "lines": lines, "actions": record.actions(serve_journal)}


def plot_svg(ws: Workspace, info: dict[str, Any]) -> bytes:
    """The convergence plot `banach plot` draws, with the same marks, as SVG."""
    import io

    from shared.monitor.plot import figure
    from shared.monitor.series import read_history

    fig, _ = figure(read_history(ws), simulated=str(info["agent"]).startswith("SIMULATED"),
                    unmeasured=len(info["unmeasured"]), blocked=info["build"]["waiting_for_person"])
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg")
    return buffer.getvalue()
