"""OpenAI Chat Completions: POST /v1/chat/completions (aider through litellm, qwen-code, opencode/pi "openai-compatible")."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from typing import Any

from tests.helpers.model_server.conversation import (
    Conversation,
    Message,
    Reply,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
    all_strings,
    text_of,
)
from tests.helpers.model_server.script import Error, RateLimit
from tests.helpers.model_server.sse import chunks, sse

NAME = "openai-chat"


def _arguments(raw: Any) -> dict[str, Any]:
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def conversation(body: Mapping[str, Any]) -> Conversation:
    system: list[str] = []
    messages: list[Message] = []
    for raw in body.get("messages", []):
        role = raw.get("role")
        if role in ("system", "developer"):
            system.append(text_of(raw.get("content")))
        elif role == "tool":
            result = ToolResult(raw.get("tool_call_id", ""), raw.get("name", ""), text_of(raw.get("content")))
            if messages and messages[-1].results:  # several tool messages in a row are one turn of results
                last = messages.pop()
                messages.append(Message("user", last.text, (), last.results + (result,)))
            else:
                messages.append(Message("user", "", (), (result,)))
        else:
            calls = tuple(
                ToolCall(
                    c.get("id", ""), c.get("function", {}).get("name", ""), _arguments(c.get("function", {}).get("arguments"))
                )
                for c in raw.get("tool_calls") or []
            )
            messages.append(Message("assistant" if role == "assistant" else "user", text_of(raw.get("content")), calls))
    tools = tuple(
        ToolSpec(t["function"]["name"], "function", (t["function"].get("parameters") or {}).get("properties", {}))
        for t in body.get("tools", [])
        if t.get("type") == "function" and "function" in t
    )
    response_format = body.get("response_format") or {}
    schema = (response_format.get("json_schema") or {}).get("schema") if response_format.get("type") == "json_schema" else None
    return Conversation(str(body.get("model", "")), "\n".join(system), tuple(messages), tools, schema, tuple(all_strings(body)))


def wants_stream(body: Mapping[str, Any]) -> bool:
    return bool(body.get("stream"))


def _finish(reply: Reply) -> str:
    return "tool_calls" if reply.calls else "stop"


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def response(reply: Reply, model: str, usage: Usage, completion_id: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None, "refusal": None}
    if reply.calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_json}} for c in reply.calls
        ]
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": _finish(reply)}],
        "usage": _usage(usage),
        "system_fingerprint": "fp_scripted",
    }


def events(reply: Reply, model: str, usage: Usage, completion_id: str, include_usage: bool) -> Iterator[bytes]:
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return sse(
            {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": "fp_scripted",
                "choices": [choice],
            }
        )

    yield chunk({"role": "assistant", "content": "", "refusal": None})
    for piece in chunks(reply.text):
        yield chunk({"content": piece})
    for index, call in enumerate(reply.calls):
        head = {"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}
        yield chunk({"tool_calls": [head]})
        for piece in chunks(call.arguments_json):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _finish(reply))
    if include_usage:
        yield sse(
            {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": "fp_scripted",
                "choices": [],
                "usage": _usage(usage),
            }
        )
    yield sse("[DONE]")


def reset_text(seconds: int) -> str:
    """OpenAI's x-ratelimit-reset-* duration: "20s", "1m30s", "2h0m0s"."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


def _error(message: str, kind: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def failure(action: RateLimit | Error, model: str) -> tuple[int, dict[str, str], dict[str, Any]]:
    if isinstance(action, Error):
        if action.overloaded:
            return 503, {}, _error("The engine is currently overloaded, please try again later.", "server_error", None)
        return (
            action.status,
            {},
            _error("The server had an error while processing your request. Sorry about that!", "server_error", None),
        )
    reset = reset_text(action.retry_after)
    headers = {
        "retry-after": str(action.retry_after),
        "x-ratelimit-limit-requests": "500",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": reset,
        "x-ratelimit-limit-tokens": "30000",
        "x-ratelimit-remaining-tokens": "30000",
        "x-ratelimit-reset-tokens": reset,
    }
    if action.should_retry is not None:
        headers["x-should-retry"] = "true" if action.should_retry else "false"
    message = (
        f"Rate limit reached for {model} in organization org-scripted on requests per min (RPM): Limit 500, Used 500, "
        f"Requested 1. Please try again in {reset}. Visit https://platform.openai.com/account/rate-limits to learn more."
    )
    return 429, headers, _error(message, "requests", "rate_limit_exceeded")


def unauthorized() -> tuple[int, dict[str, Any]]:
    return 401, _error(
        "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.",
        "invalid_request_error",
        "invalid_api_key",
    )


def models(names: tuple[str, ...]) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [{"id": n, "object": "model", "created": 1735689600, "owned_by": "banach-scripted"} for n in names],
    }
