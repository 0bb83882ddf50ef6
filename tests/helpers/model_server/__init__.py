"""SCRIPTED MODEL SERVER: a stand-in for an LLM, no model is called.

The real agent CLIs (claude code, codex, gemini-cli, opencode, pi, qwen-code, aider) talk to it on 127.0.0.1 through
their base-URL settings, as they would to a provider. It answers from a `Script`: per turn, write given files through
whatever write tool the CLI offers, answer with text, or fail with a provider-exact 429 / 500 / 529. Every answer is
labelled: the header `x-banach-scripted: 1`, and text that starts with "SCRIPTED MODEL SERVER: ...".

Use in a test:

    from tests.helpers.model_server import ModelServer, Script, Write, Nothing, RateLimit, Error

    script = Script.of(Write({"hello.py": "print('hi')\\n"}), api_key="test-key-123")
    with ModelServer(script) as server:
        env = {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "test-key-123"}   # claude code
        ...run the CLI...
        calls = server.model_requests                       # Recorded values, in order
        assert all(r.api_key == "test-key-123" for r in calls)
        assert calls[0].model == "claude-sonnet-4-5"
        assert calls[0].user_text.count(prompt) == 1        # the prompt reached the CLI once
        assert not server.unknown                           # no endpoint the server does not know

Base URLs (`server.url` is "http://127.0.0.1:<port>", no path):
- Anthropic Messages: `server.url` (the SDKs add /v1/messages). POST /v1/messages, also /messages and any prefix
  (query strings such as claude code's ?beta=true are ignored), POST /v1/messages/count_tokens, GET /v1/models.
- OpenAI Chat Completions and Responses: `server.url + "/v1"` (the SDKs add /chat/completions, /responses).
- Gemini: `server.url` (the SDK adds /v1beta/models/{model}:generateContent, :streamGenerateContent?alt=sse,
  :countTokens); GET /v1beta/models lists the script's model names.
Streaming is answered whenever asked (`"stream": true`, or Gemini's :streamGenerateContent), as the real API sends it.
Any other path is answered 404 with a JSON error and recorded with wire "unknown": look at `server.unknown`.

The script (tests.helpers.model_server.script):
- `Write({"path": "content", ...}, reply="Done.", tool=None)`: one tool call per file, then a final text once the
  request carries the tool's result. The tool is chosen from the request's tool list: a write tool (claude `Write`
  {file_path}, gemini/qwen `write_file` {file_path|absolute_path}, opencode `write` {filePath}, pi `write` {path}),
  else `apply_patch` (codex; custom/freeform or function), else a shell tool (`shell` command array, `shell_command`,
  `exec_command` {cmd}). `tool="shell"` forces one. If the write tool answers "read the file first" (claude, opencode
  on an existing file), the stand-in calls the read tool and writes again. A request with no tools whose system
  prompt is aider's gets aider's edit text: the "whole" file-listing format (aider's default for an unknown model)
  or SEARCH/REPLACE when aider runs `--edit-format diff` (an empty SEARCH: creates a file, appends to an existing one).
  Paths: relative paths are joined to `Script(root=...)` or, when not given, to the cwd the CLI states in its prompt
  ("<cwd>..</cwd>", "Working directory: ..", "working in the directory: .."), for tools that want absolute paths.
- `Nothing(text=...)`: a text answer only.
- `RateLimit(retry_after=20, should_retry=None)`: HTTP 429 with each provider's real headers and body. Anthropic:
  retry-after, anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset} (RFC 3339),
  anthropic-ratelimit-unified-status/-reset (epoch), rate_limit_error body. OpenAI: retry-after,
  x-ratelimit-{limit,remaining,reset}-{requests,tokens} (reset like "20s"), code rate_limit_exceeded, "Please try again
  in 20s.". Gemini: no headers (as Google), RESOURCE_EXHAUSTED with a RetryInfo retryDelay "20s". `should_retry`
  sends x-should-retry, which the Anthropic and OpenAI SDKs obey: False makes a CLI give up at once.
- `Error(status=500)` / `Error(overloaded=True)`: 500 api_error / server_error / INTERNAL, or overloaded
  (Anthropic 529 overloaded_error, OpenAI and Gemini 503).
- `Script(turns, root=None, models=("scripted-model",), api_key=None)`, or `Script.of(*turns, **options)`. A turn
  begins with a request whose last message is the user's prompt (not a tool result), so a CLI's retry of a failed
  first request is the next turn: `Script.of(RateLimit(), Write(...))` fails once, then writes. When the turns run
  out the last repeats. Requests without tools (titles, quota probes, commit messages, gemini's next-speaker check)
  are side requests: they get a short text, or a JSON value fitting the requested schema, and do not use a turn
  (but do get the 429/500 while the current turn is one). With `api_key`, any other key gets the provider's 401/400.

The server (`ModelServer(script, log=None, echo=False, chunk_delay=0)`): `start()`/`stop()` or `with`; `url`, `port`; `requests`
(every request), `model_requests` (the four wire formats only), `unknown`; `wait_for(predicate, timeout)` blocks until
the log satisfies predicate(requests). Each `Recorded` has method, path, query, headers (lowercase, credentials removed),
body (parsed JSON), api_key, wire, model, stream, status, tools (names offered), user_text, answer. Assigning
`server.script = ...` starts a new script. `log=` appends each request as a JSON line; `echo=` prints one line each;
`chunk_delay=` waits that many seconds between streamed chunks (to see whether a proxy buffers them).

Standalone, for trying a CLI by hand: `python -m tests.helpers.model_server --write hello.txt "hi" --echo`.
"""

from __future__ import annotations

from tests.helpers.model_server.conversation import LABEL
from tests.helpers.model_server.script import Action, Error, Nothing, RateLimit, Script, Write
from tests.helpers.model_server.server import ModelServer, Recorded

__all__ = ["LABEL", "Action", "Error", "ModelServer", "Nothing", "RateLimit", "Recorded", "Script", "Write"]
