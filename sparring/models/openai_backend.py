"""`openai` backend: the OpenAI API and every OpenAI-compatible server (vLLM, llama.cpp, TGI,
SGLang, Ollama) through the official SDK's `AsyncOpenAI`.

Requests are issued concurrently on a private event loop, at most `concurrency` in flight, each
retried by `sparring.models.retry` (the SDK's own retries are off).

assistant_prefix:
- `supports_prefill: true` (vLLM, SGLang): the prefix is sent as a final assistant message with
  `continue_final_message=True, add_generation_prompt=False`; the server continues it.
- otherwise (the official API cannot continue a message): the last user message gets an
  instruction to start the reply with the prefix, and the prefix is stripped from the reply if the
  model echoed it. Either way the returned text is only the continuation after the prefix.

Scoring uses the top-k log-probabilities of one generated token; see `topk_scoring`. Without
`supports_prefill`, a score request with an assistant prefix raises `PrefillNotSupported` before any
HTTP call; agents then send `topk_scoring.instruction_request(req)` (the answer asked for in the
instruction) instead.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from sparring.errors import BackendError, ScoringNotSupported
from sparring.models.base import register_backend
from sparring.models.remote import (
    MalformedResponse,
    RemoteArgs,
    RemoteModel,
    instruct_prefix,
    strip_echoed_prefix,
)
from sparring.models.topk_scoring import ScorePlan, clean_top, option_logprobs, plan_options
from sparring.types import Completion, GenerateRequest, Message, ScoreRequest, Usage

PREFILL_BODY = {"continue_final_message": True, "add_generation_prompt": False}


def _drop_leading_chars(tokens: list[tuple[str, float]], n_chars: int) -> list[float]:
    """Logprobs of the tokens after the first `n_chars` characters of the generated text."""
    out, consumed = [], 0
    for token, lp in tokens:
        if consumed >= n_chars:
            out.append(lp)
        consumed += len(token)
    return out


@register_backend("openai")
class OpenAIModel(RemoteModel):
    """Chat Completions API model. `score` works where the server returns `top_logprobs`."""

    provider: ClassVar[str] = "openai"
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"

    class Args(RemoteArgs):
        api_key_env: str = "OPENAI_API_KEY"
        top_logprobs: int = Field(20, ge=1, description="alternatives requested per token for `score`")
        supports_prefill: bool = Field(False, description="server continues a final assistant message (vLLM)")
        logprobs: bool = Field(False, description="request per-token logprobs for generated text")
        max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = Field(
            "max_tokens", description="name of the length limit (o-series models need max_completion_tokens)")
        group_by_prefix: bool = Field(False, description="send a batch's requests ordered by their messages, so "
                                                         "requests sharing a prefix (a story) follow each other: "
                                                         "a server with a single-slot prompt cache (llama.cpp) "
                                                         "then reuses it")

    args: Args

    def _make_client(self, api_key: str) -> Any:
        from openai import AsyncOpenAI

        return AsyncOpenAI(api_key=api_key, base_url=self.args.base_url, timeout=self.args.timeout_s,
                           max_retries=0)

    def _error_types(self) -> tuple[type[BaseException], type[BaseException], type[BaseException]]:
        import openai

        return openai.APIStatusError, openai.APITimeoutError, openai.APIConnectionError

    # -- served LoRA adapters ------------------------------------------------------------------
    def load_adapter(self, name: str, path: str) -> None:
        """Ask a vLLM server to load a LoRA adapter under `name` (vLLM started with
        `--enable-lora` and `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`); requests whose `adapter` is
        `name` (an agent's `adapter:`) are then served by it. `path` is read by the server."""
        import httpx

        from sparring.errors import BackendError
        from sparring.models.secrets import PLACEHOLDER_KEY, redact, resolve_api_key

        secret = resolve_api_key(provider=self.what, env_var=self.args.api_key_env,
                                 key_file=self.args.api_key_file, required=self.args.base_url is None)
        url = (self.args.base_url or self.default_base_url).rstrip("/") + "/load_lora_adapter"
        headers = {"Authorization": f"Bearer {secret.get() if secret else PLACEHOLDER_KEY}"}
        try:
            resp = httpx.post(url, json={"lora_name": name, "lora_path": path}, headers=headers,
                              timeout=self.args.timeout_s)
        except httpx.HTTPError as e:
            raise BackendError(f"{self.what}: cannot load adapter {name!r}: {type(e).__name__}") from None
        if resp.status_code >= 400:
            raise BackendError(f"{self.what}: loading adapter {name!r} failed ({resp.status_code}): "
                               f"{redact(resp.text[:300], [secret])}", status=resp.status_code)

    # -- request building ----------------------------------------------------------------------
    def _messages(self, messages: list[Message], prefix: str) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """Chat messages and extra body fields for a request continuing `prefix`."""
        out = [{"role": m.role, "content": m.content} for m in messages]
        extra = dict(self.args.extra_body)
        if prefix and self.args.supports_prefill:
            out.append({"role": "assistant", "content": prefix})
            extra.update(PREFILL_BODY)
        elif prefix:
            out = instruct_prefix(out, prefix)
        return out, extra

    async def _create(self, client: Any, kwargs: dict[str, Any]) -> Any:
        """One HTTP attempt, validated: a 2xx that is not a chat completion is a malformed reply."""
        from openai.types.chat import ChatCompletion

        resp = await client.chat.completions.create(**kwargs)
        if not isinstance(resp, ChatCompletion):
            raise MalformedResponse(f"expected a chat.completion object, got {str(resp)[:200]!r}")
        if not resp.choices or resp.choices[0].message is None:
            raise MalformedResponse("the response has no choices[0].message")
        return resp

    # -- generate ------------------------------------------------------------------------------
    def _generate(self, requests: list[GenerateRequest]) -> list[Completion]:
        if not self.args.group_by_prefix or len(requests) < 2:
            return self._run_all(self._generate_one, requests)
        order = sorted(range(len(requests)), key=lambda i: [(m.role, m.content) for m in requests[i].messages])
        results = self._run_all(self._generate_one, [requests[i] for i in order])
        out: list[Any] = [None] * len(requests)
        for pos, i in enumerate(order):
            out[i] = results[pos]
        return out

    async def _generate_one(self, req: GenerateRequest) -> Completion:
        s = req.sampling
        messages, extra = self._messages(req.messages, req.assistant_prefix)
        kwargs: dict[str, Any] = {"model": req.adapter or self.args.model, "messages": messages,
                                  self.args.max_tokens_param: s.max_new_tokens, "temperature": s.temperature}
        if s.top_p < 1.0:
            kwargs["top_p"] = s.top_p
        if s.stop:
            kwargs["stop"] = list(s.stop)
        if s.seed is not None:
            kwargs["seed"] = s.seed
        if self.args.logprobs:
            kwargs["logprobs"] = True
        if extra:
            kwargs["extra_body"] = extra
        resp, latency = await self._call(lambda c: self._create(c, kwargs))
        choice = resp.choices[0]
        raw = choice.message.content or ""
        text = raw
        if req.assistant_prefix and not self.args.supports_prefill:
            text = strip_echoed_prefix(raw, req.assistant_prefix)
        logprobs = None
        content = getattr(choice.logprobs, "content", None) if self.args.logprobs else None
        if content:
            tokens = [(t.token or "", float(t.logprob)) for t in content if t.logprob is not None]
            logprobs = _drop_leading_chars(tokens, len(raw) - len(text))
        u = resp.usage
        return Completion(
            text=text,
            finish_reason="length" if choice.finish_reason == "length" else "stop",
            usage=Usage(prompt_tokens=(u.prompt_tokens or 0) if u else 0,
                        completion_tokens=(u.completion_tokens or 0) if u else 0),
            latency_s=latency,
            logprobs=logprobs,
        )

    # -- score ---------------------------------------------------------------------------------
    def _score(self, requests: list[ScoreRequest]) -> list[list[float]]:
        """A request that cannot be scored here fails alone, before any HTTP call, with its reason
        in its place (PrefillNotSupported keeps its kind: its sender can ask by instruction);
        the others of the batch are sent."""
        out: list[Any] = [None] * len(requests)
        todo: list[tuple[int, ScoreRequest, ScorePlan]] = []
        for i, r in enumerate(requests):
            try:
                todo.append((i, r, plan_options(r.options, r.assistant_prefix, prefill=self.args.supports_prefill)))
            except ScoringNotSupported as exc:
                out[i] = type(exc)(f"{self.what}: score request {i}: {exc}")
        results = self._run_all(lambda item: self._score_one(item[1], item[2]), todo)
        for (i, _, _), res in zip(todo, results, strict=True):
            out[i] = res
        return out

    async def _score_one(self, req: ScoreRequest, plan: ScorePlan) -> list[float]:
        messages = [{"role": m.role, "content": m.content} for m in req.messages]
        extra = dict(self.args.extra_body)
        if plan.prefix:
            messages.append({"role": "assistant", "content": plan.prefix})
            extra.update(PREFILL_BODY)
        kwargs: dict[str, Any] = {"model": req.adapter or self.args.model, "messages": messages,
                                  self.args.max_tokens_param: 1,
                                  "temperature": 0.0, "logprobs": True, "top_logprobs": self.args.top_logprobs}
        if extra:
            kwargs["extra_body"] = extra
        resp, _ = await self._call(lambda c: self._create(c, kwargs))
        content = getattr(resp.choices[0].logprobs, "content", None)
        if not content:
            raise ScoringNotSupported(f"{self.what}: the server returned no logprobs for a scoring request; it may "
                                      "not support logprobs/top_logprobs (the judge can answer in text instead)")
        first = content[0]
        top = clean_top([(t.token, t.logprob) for t in (first.top_logprobs or [])] + [(first.token, first.logprob)])
        if not top:
            raise BackendError(f"{self.what}: the server returned no usable top_logprobs for a scoring request")
        return option_logprobs(plan.heads, top)
