"""SIMULATED agent (a scripted stand-in for an LLM) for tests/test_project_set_ups.py: it applies a real library's
upstream fix, or a plausible wrong one, for the one requirement it knows of the prompt.

    upstream_fix.py right|wrong

JINJA-1  Jinja2 3.1.3 -> 3.1.4 (d6550307): xmlattr refuses keys with / > = as well as spaces. Wrong: / and > only.
PD-1     platformdirs 4.3.1 -> 4.3.2 (c596271): MacOS site_data_path and site_cache_path take the first of a multipath.
         Wrong: site_data_path only.
FG-1     freezegun 1.4.0 -> 1.5.0 (9591645): time_ns() keeps the frozen time's fraction of a second. Wrong: to the
         microsecond, as whole nanoseconds (the float's own rounding is what the upstream test expects).
"""
import os
import re
import sys
from pathlib import Path

PD_HELPER = '''    def _first_item_as_path_if_multipath(self, directory: str) -> Path:
        if self.multipath:
            # If multipath is True, the first path is returned.
            directory = directory.split(os.pathsep)[0]
        return Path(directory)

'''
PD_DATA = '''    @property
    def site_data_path(self) -> Path:
        """:return: data path shared by users. Only return the first item, even if ``multipath`` is set to ``True``"""
        return self._first_item_as_path_if_multipath(self.site_data_dir)

'''
PD_CACHE = '''    @property
    def site_cache_path(self) -> Path:
        """:return: cache path shared by users. Only return the first item, even if ``multipath`` is set to ``True``"""
        return self._first_item_as_path_if_multipath(self.site_cache_dir)

'''
PD_COMMON = [
    ("src/platformdirs/api.py", "    @property\n    @abstractmethod\n    def user_data_dir(self) -> str:",
     PD_HELPER + "    @property\n    @abstractmethod\n    def user_data_dir(self) -> str:"),
    ("src/platformdirs/unix.py", PD_HELPER, ""),
    ("src/platformdirs/macos.py", "import sys\n\nfrom .api import PlatformDirsABC\n",
     "import sys\nfrom typing import TYPE_CHECKING\n\nfrom .api import PlatformDirsABC\n\nif TYPE_CHECKING:\n"
     "    from pathlib import Path\n"),
    ("src/platformdirs/macos.py", "    @property\n    def user_config_dir(self) -> str:",
     PD_DATA + "    @property\n    def user_config_dir(self) -> str:"),
]
FIXES = {
    "JINJA-1": {
        "right": [("src/jinja2/filters.py", '_space_re = re.compile(r"\\s", flags=re.ASCII)',
                   "# Check for characters that would move the parser state from key to value.\n"
                   "# https://html.spec.whatwg.org/#attribute-name-state\n"
                   '_attr_key_re = re.compile(r"[\\s/>=]", flags=re.ASCII)'),
                  ("src/jinja2/filters.py", "        if _space_re.search(key) is not None:\n"
                   "            raise ValueError(f\"Spaces are not allowed in attributes: '{key}'\")",
                   "        if _attr_key_re.search(key) is not None:\n"
                   '            raise ValueError(f"Invalid character in attribute name: {key!r}")')],
        "wrong": [("src/jinja2/filters.py", '_space_re = re.compile(r"\\s", flags=re.ASCII)',
                   '_space_re = re.compile(r"[\\s/>]", flags=re.ASCII)'),
                  ("src/jinja2/filters.py", "Spaces are not allowed in attributes: '{key}'",
                   "Invalid character in attribute name: {key!r}")],
    },
    "PD-1": {
        "right": [*PD_COMMON, ("src/platformdirs/macos.py", "    @property\n    def user_state_dir(self) -> str:",
                               PD_CACHE + "    @property\n    def user_state_dir(self) -> str:")],
        "wrong": PD_COMMON,
    },
    "FG-1": {
        "right": [("freezegun/api.py", "return int(int(fake_time()) * 1e9)", "return int(fake_time() * 1e9)")],
        "wrong": [("freezegun/api.py", "return int(int(fake_time()) * 1e9)",
                   "return int(fake_time() * 1e6) * 1000")],
    },
}

which = sys.argv[1] if len(sys.argv) > 1 else "right"
prompt = Path(os.environ["BANACH_PROMPT_FILE"]).read_text()
asked = re.search(r"^Requirements:\s*(.+)$", prompt, re.M)
wanted = [rid.strip() for rid in asked.group(1).split(",")] if asked else []
for rid in wanted:
    if rid not in FIXES:
        continue
    for path, old, new in FIXES[rid][which]:
        module = Path(path)
        text = module.read_text()
        if old not in text:
            print(f"SIMULATED agent: {path} does not read as I expect; changing nothing there")
            continue
        module.write_text(text.replace(old, new, 1))
    print(f"SIMULATED agent: applied the {which} fix for {rid}")
    break
else:
    print("SIMULATED agent: nothing I know how to do here")
