"""Judge: asks questions / reasons in text, and gives a verdict as probabilities over options.

Verdicts come from `Model.score` over the options (teacher-forced, calibrated). Backends that
cannot score fall back to generating "OPTION | NN%" and parsing it; unparseable replies are
retried and finally abort the episode as a recorded failure — never a silent 50/50.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sparring.agents.base import AgentGen, TurnContext, gather, register_agent
from sparring.agents.text_agent import TextAgent, TextAgentConfig
from sparring.choice import parse_choice, probs_from_logprobs
from sparring.errors import EpisodeAbort, ScoringNotSupported
from sparring.gameapi.game import Action
from sparring.types import Message, new


class JudgeConfig(TextAgentConfig):
    verdict: Literal["auto", "score", "generate"] = "auto"
    retries: int = Field(2, ge=0, description="extra attempts when a generated verdict is unparseable")


@register_agent("judge", "choice")
class Judge(TextAgent):
    Config = JudgeConfig
    config: JudgeConfig

    def act(self, ctx: TurnContext) -> AgentGen:
        if ctx.spec.kind == "text":
            return (yield from super().act(ctx))
        return (yield from self.verdict(ctx))

    def verdict(self, ctx: TurnContext) -> AgentGen:
        spec = ctx.spec
        if self.config.verdict in ("auto", "score"):
            res = yield from self.score(ctx, ctx.observation, spec.score_options or spec.options,
                                        tag=spec.tag, prefix=spec.assistant_prefix)
            if not isinstance(res, BaseException):
                probs = probs_from_logprobs(list(res), spec.options)
                return new(Action, probs=probs, meta={"method": "score", "logprobs": list(res)})
            if not (isinstance(res, ScoringNotSupported) and self.config.verdict == "auto"):
                raise res
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
        return Action(probs=mean, meta={"method": "panel", "votes": votes})
