"""Agent protocol.

An agent never calls a model itself: `act` is a generator that yields lists of `ModelCall`s and
receives their results (in order), finally returning an `Action`. The runner collects the calls
of every live episode and sends them to each model as one batch — this is what makes the engine
batch across episodes without knowing anything about games or agents.
"""

from __future__ import annotations

import logging
import random
from abc import ABC, abstractmethod
from collections.abc import Generator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

from pydantic import Field

from sparring.agents.lookahead import Lookahead
from sparring.errors import EpisodeAbort, PrefillNotSupported
from sparring.gameapi.game import ActionSpec
from sparring.models.topk_scoring import instruction_messages
from sparring.prompts import PromptSet
from sparring.registry import Registry
from sparring.types import (
    Completion,
    GenerateRequest,
    Message,
    ModelCall,
    Sampling,
    ScoreRequest,
    Strict,
    new,
    variant,
)

log = logging.getLogger(__name__)
_MASK64 = (1 << 64) - 1
AgentGen = Generator[list[ModelCall], list[Any], Any]

AGENTS: Registry[type[Agent]] = Registry("agent", scan=["sparring.agents"], marker="@register_agent(")


def register_agent(*roles: str):
    return AGENTS.register(*roles)


def unwrap(result: Any) -> Any:
    """Results of model calls may be exceptions (the runner isolates failing requests)."""
    if isinstance(result, BaseException):
        raise result
    return result


@dataclass
class TurnContext:
    """Everything an agent may use to act once: what it sees and what is asked of it."""

    player: str
    role: str
    observation: list[Message]
    spec: ActionSpec
    # Per-turn seed drawn from the episode's RNG; `next_seed` derives request seeds from it and
    # `rng` is built only if an agent asks for one (a Random costs more than a whole scripted call).
    seed: int
    episode_id: str = ""
    instance_id: str = ""
    flip: bool = False
    turn: int = 0
    # Forks of the game for agents that look ahead (best-of-N); None when the engine offers none.
    lookahead: Lookahead | None = None
    labels: dict[str, Any] = field(default_factory=dict)

    _draws: int = field(default=0, repr=False)

    def next_seed(self) -> int:
        """A new 31-bit seed for each request of this turn (splitmix64 of the turn seed + draw)."""
        z = (self.seed + 0x9E3779B97F4A7C15 * (self._draws + 1)) & _MASK64
        self._draws += 1
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        return (z ^ (z >> 31)) & 0x7FFFFFFF

    @cached_property
    def rng(self) -> random.Random:
        return random.Random(self.seed)

    def request_context(self, tag: str | None = None) -> dict[str, Any]:
        """Labels attached to requests (used by replay/human backends, never sent to APIs)."""
        return {"episode_id": self.episode_id, "instance_id": self.instance_id, "player": self.player,
                "role": self.role, "tag": tag or self.spec.tag, "index": self.turn, "flip": self.flip,
                **self.labels}


class AgentConfig(Strict):
    """Fields shared by every agent in experiment YAML (`agents: {name: {...}}`)."""

    role: str = Field(description="the game role this agent plays (debater, judge, negotiator, ...)")
    agent: str | None = Field(None, description="registered agent behaviour (text, judge, ...); "
                                                "default: the agent registered under the role, else text")
    model: str = Field(description="a models-file name, a Hugging Face id or a model directory")
    prompts: str | None = Field(None, description="prompt set name; default: the game's set for the role")
    prompt_overrides: dict[str, str | list[str]] = Field(default_factory=dict, description="template name -> "
                                                         "replacement text for this agent")
    sampling: dict[str, Any] = Field(default_factory=dict, description="temperature, top_p, max_new_tokens, stop, "
                                     "seed: over the model spec's defaults")
    adapter: str | None = Field(None, description="a LoRA adapter of the model spec to use (its `adapters:` name)")


class Agent(ABC):
    """Base agent. `sampling` is the resolved default (model spec defaults < agent overrides)."""

    Config: ClassVar[type[AgentConfig]] = AgentConfig

    def __init__(self, name: str, config: AgentConfig, sampling: Sampling, prompts: PromptSet):
        self.name, self.config, self.sampling, self.prompts = name, config, sampling, prompts
        # Set once the model refused to continue an assistant prefix (PrefillNotSupported): for the
        # rest of the run (agents live as long as their run) options are scored by instruction.
        self.score_by_instruction = False

    @property
    def model(self) -> str:
        return self.config.model

    @abstractmethod
    def act(self, ctx: TurnContext) -> AgentGen:
        """Generator yielding model calls and returning an Action."""

    # -- helpers for subclasses -------------------------------------------------------------
    def seed_for(self, ctx: TurnContext) -> int:
        return ctx.next_seed()

    def generate(self, ctx: TurnContext, messages: list[Message], *, tag: str, n: int = 1,
                 prefix: str = "", sampling: Sampling | None = None) -> AgentGen:
        """Yield one generate call; return its list of n completions."""
        base = sampling or self.sampling
        s = variant(base, n=n, seed=self.seed_for(ctx))
        req = new(GenerateRequest, messages=messages, sampling=s, assistant_prefix=prefix,
                  adapter=self.config.adapter, context=ctx.request_context(tag))
        (res,) = yield [ModelCall(model=self.model, op="generate", request=req,
                                  meta={"player": ctx.player, "tag": tag, "agent": self.name})]
        out: list[Completion] = unwrap(res)
        return out

    def score(self, ctx: TurnContext, messages: list[Message], options: list[str], *, tag: str,
              prefix: str = "") -> AgentGen:
        """Yield one score call; return log-probs, or the exception object (caller decides)."""
        req = new(ScoreRequest, messages=messages, options=options, assistant_prefix=prefix,
                  adapter=self.config.adapter, context=ctx.request_context(tag))
        (res,) = yield [ModelCall(model=self.model, op="score", request=req,
                                  meta={"player": ctx.player, "tag": tag, "agent": self.name})]
        return res

    def score_options(self, ctx: TurnContext, messages: list[Message], options: list[str], *, tag: str,
                      prefix: str = "") -> AgentGen:
        """Yield score calls; return (log-probs or the exception, method).

        method "score": the options scored as the continuation of `prefix`. "score_instruction":
        the model cannot continue a prefix (llama.cpp, TGI), so the prefix is dropped, the last user
        turn asks for the bare option ("Answer with the letter only: A or B.") and the options are
        scored as the reply's first token. The switch happens on the first refusal and holds for the
        rest of the run (one log line), so later turns spend no refused call.
        """
        if not (prefix and self.score_by_instruction):
            res = yield from self.score(ctx, messages, options, tag=tag, prefix=prefix)
            if not (prefix and isinstance(res, PrefillNotSupported)):
                return res, "score"
            self.score_by_instruction = True
            log.info("agent %r: model %r cannot continue the prefix %r; options are scored by asking for "
                     "them in the instruction", self.name, self.model, prefix)
        res = yield from self.score(ctx, instruction_messages(messages, options), options, tag=tag)
        return res, "score_instruction"


def gather(gens: list[AgentGen]) -> AgentGen:
    """Run several call-yielding generators side by side; their calls go out in one batch.

    Used for simultaneous moves, judge panels and best-of-N evaluation. Returns their results
    in order.
    """
    results: list[Any] = [None] * len(gens)
    active: dict[int, list[ModelCall]] = {}
    for i, g in enumerate(gens):
        try:
            active[i] = next(g)
        except StopIteration as stop:
            results[i] = stop.value
    while active:
        order = list(active.items())
        outs = yield [c for _, calls in order for c in calls]
        pos, active = 0, {}
        for i, calls in order:
            chunk = outs[pos : pos + len(calls)]
            pos += len(calls)
            try:
                active[i] = gens[i].send(chunk)
            except StopIteration as stop:
                results[i] = stop.value
    return results


def abort(reason: str) -> EpisodeAbort:
    return EpisodeAbort(reason)
