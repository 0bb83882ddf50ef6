"""The scripted model server speaks each wire format as the real APIs do, both ways, and records what it was asked."""

from __future__ import annotations

import json
import subprocess
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.model_server import LABEL, Error, ModelServer, Nothing, RateLimit, Script, Write

KEY = "test-key-123"
ROOT = "/work/tree"
WRITE = Write({"pkg/hello.py": "print('it''s \"quoted\"')\n$HOME `x`"})
CONTENT = "print('it''s \"quoted\"')\n$HOME `x`"


def call(
    url: str, body: Any = None, *, method: str = "POST", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method=method, headers={"content-type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def events(raw: bytes) -> list[tuple[str | None, str]]:
    """(event name, data) for each server-sent event; a blank line (LF or CRLF) ends one."""
    found = []
    for block in raw.decode().replace("\r\n", "\n").split("\n\n"):
        if not block.strip():
            continue
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        found.append((lines.get("event"), lines["data"]))
    return found


@pytest.fixture
def server() -> Any:
    with ModelServer(Script.of(WRITE, root=ROOT, api_key=KEY)) as running:
        yield running


ANTHROPIC_TOOLS = [
    {"name": "Read", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}},
    {"name": "Write", "input_schema": {"type": "object", "properties": {"file_path": {}, "content": {}}}},
]
ANTHROPIC_HEADERS = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}


def anthropic_body(messages: list[dict[str, Any]], stream: bool = False) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "system": "Working directory: /elsewhere",
        "messages": messages,
        "tools": ANTHROPIC_TOOLS,
        "stream": stream,
    }


def test_anthropic_streams_a_write_call_then_ends_the_turn_once_the_result_arrives(server: ModelServer) -> None:
    prompt = [{"role": "user", "content": "add hello"}]
    status, headers, raw = call(
        server.url + "/v1/messages?beta=true", anthropic_body(prompt, stream=True), headers=ANTHROPIC_HEADERS
    )
    assert status == 200 and headers["x-banach-scripted"] == "1" and headers["content-type"].startswith("text/event-stream")
    stream = events(raw)
    names = [name for name, _ in stream]
    assert names[:2] == ["message_start", "ping"] and names[-2:] == ["message_delta", "message_stop"]
    assert all(json.loads(data)["type"] == name for name, data in stream)
    starts = [json.loads(d)["content_block"] for n, d in stream if n == "content_block_start"]
    assert [b["type"] for b in starts] == ["text", "tool_use"] and starts[1]["name"] == "Write"
    arguments = "".join(json.loads(d)["delta"].get("partial_json", "") for n, d in stream if n == "content_block_delta")
    assert json.loads(arguments) == {"file_path": f"{ROOT}/pkg/hello.py", "content": CONTENT}  # Script.root wins over the prompt
    delta = json.loads(stream[-2][1])
    assert delta["delta"]["stop_reason"] == "tool_use" and delta["usage"]["output_tokens"] > 0
    text = "".join(json.loads(d)["delta"].get("text", "") for n, d in stream if n == "content_block_delta")
    assert text.startswith(LABEL)

    done = prompt + [
        {"role": "assistant", "content": [{"type": "tool_use", "id": starts[1]["id"], "name": "Write", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": starts[1]["id"], "content": "File created"}]},
    ]
    status, _, raw = call(server.url + "/v1/messages", anthropic_body(done), headers=ANTHROPIC_HEADERS)
    answer = json.loads(raw)
    assert (
        answer["stop_reason"] == "end_turn"
        and answer["content"][0]["text"].startswith(LABEL)
        and "pkg/hello.py" in answer["content"][0]["text"]
    )
    assert answer["usage"]["input_tokens"] > 0 and answer["usage"]["output_tokens"] > 0
    assert [r.answer for r in server.model_requests] == ["tool_call Write", "text"]


def test_a_write_refused_until_read_is_followed_by_a_read_and_the_write_again(server: ModelServer) -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": "change hello"}]
    answers = []
    results = iter(["Error: File has not been read yet. Read it first before writing to it.", "1\told", "File written"])
    for _ in range(4):
        answer = json.loads(call(server.url + "/v1/messages", anthropic_body(history), headers=ANTHROPIC_HEADERS)[2])
        uses = [b for b in answer["content"] if b["type"] == "tool_use"]
        answers.append(uses[0]["name"] if uses else "text")
        if not uses:
            break
        history += [
            {"role": "assistant", "content": answer["content"]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": uses[0]["id"], "content": next(results)}]},
        ]
    assert answers == ["Write", "Read", "Write", "text"]


OPENAI_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}}},
        },
    }
]


def test_chat_completions_streams_tool_call_deltas_usage_and_done(server: ModelServer) -> None:
    body = {
        "model": "qwen3-coder",
        "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "add hello"}],
        "tools": OPENAI_TOOLS,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    status, headers, raw = call(server.url + "/v1/chat/completions", body, headers={"authorization": f"Bearer {KEY}"})
    stream = events(raw)
    assert status == 200 and stream[-1] == (None, "[DONE]") and all(name is None for name, _ in stream)
    chunks = [json.loads(d) for _, d in stream[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    head = next(d["tool_calls"][0] for d in deltas if "tool_calls" in d)
    arguments = "".join(d["tool_calls"][0]["function"]["arguments"] for d in deltas if "tool_calls" in d)
    assert head["function"]["name"] == "write_file" and head["id"] and head["type"] == "function"
    assert json.loads(arguments) == {"file_path": f"{ROOT}/pkg/hello.py", "content": CONTENT}
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0

    body = {
        **body,
        "stream": False,
        "messages": body["messages"]
        + [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": head["id"], "type": "function", "function": head["function"]}],
            },
            {"role": "tool", "tool_call_id": head["id"], "content": "Successfully created and wrote to new file"},
        ],
    }
    answer = json.loads(call(server.url + "/v1/chat/completions", body, headers={"authorization": f"Bearer {KEY}"})[2])
    assert answer["object"] == "chat.completion" and answer["choices"][0]["finish_reason"] == "stop"
    assert answer["choices"][0]["message"]["content"].startswith(LABEL) and answer["usage"]["prompt_tokens"] > 0


def test_responses_streams_the_event_sequence_codex_parses_with_a_custom_apply_patch_call(server: ModelServer) -> None:
    tools = [
        {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}},
        {"type": "function", "name": "shell", "parameters": {"type": "object", "properties": {"command": {"type": "array"}}}},
    ]
    body = {
        "model": "gpt-5-codex",
        "instructions": "be codex",
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "add hello"}]}],
        "tools": tools,
        "stream": True,
    }
    status, _, raw = call(server.url + "/v1/responses", body, headers={"authorization": f"Bearer {KEY}"})
    stream = events(raw)
    names = [n for n, _ in stream]
    assert names[:2] == ["response.created", "response.in_progress"] and names[-1] == "response.completed"
    assert [json.loads(d)["sequence_number"] for _, d in stream] == list(range(len(stream)))
    assert (
        "response.custom_tool_call_input.done" in names
        and names.count("response.output_item.added") == names.count("response.output_item.done") == 2
    )
    item = [json.loads(d)["item"] for n, d in stream if n == "response.output_item.done"][1]
    assert item["type"] == "custom_tool_call" and item["name"] == "apply_patch"
    assert item["input"].startswith("*** Begin Patch\n*** Add File: pkg/hello.py\n+print(") and item["input"].endswith(
        "+$HOME `x`\n*** End Patch\n"
    )
    completed = json.loads(stream[-1][1])["response"]
    assert completed["status"] == "completed" and completed["usage"]["total_tokens"] > 0

    body["input"] += [
        {"type": "custom_tool_call", "call_id": item["call_id"], "name": "apply_patch", "input": item["input"]},
        {"type": "custom_tool_call_output", "call_id": item["call_id"], "output": "Success. Updated the following files:"},
    ]
    answer = json.loads(
        call(server.url + "/v1/responses", {**body, "stream": False}, headers={"authorization": f"Bearer {KEY}"})[2]
    )
    assert answer["object"] == "response" and [o["type"] for o in answer["output"]] == ["message"]
    assert answer["output"][0]["content"][0]["text"].startswith(LABEL)


GEMINI_TOOLS = [
    {
        "functionDeclarations": [
            {
                "name": "write_file",
                "parametersJsonSchema": {
                    "type": "object",
                    "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
                },
            }
        ]
    }
]


def test_gemini_streams_a_function_call_over_crlf_sse_and_answers_plain_and_array_forms(server: ModelServer) -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "add hello"}]}], "tools": GEMINI_TOOLS}
    path = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    status, headers, raw = call(server.url + path, body, headers={"x-goog-api-key": KEY})
    assert status == 200 and b"\r\n\r\n" in raw
    chunks = [json.loads(d) for _, d in events(raw)]
    parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
    assert next(p["functionCall"] for p in parts if "functionCall" in p)["args"] == {
        "file_path": f"{ROOT}/pkg/hello.py",
        "content": CONTENT,
    }
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP" and chunks[-1]["usageMetadata"]["totalTokenCount"] > 0
    assert all("finishReason" not in c["candidates"][0] for c in chunks[:-1])

    array = json.loads(call(server.url + path.split("?")[0] + f"?key={KEY}", body)[2])
    assert isinstance(array, list) and array[-1]["candidates"][0]["finishReason"] == "STOP"
    single = json.loads(
        call(server.url + "/v1beta/models/gemini-2.5-pro:generateContent", body, headers={"x-goog-api-key": KEY})[2]
    )
    assert single["candidates"][0]["content"]["role"] == "model" and single["modelVersion"] == "gemini-2.5-pro"
    assert [r.stream for r in server.model_requests] == [True, True, False] and {r.api_key for r in server.requests} == {KEY}


def _schema(props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props}


@pytest.mark.parametrize(
    ("tool", "expected"),
    [
        (
            {"name": "Write", "input_schema": _schema({"file_path": {}, "content": {}})},
            {"file_path": "/cwd/a.txt", "content": "x"},
        ),
        (
            {"name": "write_file", "input_schema": _schema({"absolute_path": {}, "content": {}})},
            {"absolute_path": "/cwd/a.txt", "content": "x"},
        ),
        ({"name": "write", "input_schema": _schema({"filePath": {}, "content": {}})}, {"filePath": "/cwd/a.txt", "content": "x"}),
        ({"name": "write", "input_schema": _schema({"path": {}, "content": {}})}, {"path": "/cwd/a.txt", "content": "x"}),
        (
            {"name": "apply_patch", "input_schema": _schema({"input": {}})},
            {"input": "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch\n"},
        ),
        ({"name": "exec_command", "input_schema": _schema({"cmd": {}})}, {"cmd": "mkdir -p /cwd && printf '%s' x > /cwd/a.txt"}),
        (
            {"name": "shell", "input_schema": _schema({"command": {"type": "array"}})},
            {"command": ["bash", "-lc", "mkdir -p /cwd && printf '%s' x > /cwd/a.txt"]},
        ),
    ],
    ids=["claude", "gemini", "opencode", "pi", "codex-apply-patch-function", "codex-exec-command", "codex-shell"],
)
def test_each_tool_vocabulary_gets_its_own_call_with_the_cwd_the_cli_states(
    tool: dict[str, Any], expected: dict[str, Any]
) -> None:
    body = {
        "model": "m",
        "max_tokens": 10,
        "system": "<env>\nWorking directory: /cwd\n</env>",
        "messages": [{"role": "user", "content": "go"}],
        "tools": [{"name": "Glob", "input_schema": _schema({"pattern": {}})}, tool],
    }
    with ModelServer(Script.of(Write({"a.txt": "x"}))) as server:
        answer = json.loads(call(server.url + "/v1/messages", body)[2])
    use = answer["content"][-1]
    assert use["name"] == tool["name"] and use["input"] == expected


def test_the_shell_command_writes_exactly_the_content_however_it_is_quoted(tmp_path: Path) -> None:
    tools = [{"type": "function", "name": "shell", "parameters": _schema({"command": {"type": "array"}})}]
    body = {"model": "m", "input": f"<environment_context><cwd>{tmp_path}</cwd></environment_context> go", "tools": tools}
    with ModelServer(Script.of(WRITE)) as server:
        answer = json.loads(call(server.url + "/v1/responses", body)[2])
    command = json.loads(answer["output"][-1]["arguments"])["command"]
    subprocess.run(command, check=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert (tmp_path / "pkg" / "hello.py").read_text() == CONTENT


@pytest.mark.parametrize(
    ("system", "block"),
    [
        ("Once you understand the request you MUST:\n... use this *file listing* format:", "pkg/hello.py\n```\nprint("),
        (
            "Describe each change with a *SEARCH/REPLACE block* per the examples below.",
            "pkg/hello.py\n```\n<<<<<<< SEARCH\n=======\nprint(",
        ),
    ],
    ids=["whole", "diff"],
)
def test_a_client_without_tools_gets_aiders_edit_text(system: str, block: str) -> None:
    body = {
        "model": "openai/scripted-model",
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": "add hello"}],
    }
    with ModelServer(Script.of(WRITE)) as server:
        text = json.loads(call(server.url + "/v1/chat/completions", body)[2])["choices"][0]["message"]["content"]
    assert text.startswith(LABEL) and block in text and "\n$HOME `x`\n" in text and text.endswith("```\n")


def test_rate_limits_carry_each_providers_headers_and_body_and_the_retry_is_the_next_turn() -> None:
    anthropic = anthropic_body([{"role": "user", "content": "hi"}])
    chat = {"model": "gpt", "messages": [{"role": "user", "content": "hi"}], "tools": OPENAI_TOOLS}
    gemini = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "tools": GEMINI_TOOLS}
    with ModelServer(
        Script.of(
            RateLimit(retry_after=90, should_retry=False),
            RateLimit(retry_after=90),
            RateLimit(retry_after=90),
            Write({"a.txt": "x"}),
        )
    ) as server:
        status, headers, raw = call(server.url + "/v1/messages", anthropic)
        assert status == 429 and headers["retry-after"] == "90" and headers["x-should-retry"] == "false"
        assert headers["anthropic-ratelimit-requests-remaining"] == "0" and headers[
            "anthropic-ratelimit-requests-reset"
        ].endswith("Z")
        assert int(headers["anthropic-ratelimit-unified-reset"]) > 0 and headers["request-id"].startswith("req_")
        assert json.loads(raw)["error"]["type"] == "rate_limit_error"

        status, headers, raw = call(server.url + "/v1/chat/completions", chat)
        assert status == 429 and headers["x-ratelimit-reset-requests"] == "1m30s" and headers["retry-after"] == "90"
        error = json.loads(raw)["error"]
        assert error["code"] == "rate_limit_exceeded" and "Please try again in 1m30s." in error["message"]

        status, headers, raw = call(server.url + "/v1beta/models/gemini-2.5-flash:generateContent", gemini)
        error = json.loads(raw)["error"]
        assert status == 429 and error["status"] == "RESOURCE_EXHAUSTED" and "retry-after" not in headers
        assert {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "90s"} in error["details"]

        assert call(server.url + "/v1/messages", anthropic)[0] == 200
    assert [r.status for r in server.model_requests] == [429, 429, 429, 200]


@pytest.mark.parametrize(("action", "statuses"), [(Error(), (500, 500, 500)), (Error(overloaded=True), (529, 503, 503))])
def test_errors_and_overload_use_each_providers_status_and_body(action: Error, statuses: tuple[int, int, int]) -> None:
    with ModelServer(Script.of(action)) as server:
        got = (
            call(server.url + "/v1/messages", anthropic_body([{"role": "user", "content": "hi"}])),
            call(server.url + "/v1/responses", {"model": "m", "input": "hi", "tools": OPENAI_TOOLS, "stream": True}),
            call(
                server.url + "/v1beta/models/g:streamGenerateContent?alt=sse",
                {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
            ),
        )
    assert tuple(status for status, _, _ in got) == statuses
    assert json.loads(got[0][2])["error"]["type"] == ("overloaded_error" if action.overloaded else "api_error")
    assert "error" in json.loads(got[1][2]) and json.loads(got[2][2])["error"]["code"] == statuses[2]


def test_a_wrong_key_is_refused_and_the_log_keeps_the_key_but_not_the_auth_headers(server: ModelServer) -> None:
    status, _, raw = call(
        server.url + "/v1/messages",
        anthropic_body([{"role": "user", "content": "hi"}]),
        headers={"x-api-key": "stolen", "anthropic-version": "2023-06-01"},
    )
    assert status == 401 and json.loads(raw)["error"]["type"] == "authentication_error"
    assert (
        call(server.url + "/v1/chat/completions", {"model": "m", "messages": []}, headers={"authorization": "Bearer no"})[0]
        == 401
    )
    assert call(server.url + "/v1beta/models/g:generateContent?key=no", {"contents": []})[0] == 400
    records = server.requests
    assert [r.api_key for r in records] == ["stolen", "no", "no"]
    assert not any(h in r.headers for r in records for h in ("x-api-key", "authorization")) and "key" not in records[2].query
    assert records[0].headers["anthropic-version"] == "2023-06-01"


def test_the_log_shows_the_prompt_count_models_side_requests_and_unknown_endpoints(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    with ModelServer(Script.of(Nothing("first"), Write({"a.txt": "x"}), models=("m-one", "m-two")), log=log) as server:
        title = {"model": "haiku", "max_tokens": 5, "messages": [{"role": "user", "content": "title for: add hello"}]}
        assert json.loads(call(server.url + "/v1/messages", title)[2])["content"][0]["text"].startswith(LABEL)
        schema = {
            "type": "OBJECT",
            "properties": {"reasoning": {"type": "STRING"}, "next_speaker": {"type": "STRING", "enum": ["user", "model"]}},
            "required": ["reasoning", "next_speaker"],
        }
        check = {
            "contents": [{"role": "user", "parts": [{"text": "who speaks next?"}]}],
            "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": schema},
        }
        answer = json.loads(call(server.url + "/v1beta/models/flash:generateContent", check)[2])
        assert json.loads(answer["candidates"][0]["content"]["parts"][0]["text"]) == {"reasoning": LABEL, "next_speaker": "user"}
        first = json.loads(call(server.url + "/v1/messages", anthropic_body([{"role": "user", "content": "add hello"}]))[2])
        second = json.loads(call(server.url + "/v1/messages", anthropic_body([{"role": "user", "content": "add hello"}]))[2])
        assert first["content"][0]["text"] == f"{LABEL} first" and second["content"][-1]["name"] == "Write"
        assert call(server.url + "/api/hello", method="GET")[0] == 404
        models = json.loads(call(server.url + "/v1/models", method="GET")[2])
        assert [m["id"] for m in models["data"]] == ["m-one", "m-two"] and models["object"] == "list"
        gemini_models = json.loads(call(server.url + "/v1beta/models", method="GET", headers={"x-goog-api-key": "k"})[2])
        assert [m["name"] for m in gemini_models["models"]] == ["models/m-one", "models/m-two"]
        assert json.loads(call(server.url + "/v1/messages/count_tokens", title)[2])["input_tokens"] > 0
    assert [r.path for r in server.unknown] == ["/api/hello"]
    assert [r.model for r in server.model_requests] == ["haiku", "flash", "claude-sonnet-4-5", "claude-sonnet-4-5"]
    assert [r.user_text.count("add hello") for r in server.model_requests] == [1, 0, 1, 1]
    assert server.model_requests[2].tools == ("Read", "Write")
    assert len(log.read_text().splitlines()) == len(server.requests) == 8


def test_wait_for_wakes_on_a_request_and_stop_leaves_no_thread() -> None:
    server = ModelServer().start()
    sender = threading.Thread(target=call, args=(server.url + "/v1/models",), kwargs={"method": "GET"})
    sender.start()
    assert server.wait_for(lambda records: len(records) == 1, timeout=10)
    assert not server.wait_for(lambda records: len(records) == 2, timeout=0.05)
    sender.join()
    server.stop()
    assert not any(t.name == "scripted-model-server" for t in threading.enumerate())
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(server.url + "/v1/models", timeout=2)
