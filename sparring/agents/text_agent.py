"""Text-producing agents (debaters, negotiators): scratchpad planning and best-of-N selection."""

from __future__ import annotations

from pydantic import Field

from sparring.agents.base import Agent, AgentConfig, AgentGen, TurnContext, register_agent
from sparring.agents.best_of_n import score_candidates
from sparring.agents.lookahead import BestOfN
from sparring.errors import ConfigError
from sparring.gameapi.game import Action
from sparring.types import Message, Strict, new


class Scratchpad(Strict):
    """Private planning generation before acting; `public: true` prepends the plan to the action."""

    enabled: bool = True
    public: bool = False
    max_new_tokens: int = Field(128, ge=1)


class TextAgentConfig(AgentConfig):
    best_of_n: BestOfN | None = None
    scratchpad: Scratchpad | None = None


@register_agent("text")
class TextAgent(Agent):
    """Answers text actions (speeches, messages, guesses, commands) with one generation, with an
    optional private scratchpad and best-of-N selection. Any game role whose actions are text can
    use it without a role-specific class."""

    Config = TextAgentConfig
    config: TextAgentConfig

    def act(self, ctx: TurnContext) -> AgentGen:
        if ctx.spec.kind != "text":
            raise ConfigError(f"agent {self.name!r} ({self.config.role}) cannot answer a "
                              f"{ctx.spec.kind!r} action ({ctx.spec.tag}); assign a judge to this seat")
        messages = ctx.observation  # never modified: the scratchpad builds new lists
        plan = None
        sp = self.config.scratchpad
        if sp and sp.enabled and ctx.spec.scratchpad_instruction:
            plan_msgs = messages + [Message(role="user", content=ctx.spec.scratchpad_instruction)]
            (plan_c,) = yield from self.generate(
                ctx, plan_msgs, tag="scratchpad",
                sampling=self.sampling.model_copy(update={"max_new_tokens": sp.max_new_tokens}))
            plan = plan_c.text.strip()
            messages = plan_msgs + [Message(role="assistant", content=plan),
                                    Message(role="user", content=ctx.observation[-1].content)]
        bon = self.config.best_of_n
        use_bon = bon is not None and bon.n > 1 and ctx.spec.tag in bon.tags and ctx.lookahead is not None
        n = bon.n if (use_bon and bon is not None) else 1
        comps = yield from self.generate(ctx, messages, tag=ctx.spec.tag, n=n,
                                         prefix=ctx.spec.assistant_prefix)
        texts = [c.text.strip() for c in comps]
        meta: dict = {}
        chosen = 0
        if use_bon:
            assert bon is not None and ctx.lookahead is not None
            scores = yield from score_candidates(bon, ctx.lookahead, texts)
            chosen = max(range(len(texts)), key=lambda i: (scores[i], -i))
            meta.update(candidates=texts, candidate_scores=scores, chosen=chosen)
        text = texts[chosen]
        if plan is not None:
            meta["scratchpad"] = plan
            if sp and sp.public:
                text = f"{plan}\n\n{text}"
        return new(Action, text=text, meta=meta)
