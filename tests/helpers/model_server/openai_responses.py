"""OpenAI Responses: POST /v1/responses (codex; also pi and opencode with an "openai-responses" provider)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

from tests.helpers.model_server import openai_chat
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
from tests.helpers.model_server.sse import chunks, sse

NAME = "openai-responses"
failure, unauthorized = openai_chat.failure, openai_chat.unauthorized  # the same error bodies and headers as Chat Completions


def _append(
    messages: list[Message], role: str, text: str = "", calls: tuple[ToolCall, ...] = (), results: tuple[ToolResult, ...] = ()
) -> None:
    """Consecutive calls of one assistant turn, or results of one tool round, become one message."""
    last = messages[-1] if messages else None
    if last is not None and ((calls and last.role == "assistant" and not text) or (results and last.results)):
        messages[-1] = Message(last.role, last.text, last.calls + calls, last.results + results)
    else:
        messages.append(Message(role, text, calls, results))


def conversation(body: Mapping[str, Any]) -> Conversation:
    system = [text_of(body.get("instructions"))]
    messages: list[Message] = []
    items = body.get("input", [])
    for item in [{"role": "user", "content": items}] if isinstance(items, str) else items:
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role", "user")
            if role in ("system", "developer"):
                system.append(text_of(item.get("content")))
            else:
                _append(messages, "assistant" if role == "assistant" else "user", text_of(item.get("content")))
        elif kind == "function_call":
            arguments = openai_chat._arguments(item.get("arguments"))
            _append(messages, "assistant", calls=(ToolCall(item.get("call_id", ""), item.get("name", ""), arguments),))
        elif kind == "custom_tool_call":
            call = ToolCall(item.get("call_id", ""), item.get("name", ""), custom_input=str(item.get("input", "")))
            _append(messages, "assistant", calls=(call,))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            _append(messages, "user", results=(ToolResult(item.get("call_id", ""), "", text_of(item.get("output"))),))
    tools = tuple(
        ToolSpec(t["name"], t.get("type", "function"), (t.get("parameters") or {}).get("properties", {}))
        for t in body.get("tools", [])
        if t.get("type") in ("function", "custom") and "name" in t
    )
    text_format = (body.get("text") or {}).get("format") or {}
    schema = text_format.get("schema") if text_format.get("type") == "json_schema" else None
    return Conversation(
        str(body.get("model", "")), "\n".join(s for s in system if s), tuple(messages), tools, schema, tuple(all_strings(body))
    )


def wants_stream(body: Mapping[str, Any]) -> bool:
    return bool(body.get("stream"))


def _message_item(item_id: str, text: str, status: str) -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}] if status == "completed" else []
    return {"type": "message", "id": item_id, "status": status, "role": "assistant", "content": content}


def _call_item(call: ToolCall, status: str) -> dict[str, Any]:
    done = status == "completed"
    if call.custom_input is not None:
        return {
            "type": "custom_tool_call",
            "id": "ctc_" + call.id,
            "call_id": call.id,
            "name": call.name,
            "input": call.custom_input if done else "",
            "status": status,
        }
    return {
        "type": "function_call",
        "id": "fc_" + call.id,
        "call_id": call.id,
        "name": call.name,
        "arguments": call.arguments_json if done else "",
        "status": status,
    }


def _output(reply: Reply, response_id: str) -> list[dict[str, Any]]:
    items = [_message_item("msg_" + response_id, reply.text, "completed")] if reply.text else []
    return items + [_call_item(c, "completed") for c in reply.calls]


def _response(response_id: str, model: str, status: str, output: list[dict[str, Any]], usage: Usage | None) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "metadata": {},
        "usage": None
        if usage is None
        else {
            "input_tokens": usage.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.input_tokens + usage.output_tokens,
        },
    }


def response(reply: Reply, model: str, usage: Usage, response_id: str) -> dict[str, Any]:
    return _response(response_id, model, "completed", _output(reply, response_id), usage)


def events(reply: Reply, model: str, usage: Usage, response_id: str) -> Iterator[bytes]:
    sequence = iter(range(1_000_000))

    def event(kind: str, **fields: Any) -> bytes:
        return sse({"type": kind, "sequence_number": next(sequence), **fields}, kind)

    yield event("response.created", response=_response(response_id, model, "in_progress", [], None))
    yield event("response.in_progress", response=_response(response_id, model, "in_progress", [], None))
    index = 0
    if reply.text:
        item_id = "msg_" + response_id
        yield event("response.output_item.added", output_index=index, item=_message_item(item_id, "", "in_progress"))
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        yield event("response.content_part.added", item_id=item_id, output_index=index, content_index=0, part=part)
        for piece in chunks(reply.text):
            yield event(
                "response.output_text.delta", item_id=item_id, output_index=index, content_index=0, delta=piece, logprobs=[]
            )
        yield event(
            "response.output_text.done", item_id=item_id, output_index=index, content_index=0, text=reply.text, logprobs=[]
        )
        yield event(
            "response.content_part.done", item_id=item_id, output_index=index, content_index=0, part={**part, "text": reply.text}
        )
        yield event("response.output_item.done", output_index=index, item=_message_item(item_id, reply.text, "completed"))
        index += 1
    for call in reply.calls:
        added = _call_item(call, "in_progress")
        yield event("response.output_item.added", output_index=index, item=added)
        if call.custom_input is not None:
            for piece in chunks(call.custom_input):
                yield event("response.custom_tool_call_input.delta", item_id=added["id"], output_index=index, delta=piece)
            yield event("response.custom_tool_call_input.done", item_id=added["id"], output_index=index, input=call.custom_input)
        else:
            for piece in chunks(call.arguments_json):
                yield event("response.function_call_arguments.delta", item_id=added["id"], output_index=index, delta=piece)
            yield event(
                "response.function_call_arguments.done", item_id=added["id"], output_index=index, arguments=call.arguments_json
            )
        yield event("response.output_item.done", output_index=index, item=_call_item(call, "completed"))
        index += 1
    yield event("response.completed", response=response(reply, model, usage, response_id))
