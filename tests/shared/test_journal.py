"""Journals: hash-chained rows; a changed, deleted or reordered row is found and named."""
from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.errors import JournalError
from shared.journal import Journal
from tests.helpers.workspaces import cli, example


def filled(path: Path, key: bytes | None = b"k" * 32) -> Journal:
    journal = Journal(path, key=key)
    for index in range(5):
        journal.append("step", {"index": index, "text": f"row {index}"})
    return journal


def test_an_intact_chain_verifies_with_receipts(tmp_path: Path) -> None:
    with filled(tmp_path / "j.db") as journal:
        verdict = journal.verify(key=b"k" * 32)
    assert verdict.ok and verdict.rows == 5


def test_a_changed_row_is_named(tmp_path: Path) -> None:
    filled(tmp_path / "j.db").close()
    with sqlite3.connect(tmp_path / "j.db") as db:
        db.execute("""UPDATE rows SET data = '{"index":2,"text":"forged"}' WHERE seq = 3""")
    with Journal(tmp_path / "j.db", readonly=True) as journal:
        verdict = journal.verify()
    assert (verdict.ok, verdict.first_bad) == (False, 3) and "changed" in verdict.reason


def test_a_deleted_row_is_named(tmp_path: Path) -> None:
    filled(tmp_path / "j.db").close()
    with sqlite3.connect(tmp_path / "j.db") as db:
        db.execute("DELETE FROM rows WHERE seq = 2")
    with Journal(tmp_path / "j.db", readonly=True) as journal:
        verdict = journal.verify()
    assert (verdict.ok, verdict.first_bad) == (False, 2) and "missing" in verdict.reason


def test_reordered_rows_are_found(tmp_path: Path) -> None:
    filled(tmp_path / "j.db").close()
    with sqlite3.connect(tmp_path / "j.db") as db:
        a = db.execute("SELECT ts, kind, data, prev, hash, receipt FROM rows WHERE seq = 2").fetchone()
        b = db.execute("SELECT ts, kind, data, prev, hash, receipt FROM rows WHERE seq = 3").fetchone()
        for seq, values in ((2, b), (3, a)):
            db.execute("UPDATE rows SET ts=?, kind=?, data=?, prev=?, hash=?, receipt=? WHERE seq=?", (*values, seq))
    with Journal(tmp_path / "j.db", readonly=True) as journal:
        verdict = journal.verify()
    assert (verdict.ok, verdict.first_bad) == (False, 2)


def test_a_rehashed_forgery_still_fails_its_receipt(tmp_path: Path) -> None:
    from shared.journal import row_hash

    filled(tmp_path / "j.db").close()
    with sqlite3.connect(tmp_path / "j.db") as db:
        rows = db.execute("SELECT seq, ts, kind, data, prev FROM rows ORDER BY seq").fetchall()
        prev = rows[0][4]
        for seq, ts, kind, data, _ in rows:  # a forger without the key recomputes every hash
            data = data.replace("row 1", "forged") if seq == 2 else data
            digest = row_hash(prev, seq, ts, kind, data)
            db.execute("UPDATE rows SET data=?, prev=?, hash=? WHERE seq=?", (data, prev, digest, seq))
            prev = digest
    with Journal(tmp_path / "j.db", readonly=True) as journal:
        assert journal.verify().ok  # the chain alone can be rebuilt...
        verdict = journal.verify(key=b"k" * 32)
    assert (verdict.ok, verdict.first_bad) == (False, 2) and "receipt" in verdict.reason  # ...the receipts cannot


def test_verify_command_names_the_role_and_row(tmp_path: Path) -> None:
    ws = example(tmp_path)
    filled(ws.journal_path("plan")).close()
    assert cli("banach", "journal", "verify", "--workspace", str(ws.root)).returncode == 0
    with sqlite3.connect(ws.journal_path("plan")) as db:
        db.execute("UPDATE rows SET kind = 'tampered' WHERE seq = 4")
    result = cli("banach", "journal", "verify", "--workspace", str(ws.root))
    assert result.returncode == 1 and "plan: BROKEN at row 4" in result.stdout


def test_a_step_leaves_its_end_row_even_when_it_fails(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.db")
    with pytest.raises(RuntimeError), journal.step("pass", {"x": 1}):
        raise RuntimeError("boom")
    ended = journal.last("pass.ended")
    assert ended is not None and ended.data["outcome"] == "error" and "boom" in ended.data["error"]


def test_a_failed_write_is_a_clear_error(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.db")
    journal.db.conn.execute("PRAGMA max_page_count = 1")  # the disk is full, as far as SQLite knows
    with pytest.raises(JournalError, match="disk may be full|cannot append"):
        for index in range(200):
            journal.append("big", {"blob": "x" * 4000, "i": index})
    journal.close()


@settings(max_examples=50, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=8), st.one_of(st.integers(), st.text(max_size=20), st.none())), max_size=8))
def test_any_data_round_trips_and_verifies(tmp_path_factory: pytest.TempPathFactory, rows: list[dict]) -> None:  # type: ignore[type-arg]
    path = tmp_path_factory.mktemp("j") / "j.db"
    with Journal(path, key=b"k") as journal:
        for data in rows:
            journal.append("row", data)
        assert [r.data for r in journal.rows()] == rows
        assert journal.verify(key=b"k").ok


WRITER = """
import sys
from pathlib import Path
from shared.journal import Journal, load_or_create_key
folder, name = Path(sys.argv[1]), sys.argv[2]
key = load_or_create_key(folder / "role.key")
with Journal(folder / "j.db", key=key) as journal:
    for index in range(20):
        journal.append("step", {"writer": name, "index": index})
print(key.hex())
"""


def test_writers_that_start_together_lose_no_row_and_share_one_key(tmp_path: Path) -> None:
    # spec-loop add, spec-loop edit and the spec-loop daemon may all open a role's new journal at the same moment.
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), str(n)], text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE) for n in range(8)]
    results = [(w.communicate(timeout=120), w.returncode) for w in writers]
    assert all(code == 0 for _, code in results), [err for (_, err), _ in results]
    keys = {out.strip() for (out, _), _ in results}
    assert len(keys) == 1 and bytes.fromhex(keys.pop()) == (tmp_path / "role.key").read_bytes()
    with Journal(tmp_path / "j.db", readonly=True) as journal:
        verdict = journal.verify(key=(tmp_path / "role.key").read_bytes())
        assert verdict.ok and verdict.rows == 8 * 20
        assert len({(r.data["writer"], r.data["index"]) for r in journal.rows("step")}) == 160


def test_a_journal_written_before_anchors_still_verifies_and_grows_anchored_rows(tmp_path: Path) -> None:
    import hashlib
    import json

    import sqlite_utils

    from shared.journal import GENESIS, migrations, sign

    path, key = tmp_path / "build" / "journal.db", b"k" * 32
    path.parent.mkdir()
    old = sqlite_utils.Database(path)
    migrations.apply(old, stop_before="m002_anchors")  # the schema as the previous release left it
    prev = GENESIS
    for seq in (1, 2):  # rows as the previous release hashed them: no anchors field at all
        data = json.dumps({"n": seq}, separators=(",", ":"))
        body = json.dumps({"data": data, "kind": "step", "seq": seq, "ts": 1.5}, sort_keys=True, separators=(",", ":"))
        digest = hashlib.sha256((prev + body).encode()).hexdigest()
        old.execute("INSERT INTO rows (seq, ts, kind, data, prev, hash, receipt) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [seq, 1.5, "step", data, prev, digest, sign(key, digest)])
        prev = digest
    old.conn.commit()
    old.close()
    with Journal(path, readonly=True) as reader:  # read-only, the file is not migrated: it verifies as it is
        assert reader.verify(key=key).ok and [r.anchors for r in reader.rows()] == [{}, {}]
    with filled(tmp_path / "plan" / "journal.db") as plan:
        plan_head = plan.rows()[-1]
    with Journal(path, key=key, peers={"plan": tmp_path / "plan" / "journal.db"}) as journal:
        row = journal.append("step", {"n": 3})
        assert row.anchors == {"plan": (5, plan_head.hash)} == journal.rows()[-1].anchors
        assert journal.verify(key=key).ok and journal.verify().rows == 3
