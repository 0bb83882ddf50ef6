"""One plan pass: measure (V, C) from scratch, write fix_plan atomically, journal the residual,
and record a certificate when a fresh pass finds nothing.

It never reads the previous fix_plan to decide what is open. It reads its own journal only to log
build's self-assessment bias (what build's commits claimed against what this pass finds).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from canon.model import Canon
from canon.store import CanonStore
from plan_loop.agent_oracle import PlanAgent
from plan_loop.items import items_from_results
from shared.atomic import file_lock
from shared.checks import snapshot
from shared.checks.oracle import (
    EXCERPT_LINES,
    HELD_BACK,
    Check,
    Result,
    build_checks,
    check_limits,
    fingerprint,
    run_checks,
    tamper_results,
)
from shared.checks.remote import RemoteChecker
from shared.checks.snapshot import Limits, Snapshot
from shared.checks.store import PlanStore
from shared.contracts import fix_plan as fix_plan_file
from shared.contracts import trailers
from shared.contracts.fix_plan import FixPlan, Item
from shared.contracts.flakes import flaky_checks
from shared.environment import ProjectEnvError, project_env
from shared.errors import ExportError, GitError, WorkspaceError
from shared.isolation.kinds import Confine
from shared.journal import Journal, Memo
from shared.measurement import tamper_diff
from shared.workspace import Workspace


@dataclass(frozen=True)
class PassReport:
    seq: int  # the journal row that started the pass: the id fix_plan, certificates and build refer to
    number: int  # 1 for the workspace's first pass, 2 for the next: what a person counts (fix_plan's pass_number)
    canon_version: int
    code_commit: str
    residual: int
    items: tuple[str, ...]
    checks_run: int
    checks_memoized: int
    certified: bool
    fresh: bool
    unmeasured: tuple[str, ...]
    believed_done_still_open: tuple[str, ...]
    export_error: str = ""  # why (V, C) could not be copied; every measured requirement is then open
    void: tuple[str, ...] = ()  # requirements whose conformance run cannot be believed (the canary passed or hid)
    agent_rejections: tuple[str, ...] = ()  # plan-agent answers rejected, one line each
    plan_agent: str = ""  # who was asked, or ""
    measured: int = 0  # requirements with a check or a conformance test
    requirements: int = 0
    flaky: tuple[str, ...] = ()  # checks build saw flip on one tree: a canon problem
    voided: tuple[str, ...] = ()  # requirements an earlier pass found void on this same code: never certified
    unsealed: tuple[str, ...] = ()  # requirements canon says need sealed cases (`requires: sealed`) that have none
    strength: tuple[tuple[str, str], ...] = ()  # (requirement, what its pass rests on: sealed, tests, checks)

    def describe(self, reason: str = "") -> str:
        """The pass in one line (with why it ran, when given), then one line per rejected plan-agent answer."""
        if self.certified:
            verdict = (f"CERTIFIED: a fresh pass found nothing ({self.measured} of {self.requirements} requirements "
                       "measured)")
        elif self.residual == 0 and not self.measured:
            verdict = (f"nothing to certify: {self.requirements} requirement(s), none measured (give them `tests:` or "
                       "`checks:` in canon)")
        else:
            verdict = f"residual {self.residual}"
        return (f"plan pass {self.number}: canon v{self.canon_version} x code {self.code_commit[:12]}: {verdict} "
                f"({self.checks_run} checks run, {self.checks_memoized} memoized"
                + (f"; {len(self.unmeasured)} requirement(s) unmeasured" if self.unmeasured else "") + ")"
                + (f"; (V, C) could not be measured: {self.export_error.splitlines()[0]}" if self.export_error else "")
                + (f"; MEASUREMENT VOID for {', '.join(self.void)}: the code under test interfered with the test "
                   "runner (its canary test passed, or never reported; fix_plan's evidence says which)" if self.void else "")
                + (f"; NOT CERTIFIED: canon requires sealed cases (requires: sealed) of {', '.join(self.unsealed)}, "
                   "which have none" if self.unsealed and not self.residual else "")
                + (f"; NOT CERTIFIED: an earlier pass found the measurement of this same code void for "
                   f"{', '.join(self.voided)} (its canaries passed with the tests they copy); a change to the code is "
                   "measured afresh" if self.voided and not self.residual else "")
                + (f" [{reason}]" if reason else "")
                + (f"\n  FLAKY (a canon problem: every verdict on them is weaker; make them deterministic with spec-loop "
                   f"edit): {', '.join(self.flaky)}" if self.flaky else "")
                + "".join(f"\n  PLAN AGENT ANSWER REJECTED ({self.plan_agent}): {rejection}"
                          for rejection in self.agent_rejections))


def unexported_results(canon: Canon, code_commit: str, error: str, timeout: float) -> list[Result]:
    """A pass whose copy of (V, C) failed measures nothing, and says so: every measured requirement fails
    one check named "export" with the error as its excerpt. Never memoized, never certified."""
    excerpt = "\n".join(error.splitlines()[-EXCERPT_LINES:])
    results = []
    for req in sorted(canon.requirements.values(), key=lambda r: r.id):
        if req.measured:
            check = Check(req.id, "export", (), f"C={code_commit[:12]} V={canon.version}", timeout, "")
            results.append(Result(check, False, None, False, excerpt, fingerprint(error, False), 0.0, False))
    return results


@dataclass(frozen=True)
class Measured:
    """What one pass measured (PlanService._measure)."""

    results: list[Result]
    code_files: set[str]
    agent_items: list[Item]
    rejections: list[str]
    unmeasured: list[str]
    export_error: str
    export: dict[str, Any]


class PlanService:
    def __init__(self, ws: Workspace, *, remote: RemoteChecker | None = None) -> None:
        """remote: where the checks run with [cluster] backend = "ray" (connected before plan restricted itself)."""
        self.ws = ws
        self.remote = remote
        self.canon = CanonStore(ws.canon)
        self.code = ws.code_repo()
        self.journal = Journal.for_role(ws, "plan")
        self.memo = Memo(ws.role_dir("plan") / "memo.db")
        self.store = PlanStore(ws.role_dir("plan") / "objects.git")

    def close(self) -> None:
        self.journal.close()
        self.memo.close()
        if self.remote is not None:
            self.remote.close()

    def demolish_areas(self) -> frozenset[str]:
        """Areas the monitor flagged as stalled, so the next pass emits a demolish item for them."""
        from plan_loop.requests import stalled_areas

        return stalled_areas(self.ws)

    def _bias(self, code_commit: str, open_items: set[str]) -> tuple[list[str], list[str]]:
        previous = self.journal.last("pass")
        if previous is None:
            return [], []
        before = previous.data.get("code_commit")
        if not before or before == code_commit or not self.code.is_ancestor(before, code_commit):
            return [], []
        try:
            claimed = {value for _, value in self.code.commits_with_trailer(before, code_commit, trailers.ITEM)}
        except GitError:  # history with missing objects: the pass measures what it can and skips the bias
            return [], []
        still_open = sorted(claimed & open_items)
        closed_unclaimed = sorted(set(previous.data.get("items", [])) - open_items - claimed)
        return still_open, closed_unclaimed

    def _changed_since_base(self, code_commit: str) -> tuple[list[str] | None, dict[str, bytes] | None]:
        """What the tamper scan reads: the files changed since the commit the workspace started from (None: all), and
        those files as they were there (what the scan does not hold against anyone; None: nothing to compare with)."""
        base = self.code.origin_base(code_commit)
        try:
            changed = self.code.diff_names(base, code_commit) if base else None
            return changed, tamper_diff.contents(self.code, base, changed) if changed is not None else None
        except GitError:
            return None, None

    def run_pass(self, *, fresh: bool = False, agent: PlanAgent | None = None) -> PassReport:
        with file_lock(self.ws.role_dir("plan") / "pass.lock", what="a plan pass"):
            return self._run_pass(fresh=fresh, agent=agent)

    def _measure(self, canon: Canon, code_commit: str, fresh: bool, agent: PlanAgent | None,
                 unmeasured: list[str]) -> Measured:
        """Every check of canon against a fresh snapshot of (V, C) (the memo answers what it can unless fresh), and
        the plan agent on what no check measures; an export that fails is a failing measurement."""
        config = self.ws.config.plan
        agent_items: list[Item] = []
        rejections: list[str] = []
        judged: list[str] = []
        export_error = ""
        try:
            snap: Snapshot | None = snapshot.take(
                self.ws.role_dir("plan") / "scratch", self.store, self.code, code_commit, self.canon.git,
                canon.commit, Limits(config.export_max_bytes, config.export_max_files))
        except ExportError as exc:
            snap, export_error = None, str(exc)
        env = None
        if snap is not None:
            try:
                env = project_env(self.ws, "plan", self.store.repo(), code_commit, snap.code)
            except ProjectEnvError as exc:
                export_error = str(exc)
        try:
            if snap is None or env is None:
                results = unexported_results(canon, code_commit, export_error, config.check_timeout)
                code_files = self._files_or_nothing(code_commit)
            else:
                stored = self.store.repo()  # the copy plan measures: memo keys come from the same objects
                checks = build_checks(canon, self.canon.git, stored, code_commit, config.check_timeout, env)
                # on a cluster each node builds (once) and uses its own copy of the environment (shared/checks/remote.py)
                remote = self.remote.runner(self.code, code_commit, self.canon.git, canon.commit) if self.remote else None
                results = run_checks(checks, snap, jobs=config.jobs, memo=None if fresh else self.memo,
                                     confine=Confine(self.ws, "check", (snap.code,)),
                                     limits=check_limits(self.ws.config), remote=remote, env=env)  # remote: from the code's
                results += tamper_results(canon, stored, code_commit, *self._changed_since_base(code_commit))
                code_files = set(stored.files_at(code_commit))  # full history (plan's store is shallow)
                if agent:
                    agent_items, rejections, judged = agent(canon, snap, unmeasured)
                unmeasured = sorted(set(unmeasured) - set(judged))
        finally:
            if snap is not None:
                snapshot.release(snap)
        export = ({"error": export_error} if snap is None or env is None else
                  {"code": snap.code_report.as_record() if snap.code_report else None,
                   "canon": snap.canon_report.as_record() if snap.canon_report else None})
        return Measured(results, code_files, agent_items, rejections, unmeasured, export_error, export)

    def _run_pass(self, *, fresh: bool, agent: PlanAgent | None) -> PassReport:
        code_commit = self.code.head()
        if code_commit is None:
            raise WorkspaceError(f"{self.ws.code} has no commits; the code repository needs an initial commit")
        canon = self.canon.load()
        if canon.version == 0:
            raise WorkspaceError("canon has no version yet; add requirements with 'spec-loop add' or 'spec-loop edit'")
        with self.journal.step("pass", {"canon_version": canon.version, "code_commit": code_commit, "fresh": fresh}) as out:
            unmeasured = sorted(r.id for r in canon.requirements.values() if not r.measured)
            flaky = flaky_checks(self.ws.journal_path("build"), canon.version)
            m = self._measure(canon, code_commit, fresh, agent, unmeasured)
            results, code_files, agent_items, rejections, unmeasured, export_error = (
                m.results, m.code_files, m.agent_items, m.rejections, m.unmeasured, m.export_error)
            items = items_from_results(canon, results, code_files, demolish_areas=self.demolish_areas(),
                                       extra=agent_items)
            open_ids = {item.id for item in items}
            still_open, closed_unclaimed = self._bias(code_commit, open_ids)
            memoized = sum(1 for r in results if r.memoized)
            seq = out["started_seq"]
            number = self.journal.count("pass") + 1  # this pass's row is appended below
            plan = FixPlan(
                canon_version=canon.version, canon_commit=canon.commit, code_commit=code_commit,
                created=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), pass_seq=seq, pass_number=number,
                residual=len(items), items=tuple(items), unmeasured=tuple(unmeasured),
                agent_rejections=tuple(rejections), plan_agent=agent.label if agent else "",
            )
            fix_plan_file.write(plan, self.ws.fix_plan_json, self.ws.fix_plan_md)
            measured = sum(1 for req in canon.requirements.values() if req.measured)
            certified = len(items) == 0 and fresh and not export_error and measured > 0  # measuring nothing proves nothing
            void = tuple(sorted({r.check.requirement for r in results if r.void}))
            tree = self.code.tree_id(code_commit)
            voided = self._voided_before(tree)
            unsealed = tuple(sorted(rid for rid, req in canon.requirements.items()
                                    if canon.must_be_sealed(rid) and not req.sealed))
            certified = certified and not void and not voided and not unsealed
            strength = tuple(sorted((rid, req.strength) for rid, req in canon.requirements.items()))
            report = PassReport(seq, number, canon.version, code_commit, len(items),
                                tuple(sorted(open_ids)), len(results) - memoized, memoized, certified, fresh,
                                tuple(unmeasured), tuple(still_open), export_error, void, tuple(rejections),
                                plan.plan_agent, measured, len(canon.requirements), tuple(flaky), voided, unsealed,
                                strength)
            self.journal.append("pass", {
                "started_seq": seq, "number": number, "canon_version": canon.version, "canon_commit": canon.commit,
                "code_commit": code_commit, "residual": len(items), "items": sorted(open_ids),
                "requirements_by_item": {i.id: list(i.requirements) for i in items},
                "checks_run": report.checks_run, "checks_memoized": memoized, "fresh": fresh,
                "unmeasured": unmeasured, "believed_done_still_open": still_open,
                "closed_without_claim": closed_unclaimed, "agent_rejections": rejections, "void": list(void),
                "code_tree": tree, "unsealed": list(unsealed), "strength": dict(strength),
                "plan_agent": {"label": agent.label, "identity": agent.identity} if agent else None,
                "export": m.export, "held_back": held_back_record(results), "flaky": flaky,
            })
            if certified:
                self.journal.append("certificate", {"canon_version": canon.version, "canon_commit": canon.commit,
                                                    "code_commit": code_commit, "pass_seq": seq, "measured": measured,
                                                    "flaky": flaky, "strength": dict(strength),
                                                    "requirements": len(canon.requirements)})
            out.update(outcome="written", residual=len(items))
            return report

    def _voided_before(self, tree: str) -> tuple[str, ...]:
        """Requirements a pass found void on this same code (by its tree): a run whose canaries passed with the tests
        they copy was answered from the tests, and a later run that guessed its new canaries right proves nothing of
        this code. No certificate for it; a change to the code measures afresh."""
        return tuple(sorted({rid for row in self.journal.rows("pass") if row.data.get("code_tree") == tree
                             for rid in row.data.get("void", [])}))

    def _files_or_nothing(self, code_commit: str) -> set[str]:
        try:
            return set(self.code.files_at(code_commit))
        except GitError:
            return set()

    def measure(self, *, agent: PlanAgent | None = None) -> list[PassReport]:
        """A pass; when it finds nothing on memoized results, a fresh pass to certify it."""
        reports = [self.run_pass(agent=agent)]
        if reports[0].residual == 0 and not reports[0].certified and reports[0].measured:
            reports.append(self.run_pass(fresh=True, agent=agent))
        return reports


def held_back_record(results: list[Result]) -> dict[str, object]:
    """What the pass row says of the held-back tests: how many requirements have them, which of those fail, and which
    fail by them alone. One bit per requirement, like fix_plan's evidence: build may read the journal."""
    held = [r for r in results if r.check.identity == HELD_BACK]
    failing = sorted(r.check.requirement for r in held if not r.passed)
    visible = {r.check.requirement for r in results if not r.passed and r.check.identity != HELD_BACK}
    return {"requirements": len(held), "failing": failing, "only": [rid for rid in failing if rid not in visible]}
