"""What the gateway must know about each wire format, and nothing else: where the key travels, which model a call
asks for, how many tokens it used, and when a rate limit resets. Bodies are bytes in and bytes out: the gateway
never re-encodes what it forwards, except to name the model a ladder rung requests."""
from __future__ import annotations

import email.utils
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

# Where clients put a key: the SDKs of Anthropic (x-api-key), OpenAI (Authorization: Bearer), Google (x-goog-api-key,
# or ?key=), Azure (api-key). All are removed before a call goes upstream.
CLIENT_AUTH_HEADERS = ("authorization", "x-api-key", "x-goog-api-key", "api-key", "proxy-authorization")
# Not forwarded in either direction: hop-by-hop headers, and lengths and encodings the gateway's own HTTP stack sets.
HOP_HEADERS = frozenset({"host", "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
                         "upgrade", "content-length", "content-encoding", "accept-encoding"})
LIMITED_STATUSES = frozenset({429, 529})  # 429 everywhere; 529 is Anthropic's "overloaded"
_GEMINI_MODEL = re.compile(r"(/models/)([^/:]+)(:[A-Za-z]+)$")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class Usage:
    """Tokens of one call, split the same way for every wire: input excludes what the cache served or stored."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens


def token_from(headers: Mapping[str, str], query: Mapping[str, str]) -> str | None:
    """The key a client sent, wherever its SDK puts it."""
    bearer = headers.get("authorization", "")
    if bearer.lower().startswith("bearer "):
        return bearer[7:].strip() or None
    return headers.get("x-api-key") or headers.get("x-goog-api-key") or headers.get("api-key") or query.get("key")


def upstream_auth(wire: str, auth: str, key: str) -> dict[str, str]:
    style = {"anthropic": "x-api-key", "openai": "bearer", "gemini": "x-goog-api-key"}[wire] if auth == "auto" else auth
    if style == "none" or not key:
        return {}
    if style == "bearer":
        return {"authorization": f"Bearer {key}"}
    return {style: key}


def is_model_call(method: str, path: str) -> bool:
    """A call that a model answers (and that costs tokens): not a model list, not a token count."""
    path = path.rstrip("/")
    if method != "POST" or path.endswith("/count_tokens") or path.endswith(":countTokens"):
        return False
    return path.endswith(("/messages", "/chat/completions", "/responses", "/completions")) or bool(
        _GEMINI_MODEL.search(path))


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def requested_model(path: str, raw: bytes) -> str | None:
    gemini = _GEMINI_MODEL.search(path)
    if gemini:
        return gemini.group(2)
    body = _json(raw)
    model = body.get("model") if isinstance(body, dict) else None
    return model if isinstance(model, str) else None


def with_model(path: str, raw: bytes, model: str) -> tuple[str, bytes]:
    """The call as it goes upstream when a ladder rung names the model: Gemini's is in the path, the others' in the
    body's "model" field (re-encoded only then)."""
    if _GEMINI_MODEL.search(path):
        return _GEMINI_MODEL.sub(lambda m: f"{m.group(1)}{model}{m.group(3)}", path), raw
    body = _json(raw)
    if isinstance(body, dict) and "model" in body:
        body["model"] = model
        return path, json.dumps(body, separators=(",", ":")).encode()
    return path, raw


def wants_usage_in_stream(path: str, raw: bytes) -> bytes:
    """A streamed Chat Completions call reports its tokens only when asked (stream_options.include_usage); the gateway
    asks, so that every call is counted. The client then sees one more chunk, with empty choices, which the OpenAI
    SDKs and their compatible clients handle."""
    if not path.rstrip("/").endswith("/chat/completions"):
        return raw
    body = _json(raw)
    if not isinstance(body, dict) or not body.get("stream"):
        return raw
    found = body.get("stream_options")
    options: dict[str, Any] = found if isinstance(found, dict) else {}
    if options.get("include_usage"):
        return raw
    body["stream_options"] = {**options, "include_usage": True}
    return json.dumps(body, separators=(",", ":")).encode()


def _events(raw: bytes, content_type: str) -> Iterator[Any]:
    """The JSON objects of a response: one body, a JSON array (Gemini's stream without alt=sse), or SSE data lines."""
    if "event-stream" in content_type:
        for line in raw.decode("utf-8", errors="replace").splitlines():
            if line.startswith("data:"):
                value = _json(line[5:].strip().encode())
                if value is not None:
                    yield value
        return
    value = _json(raw)
    if isinstance(value, list):
        yield from value
    elif value is not None:
        yield value


def _int(mapping: Any, key: str) -> int:
    value = mapping.get(key) if isinstance(mapping, dict) else None
    return int(value) if isinstance(value, (int, float)) else 0


def _usage_of_event(event: Any) -> Usage | None:
    if not isinstance(event, dict):
        return None
    if isinstance(event.get("usageMetadata"), dict):  # Gemini: prompt includes what the cache served
        meta = event["usageMetadata"]
        cached = _int(meta, "cachedContentTokenCount")
        return Usage(_int(meta, "promptTokenCount") - cached,
                     _int(meta, "candidatesTokenCount") + _int(meta, "thoughtsTokenCount"), cached)
    usage = event.get("usage")
    if usage is None and isinstance(event.get("message"), dict):  # Anthropic's message_start
        usage = event["message"].get("usage")
    if usage is None and isinstance(event.get("response"), dict):  # OpenAI Responses' response.completed
        usage = event["response"].get("usage")
    if not isinstance(usage, dict):
        return None
    if "prompt_tokens" in usage or "completion_tokens" in usage:  # Chat Completions: prompt includes cached
        cached = _int(usage.get("prompt_tokens_details"), "cached_tokens")
        return Usage(_int(usage, "prompt_tokens") - cached, _int(usage, "completion_tokens"), cached)
    if "input_tokens_details" in usage or "output_tokens_details" in usage or "total_tokens" in usage:  # Responses
        cached = _int(usage.get("input_tokens_details"), "cached_tokens")
        return Usage(_int(usage, "input_tokens") - cached, _int(usage, "output_tokens"), cached)
    return Usage(_int(usage, "input_tokens"), _int(usage, "output_tokens"),  # Anthropic: input excludes the cache
                 _int(usage, "cache_read_input_tokens"), _int(usage, "cache_creation_input_tokens"))


def usage_of(raw: bytes, content_type: str) -> Usage | None:
    """The tokens a response reports. Streams report counts that only grow (Anthropic's message_delta, Gemini's
    chunks), so each field is the largest seen."""
    found = [usage for usage in map(_usage_of_event, _events(raw, content_type)) if usage is not None]
    if not found:
        return None
    return Usage(*(max(getattr(u, name) for u in found)
                   for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")))


def _seconds(text: str) -> float | None:
    """'20', '20s', '1m30s', '820ms', '6m0s' (OpenAI's reset headers, Google's retryDelay)."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if not parts or "".join(a + u for a, u in parts) != text.replace(" ", ""):
        return None
    return sum(float(amount) * _UNIT[unit] for amount, unit in parts)


def _moment(text: str, now: float) -> float | None:
    """An absolute time: epoch seconds, RFC 3339 (Anthropic), or an HTTP date (Retry-After)."""
    text = text.strip()
    if re.fullmatch(r"\d{9,11}(\.\d+)?", text):
        return float(text)
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return parsed.timestamp() if parsed is not None else None


def resets_at(headers: Mapping[str, str], raw: bytes, now: float) -> float | None:
    """When a rate-limited call may succeed again, from what the provider said: Retry-After first (seconds or a date),
    then the latest of the limit headers that reset (Anthropic's RFC 3339 and epoch, OpenAI's durations), then
    Google's RetryInfo in the body."""
    retry_after = headers.get("retry-after")
    if retry_after:
        seconds = _seconds(retry_after)
        at = now + seconds if seconds is not None else _moment(retry_after, now)
        if at is not None:
            return at
    found = []
    for name, value in headers.items():
        name = name.lower()
        if name.startswith("anthropic-ratelimit-") and name.endswith("-reset"):
            found.append(_moment(value, now))
        elif name.startswith("x-ratelimit-reset-"):
            seconds = _seconds(value)
            found.append(now + seconds if seconds is not None else None)
    times = [at for at in found if at is not None]
    if times:
        return max(times)
    body = _json(raw)
    error = body[0] if isinstance(body, list) and body else body
    details = error.get("error", {}).get("details", []) if isinstance(error, dict) else []
    for detail in details if isinstance(details, list) else []:
        if isinstance(detail, dict) and isinstance(detail.get("retryDelay"), str):
            seconds = _seconds(detail["retryDelay"])
            if seconds is not None:
                return now + seconds
    return None


def is_limited(status: int, raw: bytes) -> bool:
    """A rate limit or an overloaded provider: neither the agent's fault nor progress. A 503 counts only when the
    body says overloaded (OpenAI's and Google's way); a plain 500 is the provider failing, which the CLI may retry."""
    if status in LIMITED_STATUSES:
        return True
    return status == 503 and (b"overload" in raw.lower() or b"UNAVAILABLE" in raw)
