"""Where everything is on the Ray cluster, as build-loop last saw it: state/build/cluster.json, for `banach status`
and the dashboard (written atomically by the head, read by anyone; never read back to decide anything).

    {"address": "10.0.0.5:6379", "door": "10.0.0.5:7070", "updated": 1765000000.0,
     "nodes": [{"id": "ab12...", "address": "10.0.0.6", "alive": true, "head": false, "slots": 4, "cpus": 8,
                "turns": [12, 14]}],
     "turns": [{"n": 12, "item": "BILL-1/0", "lane": 1, "node": "ab12...", "since": 1765000000.0, "attempt": 1}],
     "lost": [{"node": "cd34...", "address": "10.0.0.7", "at": 1765000000.0, "n": 9, "item": "BILL-2/0",
               "reason": "...", "then": "retried on another node"}]}

A turn appears under its node once the node reports in (the relay's WATCH, or the result); `lost` keeps the last
LOST_KEPT losses: the node, the turn it was running, and what became of the turn.
"""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from shared.atomic import write_json

LOST_KEPT = 20
BOARD = "cluster.json"


class ClusterBoard:
    def __init__(self, folder: Path, address: str, door: str, nodes: Any) -> None:
        """nodes: a callable returning the cluster's nodes (shared.ray_pool.Node values), dead ones included."""
        self.path = folder / BOARD
        self.address, self.door, self._nodes = address, door, nodes
        self._turns: dict[int, dict[str, Any]] = {}
        self._lost: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._writing = threading.Lock()  # one snapshot written at a time, so an older one never replaces a newer
        self._write()

    def started(self, n: int, item: str, lane: int, attempt: int) -> None:
        with self._lock:
            self._turns[n] = {"n": n, "item": item, "lane": lane, "node": "", "since": time.time(), "attempt": attempt}
        self._write()

    def placed(self, n: int, node: str) -> None:
        with self._lock:
            if n in self._turns:
                self._turns[n]["node"] = node
        self._write()

    def ended(self, n: int) -> None:
        with self._lock:
            self._turns.pop(n, None)
        self._write()

    def lost(self, n: int, node: str, reason: str, then: str) -> None:
        with self._lock:
            turn = self._turns.pop(n, {})
            self._lost = [*self._lost, {"node": node or turn.get("node", ""), "at": time.time(), "n": n,
                                        "item": turn.get("item", ""), "reason": reason[:500], "then": then}][-LOST_KEPT:]
        self._write()

    def _write(self) -> None:
        with self._writing:
            self._write_now()

    def _write_now(self) -> None:
        try:
            nodes = list(self._nodes())
        except Exception:  # noqa: BLE001 - the board says what it can; a cluster that does not answer is shown so
            nodes = []
        with self._lock:
            turns = [dict(turn) for turn in self._turns.values()]
            lost = [dict(entry) for entry in self._lost]
        addresses = {node.id: node.address for node in nodes}
        for entry in lost:
            entry.setdefault("address", addresses.get(entry["node"], ""))
        board = {"address": self.address, "door": self.door, "updated": time.time(), "turns": turns, "lost": lost,
                 "nodes": [{"id": node.id, "address": node.address, "alive": node.alive, "head": node.head,
                            "slots": node.resources.get("agent_slot", 0), "cpus": node.resources.get("CPU", 0),
                            "turns": [turn["n"] for turn in turns if turn["node"] == node.id]} for node in nodes]}
        write_json(self.path, board)


def read_board(folder: Path) -> dict[str, Any] | None:
    try:
        board = json.loads((folder / BOARD).read_text())
    except (OSError, ValueError):
        return None
    return board if isinstance(board, dict) else None


def board_lines(board: dict[str, Any]) -> list[str]:
    """What status says of the cluster: its nodes and slots, which turn runs where, the nodes it lost."""
    lines = [f"Ray cluster at {board.get('address')}; gateway door {board.get('door') or 'none (no rung uses a provider)'}"]
    for node in board.get("nodes", []):
        role = "head" if node.get("head") else "node"
        state = "alive" if node.get("alive") else "DEAD"
        turns = ", ".join(f"turn {n}" for n in node.get("turns", [])) or "idle"
        lines.append(f"  {role} {str(node.get('id', ''))[:12]} {node.get('address', '')}: {state}, "
                     f"{node.get('slots', 0):g} agent slots, {node.get('cpus', 0):g} CPUs; {turns}")
    for turn in board.get("turns", []):
        where = str(turn.get("node") or "")[:12] or "not reported in yet"
        lines.append(f"  turn {turn.get('n')} ({turn.get('item')}) lane {turn.get('lane')}: on {where}, attempt "
                     f"{turn.get('attempt')}, for {time.time() - float(turn.get('since', time.time())):.0f}s")
    for entry in board.get("lost", []):
        when = time.strftime("%H:%M:%S", time.localtime(float(entry.get("at", 0))))
        lines.append(f"  LOST {when}: node {str(entry.get('node', ''))[:12]} {entry.get('address', '')} with turn "
                     f"{entry.get('n')} ({entry.get('item')}): nothing of it kept; {entry.get('then')}")
    return lines
