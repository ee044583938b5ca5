"""The harness of a sparring seat: one chat completion per turn, run in-process.

verifiers runs an agent's program (a harness) whose model calls go through its interception
server, which records them on the trace (tokens and logprobs when training). A game seat needs no
program: each turn, the engine has already built exactly what the seat is shown (the game's
observation, with a re-prompt or the judge's verdict instruction where it applies), so the harness
sends those messages as one request to the interception endpoint — verifiers allows a harness to
run its loop in-process as long as every model call goes through that endpoint — and the trace
holds what the model saw and sampled. A turn's messages replace the conversation (they are the
whole view, not an addition to it): where they extend the previous request the trace keeps one
branch, where the game re-renders the view a new branch starts.

The request's sampling (the seat agent's `max_new_tokens`, temperature, stop strings) comes from
the engine's request (`SeatHarness.expect`); the run's own sampling overrides it (prime-rl's
`sampling.*`). No seed is sent: the episodes of a GRPO group must differ.
"""

from __future__ import annotations

from typing import Any

import httpx
import verifiers.v1 as vf
from verifiers.v1.dialects.chat import message_to_wire
from verifiers.v1.runtimes import ProgramResult

from sparring.types import Sampling


class SeatHarnessConfig(vf.HarnessConfig):
    """No settings: the seat's sampling comes from the game's requests, the model from the run."""


def sampling_body(sampling: Sampling) -> dict[str, Any]:
    """The OpenAI request fields for sparring's sampling (no seed: see the module docstring)."""
    body: dict[str, Any] = {"max_tokens": sampling.max_new_tokens, "temperature": sampling.temperature}
    if sampling.top_p < 1.0:
        body["top_p"] = sampling.top_p
    if sampling.stop:
        body["stop"] = list(sampling.stop)
    return body


class SeatHarness(vf.Harness[SeatHarnessConfig]):
    """One request per turn with the turn's messages as the whole conversation."""

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    def __init__(self, config: SeatHarnessConfig) -> None:
        super().__init__(config)
        self._sampling: dict[str, Any] = {}

    def expect(self, sampling: Sampling) -> None:
        """The next turn's sampling (one agent, one episode: each agent has its own harness)."""
        self._sampling = sampling_body(sampling)

    async def launch(self, ctx: Any, trace: Any, runtime: Any, endpoint: str, secret: str,
                     mcp_urls: dict[str, str], data: vf.TaskData, **kwargs: Any) -> ProgramResult:
        prompt = data.prompt
        messages = list(prompt) if isinstance(prompt, list) else [vf.UserMessage(content=prompt or "")]
        if data.system_prompt:
            messages.insert(0, vf.SystemMessage(content=data.system_prompt))
        body = {"model": ctx.model, "messages": [message_to_wire(m) for m in messages], **self._sampling}
        try:
            async with httpx.AsyncClient(timeout=httpx.Timeout(None, connect=30.0)) as client:
                reply = await client.post(endpoint.rstrip("/") + "/chat/completions", json=body,
                                          headers={"Authorization": f"Bearer {secret}"})
        except httpx.HTTPError as e:
            return ProgramResult(exit_code=1, stdout="", stderr=f"{type(e).__name__}: {e}")
        if reply.status_code >= 400:
            return ProgramResult(exit_code=1, stdout="", stderr=f"HTTP {reply.status_code}: {reply.text[-2000:]}")
        return ProgramResult(exit_code=0, stdout="", stderr="")

    async def resume(self, ctx: Any, trace: Any, runtime: Any, endpoint: str, secret: str,
                     mcp_urls: dict[str, str], data: vf.TaskData, messages: vf.Messages,
                     tool_interception_url: str | None = None) -> ProgramResult:
        """A later turn: its messages are the whole view (not appended to the trace's branch)."""
        return await self.launch(ctx, trace, runtime, endpoint, secret, mcp_urls,
                                 data.model_copy(update={"prompt": list(messages), "system_prompt": None}))
