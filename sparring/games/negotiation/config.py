"""The settings of a Deal or No Deal experiment (`game_args`): the objective, the turn and error
limits, and the aids for small models (untagged messages, prefilled and revealed proposals, the pool
restated). Apart from the rules (`game.py`) so that a config can be read and checked without them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from sparring.games.negotiation.objectives import NAMED_LAMBDAS, Objective, objective_lambda
from sparring.types import Strict


class DondConfig(Strict):
    """`game_args` of a Deal or No Deal experiment."""

    objective: Objective = "self"
    lam: float | None = Field(None, ge=-1.0, le=1.0, description="weight on the other's points (objective: lambda)")
    max_turns: int = Field(50, ge=2, description="accepted turns before the game ends without a deal")
    max_errors: int = Field(5, ge=1, description="invalid outputs in a row that abort the episode")
    # tools: every prompt asks for the moves as tool calls, say(message) and propose(books, hats, balls)
    # (what TRL's environment_factory gives a learner); a call is played as its text form
    action_format: Literal["text", "json", "tools"] = "text"
    # Small models often forget the `[message]` tag. When true, an untagged text reply is taken as
    # a message (a proposal still needs `[propose]`, and a tagged reply that does not parse is
    # invalid, never a message); off by default, as in lm-selfplay.
    untagged_as_message: bool = False
    variant: int | Literal["random"] = Field(0, description="prompt variant index, or 'random' per episode")
    # Small models rarely write a proposal: with `prefill_proposals`, a reply that must be a proposal
    # (the other player proposed) starts with "[propose] (" already, and so does every reply from
    # turn `propose_after` on; the model only fills in the counts.
    prefill_proposals: bool = False
    propose_after: int | None = Field(None, ge=1, description="with prefill_proposals: turns after which "
                                                               "every reply is a proposal")
    # Not lm-selfplay (whose proposals stay hidden): the first proposal is shown to the other player
    # with what it leaves them, so a deal only needs them to copy it. For models too small to
    # work out the complement of a hidden proposal (the bundled 135M model reaches no deal without).
    reveal_proposals: bool = False
    # Turn prompts restate the pool as counts ("The whole pool is (1 books, 2 hats, 1 balls)"):
    # small models otherwise propose counts the pool does not have.
    remind_pool: bool = False
    # Who speaks first in every episode. Default: the instance's `first_mover`, else a coin flip per
    # episode. The learning suite's GRPO game fixes it so the learner always answers the partner.
    first_player: Literal["Player_1", "Player_2"] | None = None

    @model_validator(mode="after")
    def _check_lam(self) -> DondConfig:
        if self.objective == "lambda" and self.lam is None:
            raise ValueError("objective 'lambda' needs lam (a number in [-1, 1])")
        if self.objective != "lambda" and self.lam is not None and self.lam != NAMED_LAMBDAS[self.objective]:
            raise ValueError(f"lam={self.lam} contradicts objective {self.objective!r} "
                             f"(lam={NAMED_LAMBDAS[self.objective]}); use objective: lambda")
        if isinstance(self.variant, int) and self.variant < 0:
            raise ValueError("variant must be >= 0 or 'random'")
        if self.action_format == "tools" and self.prefill_proposals:
            raise ValueError("prefill_proposals writes the start of a text proposal; with action_format 'tools' "
                             "a proposal is a call to propose")
        return self

    @property
    def weight(self) -> float:
        return objective_lambda(self.objective, self.lam)
