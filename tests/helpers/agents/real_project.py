"""SIMULATED agent (a scripted stand-in for an LLM) for the vendored real projects in tests/test_real_projects.py.

It writes the right change for the one requirement it knows of the prompt (HUM-1: humanize.time.is_today; SLUG-1:
slugify.slugify_title; DU-1: dateutil.utils.days_in_month), as a model might: a function appended to the module the
requirement's paths name. First it checks, as an agent running the tests would, that $BANACH_PYTHON (the project's
environment) has what they need.
"""
import os
import re
import subprocess
from pathlib import Path

NEEDS = {"HUM-1": "freezegun", "SLUG-1": "text_unidecode", "DU-1": "hypothesis"}

CHANGES = {
    "HUM-1": ("src/humanize/time.py", '''

def is_today(value: dt.date | dt.datetime) -> bool:
    """Whether the date (or the datetime's date) is today."""
    day = value.date() if isinstance(value, dt.datetime) else value
    return day == _now().date()
'''),
    "DU-1": ("src/dateutil/utils.py", '''

def days_in_month(year, month):
    """The number of days in that month of that year."""
    import calendar

    return calendar.monthrange(year, month)[1]
'''),
    "SLUG-1": ("slugify/slugify.py", '''

def slugify_title(text: str) -> str:
    """The slug of text with each word capitalised: 'Über Straße' gives 'Uber-Strasse'."""
    return "-".join(word.capitalize() for word in slugify(text).split("-"))
'''),
}

prompt = Path(os.environ["BANACH_PROMPT_FILE"]).read_text()
asked = re.search(r"^Requirements:\s*(.+)$", prompt, re.M)
wanted = [rid.strip() for rid in asked.group(1).split(",")] if asked else []
for rid in wanted:
    if rid in CHANGES:
        python = os.environ.get("BANACH_PYTHON", "python3")
        probe = subprocess.run([python, "-c", f"import {NEEDS[rid]}"], capture_output=True, text=True)
        print(f"SIMULATED agent: $BANACH_PYTHON imports {NEEDS[rid]}: {probe.returncode == 0}")
        path, code = CHANGES[rid]
        module = Path(path)
        module.write_text(module.read_text().rstrip("\n") + "\n" + code)
        print(f"SIMULATED agent: wrote the change for {rid} in {path}")
        break
else:
    print("SIMULATED agent: nothing I know how to do here")
