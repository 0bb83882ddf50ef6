"""What decides a verdict, in one place: how code under test is run to be measured, what it may say back, and how
what it says is judged. Every role measures through this package: plan's checks, build's sensors, spec's dry run.

    testrun.py      the conformance runner, inside the code's process: pytest, one report line per test
    conformance.py  a pytest-form run prepared (its own copy of canon, its canaries) and its report judged
    canaries.py     must-fail tests hidden among canon's, and the output as if they were never there
    tamper.py       the syntax scan for code that reaches for the measurement (a tripwire, not a proof); its
                    spellings (tamper_spellings.py), naming (tamper_names.py) and reader (tamper_finder.py)
    tamper_diff.py  what a change added to the scan's hits: build and plan judge the change, not the project
    polyglot.py     conformance tests in the project's own language, one file a run: suites.py (what a node or go
                    test file defines), suite_canaries.py (run names, canaries), filerun.py (a file's run judged by
                    conformance's rules), nodetest.py with node_reporter.mjs, gotest.py, and suiterun.py (the driver)

Kept free of imports, like every package here: testrun.py runs inside the code's process and imports nothing of
Banach's."""
