"""What a failing check said reaches the person whole (issue 41, point 2): a missing fixture's and a collection
error's cause is the line a block, status and the dashboard show (shared/contracts/cause.py), and an excerpt of a long
run keeps it before its tail (shared/measurement/excerpt.py)."""
from __future__ import annotations

from shared.contracts.cause import from_output
from shared.measurement.excerpt import excerpt

FIXTURE = """did not pass: tests/test_shout.py::test_shout
==================================== ERRORS ====================================
_________________________ ERROR at setup of test_shout _________________________
file /x/canon/tests/test_shout.py, line 1
  def test_shout(words):
E       fixture 'words' not found
>       available fixtures: capfd, capfdbinary
>       use 'pytest --fixtures [testpath]' for help on them.

/x/canon/tests/test_shout.py:1
""" + "\n".join(f"ERROR tests/test_shout.py::test_shout[{i}]" for i in range(60)) + "\n60 errors in 0.10s"
COLLECTION = """______________________ ERROR collecting tests/test_x.py ______________________
ImportError while importing test module '/x/canon/tests/test_x.py'.
tests/test_x.py:1: in <module>
    import nowhere
E   ModuleNotFoundError: No module named 'nowhere'
"""


def test_a_missing_fixture_is_the_cause_and_survives_the_excerpt() -> None:
    assert from_output(FIXTURE) == "ERROR at setup of test_shout: fixture 'words' not found"
    kept = excerpt(FIXTURE)
    assert "E       fixture 'words' not found" in kept and len(kept.splitlines()) <= 30, kept


def test_a_collection_errors_cause_names_the_file_and_the_module() -> None:
    assert from_output(COLLECTION) == "tests/test_x.py:1: ModuleNotFoundError: No module named 'nowhere'"
