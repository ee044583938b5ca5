"""Judge: asks questions / reasons in text, and gives a verdict as probabilities over options.

Verdicts come from `Model.score` over the options (teacher-forced, calibrated; by instruction on
servers that cannot continue the verdict prefix, see `Agent.score_options`). When scoring fails
for a reason a retry cannot fix (the backend cannot score, the server refuses logprobs), a judge
with `verdict: auto` says so once (a warning) and gives every later verdict of the run by
generating "OPTION | NN%" and parsing it; unparseable replies are retried and finally abort the
episode as a recorded failure — never a silent 50/50. Each verdict records its `method` and, when
scored, the probability `mass` its options held before normalisation.
"""

from __future__ import annotations

import logging
import math
from typing import Literal

from pydantic import Field

from sparring.agents.base import AgentGen, TurnContext, gather, register_agent
from sparring.agents.text_agent import TextAgent, TextAgentConfig
from sparring.choice import parse_choice, probs_from_logprobs
from sparring.errors import BackendError, ContextOverflowError, EpisodeAbort, ScoringNotSupported
from sparring.gameapi.game import Action
from sparring.types import Message, new

log = logging.getLogger(__name__)
# HTTP statuses of a scoring request that the same request would get again (the server rejects
# logprobs or the endpoint): falling back is right; 401/403/429/5xx are not about scoring.
_PERMANENT_STATUSES = frozenset({400, 404, 405, 422, 501})


def scoring_unavailable(err: BaseException) -> bool:
    """Whether a failed score call means this model cannot score (a retry would fail again)."""
    if isinstance(err, ScoringNotSupported):
        return True
    return (isinstance(err, BackendError) and not isinstance(err, ContextOverflowError) and not err.retryable
            and err.status in _PERMANENT_STATUSES)


class JudgeConfig(TextAgentConfig):
    verdict: Literal["auto", "score", "generate"] = "auto"
    retries: int = Field(2, ge=0, description="extra attempts when a generated verdict is unparseable")


@register_agent("judge", "choice")
class Judge(TextAgent):
    Config = JudgeConfig
    config: JudgeConfig
    # Why scoring was given up for the rest of the run (None while scoring is tried).
    scoring_off: str | None = None

    def act(self, ctx: TurnContext) -> AgentGen:
        if ctx.spec.kind == "text":
            return (yield from super().act(ctx))
        return (yield from self.verdict(ctx))

    def verdict(self, ctx: TurnContext) -> AgentGen:
        spec = ctx.spec
        mode = self.config.verdict
        if mode == "score" or (mode == "auto" and self.scoring_off is None):
            res, method = yield from self.score_options(ctx, ctx.observation, spec.score_options or spec.options,
                                                        tag=spec.tag, prefix=spec.assistant_prefix)
            if not isinstance(res, BaseException):
                probs = probs_from_logprobs(list(res), spec.options)
                mass = sum(math.exp(v) for v in res)
                return new(Action, probs=probs, meta={"method": method, "logprobs": list(res), "mass": mass})
            if mode == "score" or not scoring_unavailable(res):
                raise res
            if self.scoring_off is None:  # one warning per judge and run, not one per verdict
                self.scoring_off = f"{type(res).__name__}: {res}"
                log.warning("judge %r (model %r) cannot score verdicts (%s); its verdicts in this run are read "
                            "from generated text instead", self.name, self.model, self.scoring_off)
        messages = list(ctx.observation)
        if spec.fallback_instruction:
            messages.append(Message(role="user", content=spec.fallback_instruction))
        replies = []
        example = f"'{spec.options[0]} | 70%'"
        for _ in range(self.config.retries + 1):
            (comp,) = yield from self.generate(ctx, messages, tag=f"{spec.tag}_text")
            replies.append(comp.text)
            parsed = parse_choice(comp.text, spec.options, bare_confidence=None)  # a probability is required
            if parsed is not None:
                return Action(probs=parsed, meta={"method": "generate", "reply": comp.text,
                                                 "attempts": len(replies)})
            messages = messages + [Message(role="assistant", content=comp.text),
                                   Message(role="user", content=f"Give your verdict with a probability, "
                                                                f"exactly like {example}.")]
        bare = parse_choice(replies[-1], spec.options)  # an answer named without a probability
        if bare is not None:
            return Action(probs=bare, meta={"method": "generate_bare", "reply": replies[-1],
                                            "attempts": len(replies)})
        raise EpisodeAbort(f"judge {self.name!r}: unparseable verdict after {len(replies)} attempts "
                           f"(last reply: {replies[-1][:200]!r}); expected e.g. '{spec.options[0]} | 70%'")


class Panel(Judge):
    """Several judges acting as one seat: verdict = mean probability; each vote recorded.

    Text turns (questions, reasoning) are produced by the first judge.
    """

    def __init__(self, name: str, judges: list[Judge]):
        first = judges[0]
        super().__init__(name, first.config, first.sampling, first.prompts)
        self.judges = judges

    def act(self, ctx: TurnContext) -> AgentGen:
        if ctx.spec.kind == "text":
            return (yield from self.judges[0].act(ctx))
        actions = yield from gather([j.verdict(ctx) for j in self.judges])
        opts = ctx.spec.options
        mean = {o: sum(a.probs[o] for a in actions) / len(actions) for o in opts}
        votes = {j.name: a.probs for j, a in zip(self.judges, actions, strict=True)}
        methods = {j.name: a.meta.get("method") for j, a in zip(self.judges, actions, strict=True)}
        return Action(probs=mean, meta={"method": "panel", "votes": votes, "vote_methods": methods})
