"""Shared machinery of the HTTP API backends (`openai`, `anthropic`).

One `RemoteModel` owns a private event-loop thread (`aio.LoopThread`), an async SDK client
created lazily inside that loop, and a semaphore bounding the requests in flight. Every HTTP
attempt goes through `retry.call_with_retries` with a classifier that understands both SDKs'
exception shapes, so retries, error messages and secret redaction are identical across backends.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from abc import abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar, TypeVar
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, model_validator

from sparring.errors import BackendError, ConfigError, ServerGoneError
from sparring.models.aio import LoopThread
from sparring.models.base import Model
from sparring.models.retry import (
    Failure,
    RetryPolicy,
    call_with_retries,
    is_retryable_status,
    parse_retry_after,
)
from sparring.models.secrets import PLACEHOLDER_KEY, Secret, resolve_api_key

log = logging.getLogger(__name__)
T = TypeVar("T")
X = TypeVar("X")

_OVERFLOW_HINTS = ("context_length_exceeded", "maximum context length", "context length", "prompt is too long",
                   "too many tokens")


class MalformedResponse(Exception):
    """The server answered 2xx but not with the JSON document the protocol requires."""


class RemoteArgs(Model.Args):
    model: str = Field(description="model name as the server knows it")
    base_url: str | None = Field(None, description="server URL; None = the provider's official API")
    api_key_env: str = "API_KEY"
    api_key_file: str | None = Field(None, description="file holding the key; wins over api_key_env")
    concurrency: int = Field(8, ge=1, description="max requests in flight for this model instance")
    timeout_s: float = Field(60.0, gt=0, description="per-attempt HTTP timeout")
    max_retries: int = Field(5, ge=0)
    backoff_initial_s: float = Field(1.0, ge=0)
    backoff_max_s: float = Field(30.0, ge=0)
    extra_body: dict[str, Any] = Field(default_factory=dict, description="extra JSON fields sent as-is")
    circuit_breaker: int = Field(3, ge=1, description="after this many requests in a row that could not "
                                                      "connect (retries included), the server counts as gone: "
                                                      "the run stops admitting episodes")

    @model_validator(mode="before")
    @classmethod
    def _refuse_inline_key(cls, data: Any) -> Any:
        """A key written into args would end up in configs, records and pydantic's error text
        (which quotes inputs); refuse it without ever echoing the value."""
        if isinstance(data, dict) and any(k in data for k in ("api_key", "key", "token")):
            raise ConfigError("API keys do not belong in model args (they would be saved with configs and "
                              "records); set `api_key_env` (an environment variable name) or `api_key_file`",
                              key="api_key")
        return data


def _server_message(body: object, fallback: str) -> str:
    """The human-readable error text from the error shapes of OpenAI, Anthropic, vLLM, FastAPI."""
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            for key in ("message", "detail"):
                if isinstance(err.get(key), str):
                    return err[key]
        if isinstance(err, str):
            return err
        if "detail" in body:
            return str(body["detail"])[:500]
    if isinstance(body, str) and body.strip():
        return body.strip()[:500]
    return fallback


def instruct_prefix(messages: list[dict[str, str]], prefix: str) -> list[dict[str, str]]:
    """For servers that cannot continue an assistant message: ask, in the last user turn, for a
    reply that starts with `prefix` (the echo is removed again by `strip_echoed_prefix`)."""
    out = list(messages)
    if not prefix.strip():
        return out
    note = f"Start your reply with exactly: {prefix.strip()}"
    if out and out[-1]["role"] == "user":
        out[-1] = {"role": "user", "content": f"{out[-1]['content']}\n\n{note}"}
    else:
        out.append({"role": "user", "content": note})
    return out


def strip_echoed_prefix(text: str, prefix: str) -> str:
    """Drop `prefix` from the start of `text` if the model echoed it (instructed mode)."""
    head = prefix.strip()
    body = text.lstrip()
    if head and body.startswith(head):
        text = body[len(head):]
        if prefix[-1:].isspace():
            text = text.lstrip()
    return text


class RemoteModel(Model):
    """Base for API backends; subclasses implement `_make_client` and `_error_types`."""

    concurrent: ClassVar[bool] = True
    provider: ClassVar[str] = "api"
    default_base_url: ClassVar[str] = ""
    Args = RemoteArgs  # type: ignore[assignment]  # a subclass of Model.Args
    args: RemoteArgs

    def __init__(self, name: str = "model", **kwargs: Any):
        super().__init__(name, **kwargs)
        self._loop = LoopThread(f"sparring-{self.provider}-{name}")
        self._client: Any = None
        self._secret: Secret | None = None
        self._sem: asyncio.Semaphore | None = None
        self._rng = random.Random()
        self._connection_failures = 0  # requests in a row that could not connect (circuit breaker)
        self._gone: str | None = None
        self._policy = RetryPolicy(self.args.max_retries, self.args.backoff_initial_s, self.args.backoff_max_s)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(name={self.name!r}, model={self.args.model!r}, "
                f"base_url={self.server!r}, concurrency={self.args.concurrency})")

    __str__ = __repr__

    def secrets(self) -> list[Any]:
        return [self._secret] if self._secret is not None else []

    @property
    def server(self) -> str:
        """The server URL for messages, with any user:password@ credentials masked."""
        url = self.args.base_url or self.default_base_url
        parts = urlsplit(url)
        if "@" in parts.netloc:
            url = urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))
        return url

    @property
    def what(self) -> str:
        """How errors name this model: backend, model name, server."""
        return f"{self.provider} model {self.args.model!r} at {self.server}"

    # -- hooks -------------------------------------------------------------------------------
    @abstractmethod
    def _make_client(self, api_key: str) -> Any:
        """Build the async SDK client (called inside the loop thread, SDK retries off)."""

    @abstractmethod
    def _error_types(self) -> tuple[type[BaseException], type[BaseException], type[BaseException]]:
        """The SDK's (status error, timeout error, connection error) classes."""

    # -- plumbing ----------------------------------------------------------------------------
    def _ensure_client(self) -> Any:
        """Resolve the key (now, not at import) and build the client; runs in the loop thread."""
        if self._client is None:
            secret = resolve_api_key(provider=self.what, env_var=self.args.api_key_env,
                                     key_file=self.args.api_key_file, required=self.args.base_url is None)
            self._secret = secret
            self._client = self._make_client(secret.get() if secret else PLACEHOLDER_KEY)
            self._sem = asyncio.Semaphore(self.args.concurrency)
        return self._client

    def _classify(self, exc: BaseException) -> Failure | None:
        status_error, timeout_error, connection_error = self._error_types()
        if isinstance(exc, status_error):
            status = int(getattr(exc, "status_code", 0) or 0)
            response = getattr(exc, "response", None)
            message = _server_message(getattr(exc, "body", None), str(exc))
            overflow = status in (400, 413, 422) and any(h in message.lower() for h in _OVERFLOW_HINTS)
            headers = getattr(response, "headers", None)
            return Failure(message, is_retryable_status(status), status,
                           parse_retry_after(dict(headers) if headers is not None else None), overflow)
        if isinstance(exc, timeout_error):
            return Failure(f"request timed out after {self.args.timeout_s:g}s", True)
        if isinstance(exc, connection_error):
            cause = exc.__cause__ or exc.__context__
            detail = f" ({type(cause).__name__}: {cause})" if cause else ""
            return Failure(f"connection error{detail}", True)
        if isinstance(exc, json.JSONDecodeError):
            return Failure(f"server returned malformed JSON ({exc.msg} at char {exc.pos})", False)
        if isinstance(exc, MalformedResponse):
            return Failure(f"server returned malformed JSON: {exc}", False)
        return None

    async def _call(self, attempt: Callable[[Any], Awaitable[T]]) -> tuple[T, float]:
        """One logical request: `attempt(client)` under the semaphore, retried by our policy.

        Returns the result and the duration of the successful HTTP attempt (the `latency_s` of a
        Completion: it excludes waiting for a concurrency slot and failed attempts/backoff). The
        semaphore is held per attempt, not during backoff sleeps, so waiting requests do not block
        healthy ones.
        """
        client = self._ensure_client()
        sem = self._sem
        assert sem is not None

        async def once() -> tuple[T, float]:
            async with sem:
                t0 = time.perf_counter()
                result = await attempt(client)
                return result, time.perf_counter() - t0

        if self._gone is not None:
            raise ServerGoneError(self._gone)
        try:
            out = await call_with_retries(once, policy=self._policy, classify=self._classify, what=self.what,
                                          secrets=[self._secret], rng=self._rng)
        except BackendError as e:
            if "connection error" in str(e):
                self._connection_failures += 1
                if self._connection_failures >= self.args.circuit_breaker:
                    self._gone = (f"{self.what} is unreachable: {self._connection_failures} requests in a row "
                                  f"could not connect (last: {e})")
                    raise ServerGoneError(self._gone) from None
            raise
        self._connection_failures = 0
        return out

    def _run_all(self, factory: Callable[[X], Awaitable[T]], items: Sequence[X]) -> list[Any]:
        """`factory(item)` for every item, concurrently on the private loop (blocking the caller).
        A request that fails for good (after its retries) gives its exception in its place; the
        others go on. Errors that concern every request (no API key) and cancellation raise."""
        async def main() -> list[Any]:
            self._ensure_client()  # key errors surface once, and client setup is not timed as latency
            results = await asyncio.gather(*(factory(item) for item in items), return_exceptions=True)
            for r in results:
                if isinstance(r, BaseException) and not isinstance(r, Exception):
                    raise r  # cancellation, KeyboardInterrupt: never swallowed
            return [r if not isinstance(r, Exception) or isinstance(r, BackendError)
                    else BackendError(f"{self.what}: {type(r).__name__}: {r}") for r in results]

        return self._loop.run(main()) if items else []

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None and not self._loop.in_loop_thread():
            try:
                self._loop.run(client.close())
            except (RuntimeError, BackendError):
                pass
            except Exception as exc:  # closing must never raise; the key is not in type names
                log.debug("%s: error while closing client: %s", self.what, type(exc).__name__)
        self._loop.close()
