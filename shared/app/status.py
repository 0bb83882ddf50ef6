"""`banach status`: where the loop stands, read from the stores without writing anything."""
from __future__ import annotations

from typing import Any

from canon.model import Canon
from canon.store import CanonStore
from shared.app import needs as person
from shared.app import supervisor
from shared.app.runs import read_runs
from shared.cluster_board import board_lines, read_board
from shared.contracts import current_turn
from shared.contracts import fix_plan as fix_plan_file
from shared.contracts.blocks import current_blocks, explain, has_rounds_left
from shared.contracts.flakes import flaky_checks
from shared.environment import describe as describe_environments
from shared.errors import BanachError
from shared.isolation.kinds import describe as describe_kinds
from shared.isolation.policy import reach_line
from shared.isolation.sandbox import landlock_abi
from shared.journal import Journal
from shared.monitor.series import diagnose_segment, read_history
from shared.workspace import LOOP_ROLES, ROLES, Workspace


def build_counts(ws: Workspace, canon_version: int) -> dict[str, Any]:
    counts: dict[str, Any] = {"paused": "", "iterations": 0, "keeps": 0, "rollbacks": 0, "stalls": 0, "interrupted": 0,
              "ladder_climbs": 0, "blocked": 0, "scope_fighting": 0, "last_agent": "", "agent_failed": 0, "last_failure": None,
              "rate_limited": 0, "model": {"calls": 0, "tokens": 0, "cost_usd": 0.0, "priced": True},
              "run": None, "blocked_items": [], "blocked_ids": [], "waiting_for_person": [], "blocks": {}}
    journal = Journal.reader(ws.journal_path("build"))
    if journal is None:
        return counts
    with journal:
        for row in journal.rows():
            if row.kind == "iteration.ended":
                decision = row.data.get("decision")
                if decision != "already_green":
                    counts["iterations"] += 1
                key = {"keep": "keeps", "rollback": "rollbacks", "stall": "stalls", "interrupted": "interrupted",
                       "agent_failed": "agent_failed", "rate_limited": "rate_limited"}.get(decision or "")
                # the agent failing to run is news until a turn runs it again
                counts["last_failure"] = ({"n": row.data.get("n"), "exit_code": row.data.get("exit_code"),
                                           "reason": row.data.get("reason", ""),
                                           "agent": row.data.get("agent"), "stderr_tail": row.data.get("stderr_tail", "")}
                                          if decision == "agent_failed" else
                                          counts["last_failure"] if decision == "already_green" else None)
                if key:
                    counts[key] += 1
                _count_run(counts["run"], row.data, row.ts)
            elif row.kind == "build.resumed":  # a person lifted the pause (build-loop resume)
                counts["paused"] = ""
            elif row.kind == "loop.started":  # this run's throughput, and how many workers it has; a new run
                counts["paused"] = ""  # looks again at what paused the last one
                counts["run"] = {"started": row.ts, "workers": int(row.data.get("workers") or 1), "turns": 0,
                                 "keeps": 0, "integration_rollbacks": 0, "last": row.ts, "stopped": False}
            elif row.kind == "loop.stopped" and counts["run"] is not None:
                counts["run"]["stopped"] = True
            elif row.kind == "iteration.started":
                counts["last_agent"] = row.data.get("agent") or ""
            elif row.kind == "model.call":  # through the gateway: what the model was asked for, and what it cost
                model = counts["model"]
                model["calls"] += 1 if row.data.get("model_call") else 0
                model["tokens"] += sum(int(row.data.get(key) or 0) for key in (
                    "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"))
                if row.data.get("model_call") and row.data.get("cost_usd") is None:
                    model["priced"] = False
                model["cost_usd"] = round(model["cost_usd"] + float(row.data.get("cost_usd") or 0.0), 6)
            elif row.kind == "ladder.climb":
                counts["ladder_climbs"] += 1
            elif row.kind == "scope.fighting":
                counts["scope_fighting"] += 1
            elif row.kind == "paused" and row.data.get("canon_version") == canon_version:
                counts["paused"] = row.data["message"]
        blocks = current_blocks(journal, canon_version)
    counts["blocked"] = len(blocks)
    counts["blocked_items"] = [explain(item, block) for item, block in sorted(blocks.items())]
    counts["blocked_ids"] = sorted(blocks)
    counts["blocks"] = blocks
    counts["waiting_for_person"] = sorted(item for item, block in blocks.items() if not has_rounds_left(block))
    return counts


def _count_run(run: dict[str, Any] | None, data: dict[str, Any], ts: float) -> None:
    if run is None or data.get("decision") in ("already_green", "interrupted"):
        return
    run["turns"] += 1
    run["keeps"] += data.get("decision") == "keep"
    run["integration_rollbacks"] += bool(data.get("integration"))
    run["last"] = ts


def _pass_number(ws: Workspace, plan: fix_plan_file.FixPlan) -> int | None:
    if plan.pass_number is not None:
        return plan.pass_number
    journal = Journal.reader(ws.journal_path("plan"))  # a fix_plan written before it carried its number
    if journal is None:
        return None
    with journal:
        return fix_plan_file.pass_number(plan, journal)


def status(ws: Workspace) -> dict[str, Any]:
    canon_store = CanonStore(ws.canon)
    canon_version = canon_store.version()
    code = ws.code_repo()
    head = code.head()
    try:
        plan = fix_plan_file.read(ws.fix_plan_json)
        plan_error = ""
    except BanachError as exc:
        plan, plan_error = None, str(exc)
    history = read_history(ws)
    segment = history.current_segment()
    diagnosis = diagnose_segment(segment)
    certificate = history.certificates[-1] if history.certificates else None
    certified = bool(certificate and certificate["canon_version"] == canon_version and certificate["code_commit"] == head)
    fresh_plan = plan is not None and plan.canon_version == canon_version and plan.code_commit == head
    backend = ws.config.isolation.backend
    programs = supervisor.states(ws)
    processes = {p.role: {"state": p.state, "pid": p.pid} for p in programs}
    found = {loop.role: loop for loop in supervisor.running_loops(ws, programs)}
    turns = current_turn.read_all(ws.role_dir("build"))
    now = next((turn for turn in turns if turn.lane is None), None)
    canon = canon_store.load() if canon_store.head() else None
    build = build_counts(ws, canon_version)
    unmeasured = list(plan.unmeasured) if plan and plan.canon_version == canon_version else []
    return {
        "needs": [need.as_json() for need in person.waiting(ws, canon, build["blocks"], build["paused"], unmeasured)],
        "workspace": str(ws.root),
        "canon_version": canon_version,
        "canon_hand_edits": canon_store.dirty(),  # set aside by spec-loop at its next change
        "code_commit": head,
        "residual": plan.residual if plan else None,
        "certified": certified,
        "certificate": certificate,
        "strength": canon_store.load().by_strength() if canon_version else {},
        "q": diagnosis.as_json()["q"],
        "diagnosis": diagnosis.label,
        "monitor": diagnosis.as_json(),
        "unmeasured": list(plan.unmeasured) if plan else [],
        "evidence": _evidence(plan, canon),
        "flaky": flaky_checks(ws.journal_path("build"), canon_version),
        "fix_plan": None if plan is None else {
            "pass": _pass_number(ws, plan), "pass_seq": plan.pass_seq, "created": plan.created,
            "canon_version": plan.canon_version,
            "code_commit": plan.code_commit, "build_commits_since": code.count_commits(plan.code_commit, head or "HEAD")
            if head and code.is_ancestor(plan.code_commit, head) else None,
            "current": fresh_plan, "items": [item.id for item in plan.items],
            "plan_agent": plan.plan_agent, "agent_rejections": list(plan.agent_rejections),
        },
        "fix_plan_error": plan_error,
        "plan_passes": len(history.passes),
        "build": build,
        "now": now.as_json() if now is not None else None,  # the agent turn running now, or a stale record of one
        "workers": ws.config.build.workers,
        "lanes": [turn.as_json() for turn in turns if turn.lane is not None],  # with workers: each lane's turn
        # on a Ray cluster: its nodes and slots, which turn runs where, the nodes lost (build_loop/remote_lanes.py)
        "cluster": read_board(ws.role_dir("build")) if ws.config.cluster.backend == "ray" else None,
        "agent": _agent_label(ws),
        "isolation": {
            "backend": backend,
            "enforced": backend != "none",
            "landlock_abi": landlock_abi(),
            "warning": "NOTHING IS ENFORCED: isolation backend is 'none'" if backend == "none" else "",
            "roles": _roles(ws, backend),
            "reach": ws.config.isolation.reach if backend != "none" else "machine",
            "turn_reach": reach_line(ws),
            "runs": describe_kinds(ws),
        },
        "environments": describe_environments(ws),
        "processes": processes,  # supervisord's programs
        "supervisor_running": bool(programs),
        "loops": {role: {"running": found[role].as_json() if role in found else None,
                         **read_runs(ws, role, running=role in found and not found[role].holder.one_shot).as_json()}
                  for role in LOOP_ROLES},  # every loop by its lock, whoever started it, and its runs' record
        "outside": sorted(role for role, loop in found.items() if loop.outside),
        "paths": {
            "canon": ws.relative(ws.canon), "code": ws.relative(ws.code), "inbox": ws.relative(ws.inbox),
            "fix_plan": ws.relative(ws.fix_plan_json),
            "journals": {role: ws.relative(ws.journal_path(role)) for role in ROLES},
            "supervisor_conf": ws.relative(ws.supervisor_conf),
        },
    }


def _roles(ws: Workspace, backend: str) -> dict[str, dict[str, object]]:
    if backend == "users":
        from shared.isolation.users import status as users_status

        return {role: {"enforced": bool(info["exists"] and info["owns_its_stores"]), **info}
                for role, info in users_status(ws).items()}
    abi = landlock_abi()
    return {role: {"enforced": backend == "landlock" and abi >= 1} for role in LOOP_ROLES}


def _agent_label(ws: Workspace) -> str:
    name = ws.config.build.agent
    preset = ws.config.agents.get(name)
    if preset is None:
        return name
    return "SIMULATED (a scripted stand-in for an LLM)" if preset.preset == "sim" else f"{name} ({preset.preset})"


def _describe_now(now: dict[str, Any]) -> str:
    what = f"iteration {now['iteration']}: {now['item']}, {now['agent']}"
    if now["stale"]:
        return f"STALE {what}, started {now['seconds']} s ago: {now['stale']}; the next build-loop start rolls it back"
    return f"{what}, running {now['seconds']} s"


def _describe_workers(info: dict[str, Any]) -> list[str]:
    """With build.workers > 1: what each lane does now, and this run's throughput."""
    run = info["build"].get("run")
    workers = max(info.get("workers", 1), run["workers"] if run else 1)
    if workers <= 1:
        return []
    busy = {turn["lane"]: turn for turn in info.get("lanes", [])}
    lines = [f"workers     {workers} lanes" + ("" if busy else ": none running a turn now")]
    for lane in sorted(busy):
        lines.append(f"  lane {lane}    {_describe_now(busy[lane])}")
    if info.get("cluster"):
        lines += [f"cluster     {line}" if number == 0 else f"            {line}"
                  for number, line in enumerate(board_lines(info["cluster"]))]
    if run and run["turns"]:
        minutes = max((run["last"] - run["started"]) / 60.0, 1e-9)
        lines.append(f"throughput  {run['keeps']} kept of {run['turns']} turns in {minutes:.1f} min "
                     f"({run['keeps'] / minutes:.1f} kept per minute) this run"
                     + (f"; {run['integration_rollbacks']} rolled back at integration onto main"
                        if run["integration_rollbacks"] else ""))
    return lines


def strength_texts(by_tier: dict[str, list[str]]) -> list[str]:
    """What each requirement's pass rests on (canon.model.STRENGTHS), one text a tier, the strongest first."""
    from canon.model import STRENGTHS

    return [f"{STRENGTHS[tier]}: {', '.join(ids)}" for tier, ids in by_tier.items()]


def labelled(label: str, texts: list[str], width: int) -> list[str]:
    """texts under one label: the label on the first line, the rest lined up under it."""
    return [f"{label if index == 0 else '':<{width}}{text}" for index, text in enumerate(texts)]


def render(info: dict[str, Any]) -> str:
    lines = [*person.render(info.get("needs", [])),
        f"workspace   {info['workspace']}",
        f"canon       v{info['canon_version']}" + (
            f"  HAND EDITS in {', '.join(info['canon_hand_edits'])}: canon is written only through spec-loop, which "
            "sets them aside at its next change (spec-loop edit FILE submits a change)" if info["canon_hand_edits"] else ""),
        f"code        {(info['code_commit'] or '(no commits)')[:12]}",
        f"residual    {info['residual'] if info['residual'] is not None else '(not measured yet)'}"
        + (f" (plan pass {info['fix_plan']['pass']})" if info["fix_plan"] and info["fix_plan"]["pass"] is not None else "")
        + ("" if not info["fix_plan"] or info["fix_plan"]["current"] else "  (fix_plan is older than the code or canon)"),
        f"certified   {'yes' if info['certified'] else 'no'}",
        *labelled("rests on", strength_texts(info["strength"]), 12),
        f"monitor     {info['diagnosis']}" + (f", q = {info['q']:.2f}" if info["q"] is not None else ""),
        f"agent       {info['agent']} (configured)",
    ]
    if info["now"]:
        lines.append(f"now         {_describe_now(info['now'])}")
    lines.extend(_describe_workers(info))
    if info["build"]["last_agent"]:
        lines.append(f"last turn   {info['build']['last_agent']}")  # a ladder rung or --agent-command may differ
    plan = info["fix_plan"]
    for rejection in (plan or {}).get("agent_rejections", []):
        lines.append(f"PLAN AGENT  answer rejected ({plan['plan_agent']}): {rejection}")
    if info["unmeasured"]:
        lines.append(f"unmeasured  {', '.join(info['unmeasured'])} (no check: the metric is blind there)")
    if info["flaky"]:
        lines.append(f"FLAKY       {', '.join(info['flaky'])}: read both ways on one tree, so build leaves them out of "
                     "its decisions; a canon problem (make them deterministic with spec-loop edit)")
    evidence = info["evidence"]
    if evidence["held_back_requirements"]:
        hidden = "no agent sees" if info["isolation"]["backend"] != "none" else "NOTHING HIDES (isolation none)"
        lines.append(f"held back   {evidence['held_back_requirements']} requirement(s) have held-back tests, which only "
                     f"plan runs and {hidden}; failing now: {', '.join(evidence['held_back_failing']) or 'none'} "
                     f"(visible checks failing: {', '.join(evidence['visible_failing']) or 'none'})")
    b = info["build"]
    lines.append(f"build       {b['iterations']} iterations: {b['keeps']} kept, {b['rollbacks']} rolled back, "
                 f"{b['stalls']} stalled, {b['agent_failed']} agent failures, {b['ladder_climbs']} ladder climbs, "
                 f"{b['blocked']} blocked")
    if b["model"]["calls"]:
        m = b["model"]
        cost = f"${m['cost_usd']:.4f}" + ("" if m["priced"] else " (some models have no price in [gateway.prices])")
        lines.append(f"gateway     {m['calls']} model calls, {m['tokens']} tokens, {cost}, "
                     f"{b['rate_limited']} turns ended by a rate limit (build-loop report N --transcript)")
    failure = b.get("last_failure")
    if failure:
        tail = (failure["stderr_tail"] or "").strip().splitlines()
        said = (f"{failure['reason']}" if str(failure.get("reason", "")).startswith("no call reached the gateway") else
                f"exited with code {failure['exit_code']}" + (f": {tail[-1]}" if tail else ""))
        lines.append(f"AGENT FAILED iteration {failure['n']}: {failure['agent']} {said} (banach doctor runs the agent "
                     f"as a turn does; build-loop report {failure['n']} --output shows all it printed)")
    for line in b.get("blocked_items", []):
        lines.append(f"BLOCKED     {line}")
    if b["paused"]:
        lines.append(f"PAUSED      {b['paused']}")
    iso = info["isolation"]
    lines.append(f"isolation   {iso['backend']}"
                 + (f" (Landlock ABI {iso['landlock_abi']})" if iso["backend"] == "landlock" else "")
                 + (f"  WARNING: {iso['warning']}" if iso["warning"] else ""))
    lines.append(f"reach       {iso['turn_reach']}")
    lines.append(f"runs        {iso['runs'][-1]} (banach doctor says what each kind sees)")
    for environment in info["environments"] or ["the project's code runs on Banach's own interpreter (it needs nothing "
                                                "beyond pytest)"]:
        lines.append(f"environment {environment}")
    lines.extend(_describe_processes(info))
    if info["fix_plan_error"]:
        lines.append(f"fix_plan    ERROR: {info['fix_plan_error']}")
    return "\n".join(lines)


def _describe_processes(info: dict[str, Any]) -> list[str]:
    """supervisord's programs, any loop running outside it (named first: a second set is what must not be), and each
    loop's restarts and last end."""
    lines = []
    for role in info["outside"]:
        running = info["loops"][role]["running"]
        then = ("it ends by itself, and banach up refuses until then" if running["one_shot"] else
                "banach up stops it before it starts the loops")
        lines.append(f"OUTSIDE     {running['command'] or role} (pid {running['pid']}) runs outside the supervisor: "
                     f"banach down -w {info['workspace']} stops it; {then}")
    if info["processes"]:
        lines.append("processes   supervisord: " + ", ".join(f"{role} {p['state'].lower()}" + (f" (pid {p['pid']})"
                                                             if p["pid"] else "") for role, p in info["processes"].items()))
    else:
        lines.append("processes   supervisor not running (start with 'banach up')")
    for role, loop in info["loops"].items():
        running = loop["running"]
        if running and running["under"] != "outside" and running["under"] != "supervisord":
            lines.append(f"  {role:9} running under {running['under']} (pid {running['pid']})")
        if not loop["starts"]:
            continue
        end = loop["last_end"]
        lines.append(f"  {role:9} {_count(loop['starts'], 'run')}, {_count(loop['restarts'], 'restart')}"
                     + (f"; last ended {end['text']}" if end else ""))
    return lines


def _count(number: int, word: str) -> str:
    return f"{number} {word}{'' if number == 1 else 's'}"


def _evidence(plan: fix_plan_file.FixPlan | None, canon: Canon | None) -> dict[str, Any]:
    """Which requirements fail by visible checks and which by held-back tests alone, in the last fix_plan."""
    items = plan.items if plan else ()
    return {
        "visible_failing": sorted({rid for item in items for rid in item.requirements
                                   if any(e.check != fix_plan_file.HELD_BACK_EVIDENCE for e in item.evidence)}),
        "held_back_failing": sorted({rid for item in items if item.held_back for rid in item.requirements}),
        "held_back_requirements": sum(1 for req in canon.requirements.values() if req.held_back) if canon else 0,
    }
