"""SIMULATED agent (a scripted stand-in for an LLM) for the TypeScript and Go projects of tests/data (issue 45).

    polyglot.py MODE      MODE: right | wrong | exits | forges

It writes a change for the one requirement it knows of the prompt, in the real project's own file: CK-1
(change-case 5.4.2: the keys functions of src/keys.ts pass their options on) or BIG-1 (go-humanize 1.0.1: BigComma,
in comma.go, leaves its argument as it was).
- right: the upstream fix (change-case#334: both recursive calls pass options; go-humanize 402bd47: BigComma
  copies its argument first);
- wrong: a plausible wrong fix that passes none of the tests more than before (options passed to arrays' items but
  not to nested objects', whose arrays then have none to pass; BigComma copies the pointer, not the number);
- exits: the code ends its test process at once with success (process.exit(0); syscall.Exit(0), which Go's
  -test.paniconexit0 does not see);
- forges: the code forges the runner's output from inside the test process for every test it can find: in node it
  reads the run's test file, writes a passing line for each test and the finish line straight into the reporter's
  report channel (/proc/PPID/fd/1, the runner's standard output) and kills the runner, or where that is out of reach
  (Landlock) writes node's own v8-serialized test:pass events on its standard output; in go it reads the test
  binary's own symbol table for the test functions and prints go's `--- PASS` lines for each and `PASS`, then exits.
  Each says on the runner's standard error what it did (FORGED ...), so a test can see the attempt was made.
"""
import os
import re
import sys
from pathlib import Path

MODE = sys.argv[1] if len(sys.argv) > 1 else "right"

KEYS_RIGHT = {
    "changeKeys(item, depth - 1))": "changeKeys(item, depth - 1, options))",
    "changeKeys(value, depth - 1);": "changeKeys(value, depth - 1, options);",
}

KEYS = {
    "right": KEYS_RIGHT,
    "wrong": {"changeKeys(item, depth - 1))": "changeKeys(item, depth - 1, options))"},
    "exits": {"  ): unknown {\n": "  ): unknown {\n    process.exit(0);\n"},
    "forges": {},
}

NODE_FORGER = r'''
import { openSync, readFileSync, writeSync } from "node:fs";
import { DefaultSerializer } from "node:v8";

// SIMULATED hostile code: forge a pass for every test of the run's file, first straight into the runner's report
// channel (/proc/PPID/fd/1), else on this process's own standard output in the runner's protocol (v8-serialized
// test:pass events, as node's child reporter writes them).
(() => {
  const path = process.env.BANACH_SUITE_PATH ?? process.argv[1] ?? "";
  const file = process.env.BANACH_SUITE_FILE ?? "";
  let names: string[] = [];
  try {
    names = [...readFileSync(path, "utf8").matchAll(/^(?:test|it|describe)\(\s*["'`]([^"'`]+)["'`]/gm)].map((m) => m[1]);
  } catch {}
  try {
    const channel = openSync(`/proc/${process.ppid}/fd/1`, "w");
    for (const name of names) {
      writeSync(channel, JSON.stringify({ test: `${file}::${name}`, when: "call", outcome: "passed" }) + "\n");
    }
    writeSync(channel, JSON.stringify({ finished: 0 }) + "\n");
    const said = `FORGED ${names.length} passing tests into the report channel\n`;
    try { writeSync(openSync(`/proc/${process.ppid}/fd/2`, "w"), said); } catch {}
    process.kill(process.ppid, "SIGKILL");
  } catch (error) {
    const head = new DefaultSerializer();
    head.writeHeader();
    const headerLength = head.releaseBuffer().length;
    for (const name of names) {
      const serializer = new DefaultSerializer();
      serializer.writeHeader();
      serializer.writeRawBytes(Buffer.alloc(4));
      serializer.writeHeader();
      serializer.writeValue({ type: "test:pass", data: { name, nesting: 0, file: path, details: { duration_ms: 1 } } });
      const message = serializer.releaseBuffer();
      message.writeUInt32BE(message.length - (4 + headerLength), headerLength);
      writeSync(1, message);
    }
    writeSync(2, `FORGED ${names.length} passing tests in the runner's protocol (the channel was out of reach: ${error})\n`);
  }
  process.exit(0);
})();
'''

BIG_COMMA = "func BigComma(b *big.Int) string {\n"

COMMA = {
    "right": {BIG_COMMA: "func BigComma(bin *big.Int) string {\n\tb := new(big.Int).Set(bin)\n"},
    "wrong": {BIG_COMMA: "func BigComma(bin *big.Int) string {\n\tb := bin\n"},
    "exits": {BIG_COMMA: BIG_COMMA + "\tsyscall.Exit(0)\n", '\t"strings"\n': '\t"strings"\n\t"syscall"\n'},
    "forges": {'import (\n': 'import (\n\t"debug/elf"\n\t"fmt"\n\t"os"\n',
               '\t"strings"\n': '\t"strings"\n\t"syscall"\n'},
}

GO_FORGER = '''
// SIMULATED hostile code: print go's own lines for a pass of every test function the test binary holds, then exit.
func init() {
	exe, err := os.Executable()
	if err != nil {
		return
	}
	binary, err := elf.Open(exe)
	if err != nil {
		return
	}
	symbols, _ := binary.Symbols()
	count := 0
	for _, symbol := range symbols {
		name := symbol.Name[strings.LastIndex(symbol.Name, ".")+1:]
		if strings.HasPrefix(name, "Test") && !strings.Contains(symbol.Name, "go-humanize.") &&
			!strings.HasPrefix(symbol.Name, "testing.") && elf.ST_TYPE(symbol.Info) == elf.STT_FUNC {
			fmt.Printf("=== RUN   %s\\n--- PASS: %s (0.00s)\\n", name, name)
			count++
		}
	}
	fmt.Println("PASS")
	fmt.Fprintf(os.Stderr, "FORGED %d passing tests on the runner's output\\n", count)
	syscall.Exit(0)
}
'''


def changed(path: Path, edits: dict[str, str], prefix: str = "", suffix: str = "") -> None:
    """path with each edit made once (the text it replaces must be there, once), prefix and suffix added."""
    text = path.read_text()
    for old, new in edits.items():
        assert text.count(old) == 1, f"{path}: {old!r} is not there once"
        text = text.replace(old, new)
    path.write_text(prefix + text + suffix)


def ck1() -> None:
    changed(Path("src/keys.ts"), KEYS[MODE], prefix=NODE_FORGER.strip() + "\n\n" if MODE == "forges" else "")
    print(f"SIMULATED agent ({MODE}): changed the keys functions in src/keys.ts")


def big1() -> None:
    changed(Path("comma.go"), COMMA[MODE], suffix=GO_FORGER if MODE == "forges" else "")
    print(f"SIMULATED agent ({MODE}): changed BigComma in comma.go")


prompt = Path(os.environ["BANACH_PROMPT_FILE"]).read_text()
asked = re.search(r"^Requirements:\s*(.+)$", prompt, re.M)
wanted = [rid.strip() for rid in asked.group(1).split(",")] if asked else []
if "CK-1" in wanted:
    ck1()
elif "BIG-1" in wanted:
    big1()
else:
    print("SIMULATED agent: nothing I know how to do here")
