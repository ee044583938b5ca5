"""Look-ahead for agents: what the engine lets an agent try on forked copies of the game.

An agent that wants to compare candidate actions (best-of-N, max-min against sampled replies)
asks the engine, through this protocol, to apply each candidate to a fork of the current state
(the game's own rules decide whether it is accepted), to sample opponents' replies on a fork, and
to have the game's evaluator seat judge a fork. The agent owns the strategy (how many candidates,
how scores aggregate); the engine owns forking and turn order. Branched rollouts use the same
primitives.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import Field

from sparring.gameapi.game import Feedback
from sparring.types import Strict


class Lookahead(Protocol):
    """Forks of the game at the acting player's turn (implemented by the engine)."""

    def try_action(self, text: str) -> tuple[Any, Feedback]:
        """A fork of the current state with `text` applied as this player's action, and the game's
        feedback on it (a rejected or aborting candidate is not a real option)."""
        ...

    def opponent_replies(self, state: Any, n: int) -> Any:
        """Generator of model calls returning `n` forks of `state`, each with one sampled reply
        of the next competing player applied ([state] if nobody else acts next)."""
        ...

    def evaluate(self, states: list[Any]) -> Any:
        """Generator of model calls returning, per state, the evaluator's probability for the
        acting player (None per state when the game has no evaluator)."""
        ...


class BestOfN(Strict):
    """Sample `n` candidates in one batched call; keep the one the evaluator likes best for us.

    Each candidate is scored by the evaluator's (judge's) probability for the speaker's side,
    either on the transcript as it stands (`opponents: 0`) or against `opponents` sampled opponent
    replies, aggregated by `aggregate` (mean, or min = max-min selection). Candidates the game
    rejects are never kept while another candidate is valid.
    """

    n: int = Field(4, ge=1)
    opponents: int = Field(0, ge=0)
    aggregate: Literal["mean", "min"] = "mean"
    tags: list[str] = Field(default_factory=lambda: ["speech"])
