"""The HTTP side: one aiohttp app on 127.0.0.1 in a background thread, routing each wire format and recording every call."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from aiohttp import web

from shared.loop_thread import LoopThread
from tests.helpers.model_server import anthropic, gemini, openai_chat, openai_responses
from tests.helpers.model_server.conversation import Conversation, Reply, count_tokens, usage_for
from tests.helpers.model_server.script import Error, RateLimit, Script, ScriptRunner

AUTH_HEADERS = ("authorization", "x-api-key", "x-goog-api-key", "api-key", "proxy-authorization")
MODEL_WIRES = (anthropic.NAME, openai_chat.NAME, openai_responses.NAME, gemini.NAME)
_GEMINI_CALL = re.compile(r"/models/([^/:]+):(generateContent|streamGenerateContent|countTokens)$")
_MODEL_INFO = re.compile(r"/models/([^/:]+)$")


@dataclass(frozen=True)
class Recorded:
    """One request as the server saw it. `headers` has lowercase names and no credentials; the key is in `api_key`."""

    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: Any  # the parsed JSON body, or None
    api_key: str | None
    wire: str  # anthropic | openai-chat | openai-responses | gemini | count_tokens | models | unknown
    model: str | None
    stream: bool
    status: int
    tools: tuple[str, ...]  # names of the tools the client offered
    user_text: str  # all user-authored text of the conversation, to count how often the prompt arrived
    answer: str  # what the stand-in did: "tool_call Write", "text", "429", "404"

    def as_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "path": self.path,
            "query": dict(self.query),
            "wire": self.wire,
            "model": self.model,
            "stream": self.stream,
            "status": self.status,
            "tools": list(self.tools),
            "answer": self.answer,
            "headers": dict(self.headers),
            "body": self.body,
        }


def _api_key(request: web.Request) -> str | None:
    bearer = request.headers.get("authorization", "")
    if bearer.lower().startswith("bearer "):
        return bearer[7:].strip()
    return (
        request.headers.get("x-api-key")
        or request.headers.get("x-goog-api-key")
        or request.headers.get("api-key")
        or request.query.get("key")
    )


class ModelServer:
    """SCRIPTED MODEL SERVER: a stand-in for an LLM, no model is called. See the package docstring for the API."""

    def __init__(self, script: Script | None = None, *, log: Path | None = None, echo: bool = False,
                 chunk_delay: float = 0.0) -> None:
        self._script = script or Script()
        self._chunk_delay = chunk_delay  # seconds between streamed chunks, to see whether a proxy buffers them
        self._runner_state = ScriptRunner(self._script)
        self._log, self._echo = log, echo
        self._records: list[Recorded] = []
        self._changed = threading.Condition()
        self._ids = 0
        self._thread = LoopThread("scripted-model-server")
        self._web: web.AppRunner | None = None
        self._port: int | None = None

    # life cycle

    def start(self) -> ModelServer:
        self._port = self._thread.start(self._serve())
        return self

    def stop(self) -> None:
        self._thread.stop(self._web.cleanup() if self._web is not None else None)
        self._web = None

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _serve(self) -> int:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        app.on_response_prepare.append(self._label)
        self._web = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._web.setup()
        site = web.TCPSite(self._web, "127.0.0.1", 0)
        await site.start()
        return int(self._web.addresses[0][1])

    @staticmethod
    async def _label(request: web.Request, response: web.StreamResponse) -> None:
        response.headers["x-banach-scripted"] = "1"

    # what tests read

    @property
    def url(self) -> str:
        if self._port is None:
            raise RuntimeError("the scripted model server is not running: call start() or use it as a context manager")
        return f"http://127.0.0.1:{self._port}"

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    @property
    def script(self) -> Script:
        return self._script

    @script.setter
    def script(self, script: Script) -> None:
        """A new script starts again at its first turn."""
        self._script, self._runner_state = script, ScriptRunner(script)

    @property
    def requests(self) -> tuple[Recorded, ...]:
        with self._changed:
            return tuple(self._records)

    @property
    def model_requests(self) -> tuple[Recorded, ...]:
        return tuple(r for r in self.requests if r.wire in MODEL_WIRES)

    @property
    def unknown(self) -> tuple[Recorded, ...]:
        return tuple(r for r in self.requests if r.wire == "unknown")

    def wait_for(self, predicate: Callable[[tuple[Recorded, ...]], bool], timeout: float = 30.0) -> bool:
        """Block until the request log satisfies `predicate` (woken by each request, no polling)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not predicate(tuple(self._records)):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(remaining)
            return True

    # serving

    def _next_id(self, prefix: str) -> str:
        with self._changed:
            self._ids += 1
            return f"{prefix}scripted{self._ids:06d}"

    def _record(self, request: web.Request, body: Any, **fields: Any) -> None:
        headers = {k.lower(): v for k, v in request.headers.items() if k.lower() not in AUTH_HEADERS}
        query = {k: v for k, v in request.query.items() if k != "key"}
        record = Recorded(request.method, request.path, query, headers, body, _api_key(request), **fields)
        with self._changed:
            self._records.append(record)
            self._changed.notify_all()
        if self._log is not None:
            with self._log.open("a") as log:
                log.write(json.dumps(record.as_json()) + "\n")
        if self._echo:
            print(
                f"{record.method} {record.path} wire={record.wire} model={record.model} stream={record.stream} "
                f"status={record.status} tools={list(record.tools)} answer={record.answer}",
                file=sys.stderr,
                flush=True,
            )

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = request.path.rstrip("/")
        gemini_call = _GEMINI_CALL.search(path)
        if request.method == "POST" and path.endswith("/messages/count_tokens"):
            return self._count(request, body, anthropic.conversation(body or {}), anthropic.count_tokens, anthropic)
        if request.method == "POST" and gemini_call and gemini_call.group(2) == "countTokens":
            return self._count(request, body, gemini.conversation(body or {}, gemini_call.group(1)), gemini.count_tokens, gemini)
        if request.method == "POST" and path.endswith("/messages"):
            return await self._model_call(request, body, anthropic, anthropic.conversation(body or {}))
        if request.method == "POST" and path.endswith("/chat/completions"):
            return await self._model_call(request, body, openai_chat, openai_chat.conversation(body or {}))
        if request.method == "POST" and path.endswith("/responses"):
            return await self._model_call(request, body, openai_responses, openai_responses.conversation(body or {}))
        if request.method == "POST" and gemini_call:
            return await self._model_call(request, body, gemini, gemini.conversation(body or {}, gemini_call.group(1)))
        if request.method == "GET" and (path.endswith("/models") or _MODEL_INFO.search(path)):
            return self._models(request, path)
        self._record(request, body, wire="unknown", model=None, stream=False, status=404, tools=(), user_text="", answer="404")
        message = f"SCRIPTED MODEL SERVER: no such endpoint: {request.method} {request.path}"
        return web.json_response({"type": "error", "error": {"type": "not_found_error", "message": message}}, status=404)

    def _denied(self, request: web.Request, wire: ModuleType) -> web.Response | None:
        expected = self._script.api_key
        if expected is None or _api_key(request) == expected:
            return None
        if wire is anthropic:
            status, body = anthropic.unauthorized(self._next_id("req_"))
        else:
            status, body = wire.unauthorized()
        return web.json_response(body, status=status)

    def _count(
        self, request: web.Request, body: Any, conversation: Conversation, render: Callable[[int], Any], wire: ModuleType
    ) -> web.Response:
        denied = self._denied(request, wire)
        tokens = count_tokens(json.dumps(body))
        self._record(
            request,
            body,
            wire="count_tokens",
            model=conversation.model,
            stream=False,
            status=denied.status if denied else 200,
            tools=tuple(t.name for t in conversation.tools),
            user_text=conversation.user_text,
            answer=str(denied.status) if denied else "count",
        )
        return denied or web.json_response(render(tokens))

    def _models(self, request: web.Request, path: str) -> web.Response:
        names = self._script.models
        is_gemini = "v1beta" in path or "x-goog-api-key" in request.headers or "key" in request.query
        single = _MODEL_INFO.search(path)
        wire = gemini if is_gemini else anthropic if "anthropic-version" in request.headers else openai_chat
        denied = self._denied(request, wire)
        self._record(
            request,
            None,
            wire="models",
            model=single.group(1) if single else None,
            stream=False,
            status=denied.status if denied else 200,
            tools=(),
            user_text="",
            answer="models",
        )
        if denied:
            return denied
        if single:
            name = single.group(1)
            info: Any = (
                gemini.model_info(name)
                if is_gemini
                else (anthropic.models((name,))["data"][0] if wire is anthropic else openai_chat.models((name,))["data"][0])
            )
            return web.json_response(info)
        return web.json_response(wire.models(names))

    async def _model_call(
        self, request: web.Request, body: Any, wire: ModuleType, conversation: Conversation
    ) -> web.StreamResponse:
        model = conversation.model or self._script.models[0]
        stream = request.path.endswith(":streamGenerateContent") if wire is gemini else wire.wants_stream(body or {})
        fields = {
            "wire": wire.NAME,
            "model": model,
            "stream": stream,
            "tools": tuple(t.name for t in conversation.tools),
            "user_text": conversation.user_text,
        }
        denied = self._denied(request, wire)
        if denied is not None:
            self._record(request, body, status=denied.status, answer=str(denied.status), **fields)
            return denied
        outcome = self._runner_state.answer(conversation)
        if isinstance(outcome, (RateLimit, Error)):
            request_id = self._next_id("req_")
            status, headers, error = anthropic.failure(outcome, request_id) if wire is anthropic else wire.failure(outcome, model)
            if wire is anthropic:
                headers = {**headers, "request-id": request_id}
            self._record(request, body, status=status, answer=str(status), **fields)
            return web.json_response(error, status=status, headers=headers)
        self._record(request, body, status=200, answer=_describe(outcome), **fields)
        usage = usage_for(json.dumps(body), outcome)
        reply_id = self._next_id({anthropic: "msg_", openai_chat: "chatcmpl-", openai_responses: "resp_", gemini: ""}[wire])
        if not stream:
            return web.json_response(wire.response(outcome, model, usage, reply_id))
        if wire is gemini and request.query.get("alt") != "sse":  # without alt=sse Google streams one JSON array
            return web.json_response(gemini.stream_chunks(outcome, model, usage, reply_id))
        if wire is openai_chat:
            include_usage = bool(((body or {}).get("stream_options") or {}).get("include_usage"))
            chunks: Iterable[bytes] = openai_chat.events(outcome, model, usage, reply_id, include_usage)
        else:
            chunks = wire.events(outcome, model, usage, reply_id)
        response = web.StreamResponse(headers={"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"})
        await response.prepare(request)
        for index, chunk in enumerate(chunks):
            if index and self._chunk_delay:
                await asyncio.sleep(self._chunk_delay)
            await response.write(chunk)
        await response.write_eof()
        return response


def _describe(reply: Reply) -> str:
    return " ".join(f"tool_call {c.name}" for c in reply.calls) or "text"
