"""A small OpenAI- and Anthropic-compatible HTTP server for testing the API backends over real HTTP.

FastAPI app served by uvicorn in a daemon thread on 127.0.0.1 with an OS-assigned port. Tests
program it: per-request latency, a queue of scripted failures (status codes with Retry-After,
hangs longer than the client timeout, malformed JSON), the reply text and top-logprob tables.
It records every request and the peak number of requests in flight at once: received and not yet
answered, counted before a `serial` server queues them, so the peak is the client's concurrency.
`reset()` starts a new count: a request a previous test left running (a hang, a queued request whose
client timed out) never counts toward the next test's peak.

`Behaviour.drops_prefill` serves like llama-cpp-python's server (as observed in issue #29): it
ignores `continue_final_message`, so a final assistant message is a finished turn and the reply a
new one, and it answers with a toy chat model's first-token log-probabilities (`toy_table`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

ReplyFn = Callable[[dict[str, Any]], str]
TableFn = Callable[[dict[str, Any]], list[tuple[str, float]]]


@dataclass
class Failure:
    """One scripted failure, consumed by the next request that arrives."""

    kind: str                      # "status" | "hang" | "malformed" | "text"
    status: int = 500
    retry_after: str | None = None
    message: str = "scripted failure"
    hang_s: float = 5.0


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    t_arrival: float
    t_done: float | None = None


@dataclass
class Behaviour:
    latency_s: float = 0.0
    failures: deque[Failure] = field(default_factory=deque)
    # Reply text: a fixed string or a function of the request body; None = echo the last user message.
    reply: str | ReplyFn | None = None
    # Top-logprob table for the FIRST generated token: [(token, logprob), ...] (or a function of the body).
    table: list[tuple[str, float]] | TableFn | None = None
    # Behave like a server without logprob support (answers without the `logprobs` field).
    omit_logprobs: bool = False
    # If set, requests must carry this key (Bearer for OpenAI, x-api-key for Anthropic), else 401.
    require_key: str | None = None
    # Serve one request at a time, like llama.cpp's server: the others wait in the server's queue.
    serial: bool = False
    # Like llama-cpp-python's server: ignore continue_final_message and, unless `table` is set,
    # answer from `toy_table` (a new assistant turn always opens after the messages).
    drops_prefill: bool = False


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for m in reversed(messages):
        if m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, list):  # Anthropic content blocks
                return "".join(b.get("text", "") for b in content if isinstance(b, dict))
            return str(content)
    return ""


def _apply_limits(text: str, max_tokens: int | None, stops: list[str]) -> tuple[str, str]:
    """Cut at the first stop string, then at max_tokens whitespace-separated words."""
    reason = "stop"
    cut = min((text.find(s) for s in stops if s and s in text), default=-1)
    if cut >= 0:
        text = text[:cut]
        reason = "stop_sequence"
    words = text.split(" ")
    if max_tokens is not None and len(words) > max_tokens:
        text, reason = " ".join(words[:max_tokens]), "length"
    return text, reason


class FakeAPIServer:
    """Start with `start()`; `url` is the root, `openai_base_url` adds `/v1`."""

    def __init__(self) -> None:
        self.behaviour = Behaviour()
        self.requests: list[Recorded] = []
        self.adapters: dict[str, str] = {}  # LoRA adapters loaded through /v1/load_lora_adapter
        self._serial: asyncio.Lock | None = None
        self.in_flight = 0
        self.peak_in_flight = 0
        self._epoch = 0  # bumped by reset(); in_flight counts only requests of the current epoch
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        self.app = self._build_app()

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> FakeAPIServer:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_config=None, access_log=False, lifespan="off",
                                log_level="warning", timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        name="fake-api-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("fake API server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    # -- programming ---------------------------------------------------------------------------
    def reset(self) -> None:
        with self._lock:
            self.behaviour = Behaviour()
            self.requests.clear()
            self.adapters.clear()
            self.peak_in_flight = 0
            self.in_flight = 0
            self._epoch += 1

    def fail(self, kind: str = "status", *, times: int = 1, **kwargs: Any) -> None:
        """Queue `times` copies of a failure, e.g. fail(status=429, retry_after="1"), fail("hang")."""
        with self._lock:
            for _ in range(times):
                self.behaviour.failures.append(Failure(kind=kind, **kwargs))

    def arrivals(self) -> list[float]:
        with self._lock:
            return [r.t_arrival for r in self.requests]

    # -- app -----------------------------------------------------------------------------------
    def _build_app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def chat(request: Request) -> Response:
            return await self._handle(request, "openai")

        @app.post("/v1/messages")
        async def messages(request: Request) -> Response:
            return await self._handle(request, "anthropic")

        @app.post("/v1/load_lora_adapter")
        async def load_lora_adapter(request: Request) -> Response:
            """vLLM's runtime LoRA loading: remember the adapter, answer as vLLM does."""
            body = await request.json()
            if not body.get("lora_name") or not body.get("lora_path"):
                return JSONResponse({"error": "lora_name and lora_path are required"}, status_code=400)
            with self._lock:
                self.adapters[body["lora_name"]] = body["lora_path"]
            return Response(f"Success: LoRA adapter '{body['lora_name']}' added successfully.")

        return app

    async def _handle(self, request: Request, flavour: str) -> Response:
        with self._lock:
            epoch = self._epoch
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            if self.behaviour.serial:
                async with self._serial_lock():
                    return await self._handle_one(request, flavour)
            return await self._handle_one(request, flavour)
        finally:
            with self._lock:
                if epoch == self._epoch:
                    self.in_flight -= 1

    def _serial_lock(self) -> asyncio.Lock:
        if self._serial is None:  # created inside the server's event loop
            self._serial = asyncio.Lock()
        return self._serial

    async def _handle_one(self, request: Request, flavour: str) -> Response:
        body = await request.json()
        rec = Recorded(request.url.path, body, {k.lower(): v for k, v in request.headers.items()},
                       time.monotonic())
        with self._lock:
            self.requests.append(rec)
            b = self.behaviour
            failure = b.failures.popleft() if b.failures else None
        try:
            if b.latency_s:
                await asyncio.sleep(b.latency_s)
            if b.require_key is not None:
                # OpenAI sends a Bearer token; Anthropic sends x-api-key (newer SDKs: Bearer).
                sent = rec.headers.get("x-api-key") or rec.headers.get("authorization", "").removeprefix("Bearer ")
                if sent != b.require_key:
                    # Real servers echo (part of) the wrong key; the client must redact it.
                    return self._error(flavour, 401, f"Incorrect API key provided: {sent}")
            if failure is not None:
                if failure.kind == "status":
                    headers = {"retry-after": failure.retry_after} if failure.retry_after else None
                    return self._error(flavour, failure.status, failure.message, headers)
                if failure.kind == "hang":
                    await asyncio.sleep(failure.hang_s)
                elif failure.kind == "malformed":
                    return Response('{"id": "x", "choices": [{"message": ', media_type="application/json")
                elif failure.kind == "text":
                    return Response("<html>bad gateway</html>", media_type="text/html")
            reply = b.reply(body) if callable(b.reply) else b.reply
            if reply is None:
                reply = _last_user_text(body.get("messages", []))
            if flavour == "openai":
                return JSONResponse(self._openai_reply(body, reply, b))
            return JSONResponse(self._anthropic_reply(body, reply))
        finally:
            with self._lock:
                rec.t_done = time.monotonic()

    @staticmethod
    def _error(flavour: str, status: int, message: str, headers: dict[str, str] | None = None) -> Response:
        kind = {401: "authentication_error", 429: "rate_limit_error"}.get(status, "api_error")
        if flavour == "openai":
            payload: dict[str, Any] = {"error": {"message": message, "type": kind, "code": None}}
        else:
            payload = {"type": "error", "error": {"type": kind, "message": message}}
        return JSONResponse(payload, status_code=status, headers=headers)

    @staticmethod
    def _openai_reply(body: dict[str, Any], reply: str, b: Behaviour) -> dict[str, Any]:
        stops = body.get("stop") or []
        stops = [stops] if isinstance(stops, str) else stops
        max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
        table = b.table(body) if callable(b.table) else b.table
        if table is None and b.drops_prefill:
            table = toy_table(body.get("messages", []))
        top = sorted(table, key=lambda t: -t[1]) if table else []
        text, reason = _apply_limits(reply, max_tokens, stops)
        words = [w if i == 0 else " " + w for i, w in enumerate(text.split(" "))] if text else []
        if top:  # the first generated token is the most likely entry of the table
            words = [top[0][0]] + [" " + w.lstrip() for w in words]
            if max_tokens is not None and len(words) > max_tokens:
                words, reason = words[:max_tokens], "length"
            text = "".join(words)
        logprobs = None
        if body.get("logprobs") and not b.omit_logprobs:
            k = int(body.get("top_logprobs") or 0)
            content = []
            for i, w in enumerate(words):
                alts = top if (top and i == 0) else [(w, -0.1 * (i + 1))]
                content.append({"token": w, "logprob": alts[0][1], "bytes": list(w.encode()),
                                "top_logprobs": [{"token": t, "logprob": v, "bytes": list(t.encode())}
                                                 for t, v in alts[:k]]})
            logprobs = {"content": content}
        n_prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        return {
            "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "length" if reason == "length" else "stop", "logprobs": logprobs}],
            "usage": {"prompt_tokens": n_prompt, "completion_tokens": len(words),
                      "total_tokens": n_prompt + len(words)},
        }

    @staticmethod
    def _anthropic_reply(body: dict[str, Any], reply: str) -> dict[str, Any]:
        stops = body.get("stop_sequences") or []
        text, reason = _apply_limits(reply, body.get("max_tokens"), stops)
        hit = next((s for s in stops if reason == "stop_sequence" and s in reply), None)
        stop_reason = {"length": "max_tokens", "stop_sequence": "stop_sequence"}.get(reason, "end_turn")
        n_prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        return {
            "id": "msg_fake", "type": "message", "role": "assistant", "model": body.get("model", "fake"),
            "content": [{"type": "text", "text": text}], "stop_reason": stop_reason, "stop_sequence": hit,
            "usage": {"input_tokens": n_prompt, "output_tokens": len(text.split()) if text else 0},
        }


def log_softmax(table: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Turn raw scores into proper log-probabilities (helper for building tables in tests)."""
    m = max(v for _, v in table)
    z = m + math.log(sum(math.exp(v - m) for _, v in table))
    return [(t, v - z) for t, v in table]


LETTER_PROMPT = "letter only"


def toy_table(messages: list[dict[str, Any]]) -> list[tuple[str, float]]:
    """First-token log-probabilities of a toy chat model behind a server that never continues a
    final assistant message (a new turn always opens, whatever `continue_final_message` says).

    Asked for "the letter only" in the last user turn, it answers "A" or "B" with 90% of the
    mass, split by a hash of the whole conversation (different debates, different verdicts), the
    rest on words; asked "yes or no", "yes"/"no" likewise. Anything else, including a conversation
    that ends with an assistant message (a prefix it will not continue), starts a new reply with a
    word, the letters far down the table.
    """
    last = messages[-1] if messages else {}
    text = str(last.get("content", "")) if last.get("role") == "user" else ""
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).digest()
    share = 0.05 + 0.9 * digest[0] / 255
    if LETTER_PROMPT in text:
        pair = ("A", "B")
    elif "yes or no" in text.lower():
        pair = ("yes", "no")
    else:
        return [("Sure", math.log(0.6)), ("The", math.log(0.3)), ("I", math.log(0.09)),
                (" A", math.log(0.004)), (" B", math.log(0.004))]
    return [(pair[0], math.log(0.9 * share)), (pair[1], math.log(0.9 * (1 - share))),
            ("The", math.log(0.06)), ("Answer", math.log(0.03))]
