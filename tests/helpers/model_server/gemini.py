"""Gemini: POST /v1beta/models/{model}:generateContent and :streamGenerateContent (gemini-cli; pi with a google provider)."""

from __future__ import annotations

import json
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

NAME = "gemini"


def _result(part: Mapping[str, Any]) -> ToolResult:
    reply = part.get("response") or {}
    text = reply.get("output", reply.get("error")) if isinstance(reply, Mapping) else reply
    text = text if isinstance(text, str) else json.dumps(reply)
    return ToolResult(part.get("id", ""), part.get("name", ""), text, isinstance(reply, Mapping) and "error" in reply)


def conversation(body: Mapping[str, Any], model: str) -> Conversation:
    messages = []
    for content in body.get("contents", []):
        parts = content.get("parts", [])
        text = "\n".join(p["text"] for p in parts if "text" in p and not p.get("thought"))
        calls = tuple(
            ToolCall(p["functionCall"].get("id", ""), p["functionCall"].get("name", ""), p["functionCall"].get("args") or {})
            for p in parts
            if "functionCall" in p
        )
        results = tuple(_result(p["functionResponse"]) for p in parts if "functionResponse" in p)
        messages.append(Message("assistant" if content.get("role") == "model" else "user", text, calls, results))
    tools = []
    for group in body.get("tools", []):
        for declaration in group.get("functionDeclarations", []):
            schema = (
                declaration.get("parameters")
                or declaration.get("parametersJsonSchema")
                or declaration.get("parameters_json_schema")
                or {}
            )
            tools.append(ToolSpec(declaration["name"], "function", schema.get("properties", {})))
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("response_json_schema") or config.get("responseSchema")
    if schema is None and config.get("responseMimeType") == "application/json":
        schema = {"type": "object"}
    return Conversation(
        model, text_of(body.get("systemInstruction")), tuple(messages), tuple(tools), schema, tuple(all_strings(body))
    )


def _parts(reply: Reply) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"text": reply.text}] if reply.text else []
    return parts + [{"functionCall": {"id": c.id, "name": c.name, "args": dict(c.arguments)}} for c in reply.calls]


def _usage(usage: Usage, output_tokens: int) -> dict[str, Any]:
    return {
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": output_tokens,
        "totalTokenCount": usage.input_tokens + output_tokens,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": usage.input_tokens}],
    }


def _chunk(parts: list[dict[str, Any]], model: str, usage: dict[str, Any], response_id: str, finish: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = "STOP"
    return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": model, "responseId": response_id}


def response(reply: Reply, model: str, usage: Usage, response_id: str) -> dict[str, Any]:
    return _chunk(_parts(reply), model, _usage(usage, usage.output_tokens), response_id, True)


def stream_chunks(reply: Reply, model: str, usage: Usage, response_id: str) -> list[dict[str, Any]]:
    groups: list[list[dict[str, Any]]] = [[{"text": piece}] for piece in chunks(reply.text, 48)]
    if reply.calls:
        groups.append(_parts(Reply("", reply.calls)))
    groups = groups or [[{"text": ""}]]
    partial = _usage(usage, 0)
    partial.pop("candidatesTokenCount")
    partial["totalTokenCount"] = usage.input_tokens
    return [
        _chunk(parts, model, _usage(usage, usage.output_tokens) if last else partial, response_id, last)
        for last, parts in ((i == len(groups) - 1, g) for i, g in enumerate(groups))
    ]


def events(reply: Reply, model: str, usage: Usage, response_id: str) -> Iterator[bytes]:
    for chunk in stream_chunks(reply, model, usage, response_id):
        yield sse(chunk, line_end="\r\n")  # Google ends each event with CRLF CRLF


def count_tokens(tokens: int) -> dict[str, Any]:
    return {"totalTokens": tokens, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": tokens}]}


def _error(code: int, status: str, message: str, details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status, **({"details": details} if details else {})}}


def failure(action: RateLimit | Error, model: str) -> tuple[int, dict[str, str], dict[str, Any]]:
    """Google sends no retry headers: the wait is in the body, as a RetryInfo detail (gemini-cli reads retryDelay)."""
    if isinstance(action, Error):
        if action.overloaded:
            return 503, {}, _error(503, "UNAVAILABLE", "The model is overloaded. Please try again later.")
        return (
            action.status,
            {},
            _error(
                action.status,
                "INTERNAL",
                "An internal error has occurred. Please retry or report in "
                "https://developers.generativeai.google/guide/troubleshooting",
            ),
        )
    violation = {
        "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
        "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
        "quotaDimensions": {"location": "global", "model": model},
        "quotaValue": "10",
    }
    details: list[dict[str, Any]] = [
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [violation]},
        {
            "@type": "type.googleapis.com/google.rpc.Help",
            "links": [
                {"description": "Learn more about Gemini API quotas", "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}
            ],
        },
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{action.retry_after}s"},
    ]
    message = (
        "You exceeded your current quota, please check your plan and billing details. For more information on this error, "
        f"head to: https://ai.google.dev/gemini-api/docs/rate-limits. Please retry in {action.retry_after}s."
    )
    return 429, {}, _error(429, "RESOURCE_EXHAUSTED", message, details)


def unauthorized() -> tuple[int, dict[str, Any]]:
    return 400, _error(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.")


def model_info(name: str) -> dict[str, Any]:
    return {
        "name": f"models/{name}",
        "version": "001",
        "displayName": name,
        "description": "scripted stand-in, no model",
        "inputTokenLimit": 1048576,
        "outputTokenLimit": 65536,
        "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"],
    }


def models(names: tuple[str, ...]) -> dict[str, Any]:
    return {"models": [model_info(n) for n in names]}
