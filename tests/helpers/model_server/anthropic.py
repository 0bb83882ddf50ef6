"""Anthropic Messages: POST /v1/messages (claude code, and opencode/pi with an anthropic provider)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
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

NAME = "anthropic"


def conversation(body: Mapping[str, Any]) -> Conversation:
    messages = []
    for raw in body.get("messages", []):
        content = raw.get("content")
        blocks: list[dict[str, Any]] = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        text = "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        calls = tuple(
            ToolCall(b.get("id", ""), b.get("name", ""), b.get("input") or {}) for b in blocks if b.get("type") == "tool_use"
        )
        results = tuple(
            ToolResult(b.get("tool_use_id", ""), "", text_of(b.get("content")), bool(b.get("is_error")))
            for b in blocks
            if b.get("type") == "tool_result"
        )
        messages.append(Message(raw.get("role", "user"), text, calls, results))
    tools = tuple(
        ToolSpec(t["name"], "function", (t.get("input_schema") or {}).get("properties", {}))
        for t in body.get("tools", [])
        if "name" in t and "input_schema" in t
    )
    schema = (body.get("output_format") or {}).get("schema")
    return Conversation(
        str(body.get("model", "")), text_of(body.get("system")), tuple(messages), tools, schema, tuple(all_strings(body))
    )


def wants_stream(body: Mapping[str, Any]) -> bool:
    return bool(body.get("stream"))


def _content(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
    blocks += [{"type": "tool_use", "id": _tool_id(c), "name": c.name, "input": dict(c.arguments)} for c in reply.calls]
    return blocks


def _tool_id(call: ToolCall) -> str:
    return call.id if call.id.startswith("toolu_") else "toolu_" + call.id


def _usage(usage: Usage, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def _stop_reason(reply: Reply) -> str:
    return "tool_use" if reply.calls else "end_turn"


def response(reply: Reply, model: str, usage: Usage, message_id: str) -> dict[str, Any]:
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _content(reply),
        "stop_reason": _stop_reason(reply),
        "stop_sequence": None,
        "usage": _usage(usage, usage.output_tokens),
    }


def events(reply: Reply, model: str, usage: Usage, message_id: str) -> Iterator[bytes]:
    start: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _usage(usage, 1),
    }
    yield sse({"type": "message_start", "message": start}, "message_start")
    yield sse({"type": "ping"}, "ping")
    index = 0
    if reply.text:
        yield sse(
            {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}, "content_block_start"
        )
        for piece in chunks(reply.text):
            yield sse(
                {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}},
                "content_block_delta",
            )
        yield sse({"type": "content_block_stop", "index": index}, "content_block_stop")
        index += 1
    for call in reply.calls:
        block = {"type": "tool_use", "id": _tool_id(call), "name": call.name, "input": {}}
        yield sse({"type": "content_block_start", "index": index, "content_block": block}, "content_block_start")
        for piece in chunks(json.dumps(dict(call.arguments))):
            yield sse(
                {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}},
                "content_block_delta",
            )
        yield sse({"type": "content_block_stop", "index": index}, "content_block_stop")
        index += 1
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": _stop_reason(reply), "stop_sequence": None},
        "usage": {"output_tokens": usage.output_tokens},
    }
    yield sse(delta, "message_delta")
    yield sse({"type": "message_stop"}, "message_stop")


def count_tokens(conversation_tokens: int) -> dict[str, Any]:
    return {"input_tokens": conversation_tokens}


def _error(kind: str, message: str, request_id: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id}


def failure(action: RateLimit | Error, request_id: str) -> tuple[int, dict[str, str], dict[str, Any]]:
    if isinstance(action, Error):
        if action.overloaded:
            return 529, {}, _error("overloaded_error", "Overloaded", request_id)
        return action.status, {}, _error("api_error", "Internal server error", request_id)
    reset = datetime.now(UTC) + timedelta(seconds=action.retry_after)
    stamp = reset.strftime("%Y-%m-%dT%H:%M:%SZ")
    headers = {
        "retry-after": str(action.retry_after),
        "anthropic-ratelimit-unified-status": "rejected",
        "anthropic-ratelimit-unified-reset": str(int(time.time()) + action.retry_after),
    }
    for kind, limit in (("requests", "50"), ("tokens", "80000"), ("input-tokens", "40000"), ("output-tokens", "16000")):
        headers[f"anthropic-ratelimit-{kind}-limit"] = limit
        headers[f"anthropic-ratelimit-{kind}-remaining"] = "0" if kind == "requests" else limit
        headers[f"anthropic-ratelimit-{kind}-reset"] = stamp
    if action.should_retry is not None:
        headers["x-should-retry"] = "true" if action.should_retry else "false"
    message = (
        "This request would exceed the rate limit for your organization of 50 requests per minute. "
        "For details, refer to: https://docs.claude.com/en/api/rate-limits. Please try again later."
    )
    return 429, headers, _error("rate_limit_error", message, request_id)


def unauthorized(request_id: str) -> tuple[int, dict[str, Any]]:
    return 401, _error("authentication_error", "invalid x-api-key", request_id)


def models(names: tuple[str, ...]) -> dict[str, Any]:
    data = [{"type": "model", "id": n, "display_name": n, "created_at": "2025-01-01T00:00:00Z"} for n in names]
    return {"data": data, "has_more": False, "first_id": names[0] if names else None, "last_id": names[-1] if names else None}
