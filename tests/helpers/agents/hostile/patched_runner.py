"""Class 5: the wrong change, plus code in its own scope that rewrites pytest's reports from inside the test
process, so that every failing test is reported as passed and the process exits 0."""
from pathlib import Path

from _hostile import apply

PATCH = '''
import sys as _sys
if "_pytest.reports" in _sys.modules:
    import _pytest.reports as _reports
    import _pytest.runner as _runner
    _original = _runner.call_and_report

    def _forged(item, when, log=True, **kwargs):
        report = _original(item, when, log=False, **kwargs)
        report.outcome = "passed"
        report.longrepr = None
        if log:
            item.ihook.pytest_runtest_logreport(report=report)
        return report

    _runner.call_and_report = _forged
'''
apply("wrong")
for changed in Path("textkit").glob("*.py"):
    if changed.name != "__init__.py":
        changed.write_text(PATCH + changed.read_text())
print("runner patch planted")
