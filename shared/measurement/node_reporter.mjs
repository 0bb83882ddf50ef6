// Banach's reporter for `node --test`: it runs in the test runner's own process, which starts the test file in a child
// process of its own and reads that child's events; the code under test runs in the child, never here.
//
//   node --test --test-reporter=/path/node_reporter.mjs --test-reporter-destination=stdout FILE   (stdout: the channel)
//
// shared/measurement/suiterun.py starts this process with its standard output as the run's report channel, so the
// child (whose standard output is a pipe to this process) is never handed it. One line per top-level test of the
// file, as shared/measurement/conformance.py reads them: {"test": "FILE::NAME", "when": "call", "outcome": ...};
// {"collect_error": FILE} when the file failed without running a test (it did not load); {"finished": 0} last, once
// the run's events have ended. Human-readable lines (failures, the test's own output) go to standard error.
// BANACH_SUITE_FILE is the file's canon path (its node ids' first part), BANACH_SUITE_PATH where the run has it.

const file = process.env.BANACH_SUITE_FILE ?? "";
const path = process.env.BANACH_SUITE_PATH ?? "";

function write(record) {
  return JSON.stringify(record) + "\n";
}

function described(error) {
  const cause = error?.cause ?? error;
  return String(cause?.stack ?? cause?.message ?? cause ?? "failed").split("\n").slice(0, 20);
}

function say(text) {
  process.stderr.write(text.endsWith("\n") ? text : text + "\n");
}

export default async function* reporter(source) {
  let own = 0;
  let nested = [];  // failures inside the top-level test being run, told with it
  for await (const event of source) {
    const data = event.data ?? {};
    if (event.type === "test:stdout" || event.type === "test:stderr") {
      say(String(data.message ?? ""));
      continue;
    }
    if (event.type !== "test:pass" && event.type !== "test:fail") continue;
    if (data.file !== path || typeof data.name !== "string") continue;  // one file per run: another's is none of it
    if (data.nesting !== 0) {
      if (event.type === "test:fail" && data.details?.error?.failureType !== "subtestsFailed") {
        nested.push(`  ${"  ".repeat(data.nesting - 1)}${data.name}:`, ...described(data.details?.error).map((l) => "      " + l));
      }
      continue;
    }  // one file per run: another file's event is none of this run's
    if (data.name === data.file) {  // the file itself, reported once its process has ended
      if (event.type === "test:fail" && own === 0) {
        say(`not ok ${file}: the file did not run (${data.details?.error?.message ?? "it failed to load"})`);
        yield write({ collect_error: file });
      }
      continue;
    }
    own += 1;
    const outcome = data.skip || data.todo ? "skipped" : event.type === "test:pass" ? "passed" : "failed";
    if (outcome === "failed") {
      const lines = nested.length ? nested : described(data.details?.error).map((line) => "  " + line);
      say(`not ok ${file}::${data.name}\n${lines.slice(0, 60).join("\n")}`);
    }
    nested = [];
    yield write({ test: `${file}::${data.name}`, when: "call", outcome });
  }
  yield write({ finished: 0 });
}
