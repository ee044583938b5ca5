"""Coin flip: one player guesses the hidden side of a coin (`GUESS: heads`); 1 point if right.
A reply without a guess is corrected once; after that it stands as a wrong guess."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from sparring.config_io import strict_args
from sparring.gameapi.game import (
    Action,
    ActionSpec,
    DatasetConfig,
    Event,
    Feedback,
    Game,
    Instance,
    Outcome,
    Seat,
    register_game,
)
from sparring.types import Message, Strict
from sparring_coinflip.hooks import HOOKS


class CoinInstance(Instance):
    side: str


@dataclass
class CoinState:
    instance: CoinInstance
    seat: Seat
    guess: str | None = None
    corrected: bool = False
    events: list[Event] = field(default_factory=list)


class SourceArgs(Strict):
    n: int = 4


@register_game("coinflip")
class CoinFlip(Game[CoinInstance, CoinState]):
    name: ClassVar[str] = "coinflip"
    InstanceType = CoinInstance
    default_prompts = {"guesser": "coinflip"}
    ranking: ClassVar = "none"  # a single player: nobody to beat
    hooks = HOOKS  # quality, metrics, play panel, human data: what sparring's other layers ask

    def players(self) -> dict[str, str]:
        return {"Guesser": "guesser"}

    def load_instances(self, dataset: DatasetConfig, base_dir: Path) -> list[CoinInstance]:
        args = strict_args(SourceArgs, dataset.args)
        rng = random.Random(dataset.seed or 0)
        return [CoinInstance(id=f"coin-{i}", side=rng.choice(["heads", "tails"])) for i in range(args.n)]

    def reset(self, instance, seats, rng, flip=False):
        return CoinState(instance=instance, seat=seats["Guesser"])

    def to_act(self, state):
        return [] if state.guess else ["Guesser"]

    def action_spec(self, state, player):
        return ActionSpec(kind="text", tag="guess")

    def observation(self, state, player):
        return [Message(role="system", content=state.seat.prompts.render("rules")),
                Message(role="user", content=state.seat.prompts.render("turn"))]

    def act(self, state, player, action: Action) -> Feedback:
        text = (action.text or "").lower()
        if "guess:" not in text and not state.corrected:
            state.corrected = True
            return Feedback(accepted=False, correction="Reply as GUESS: heads or GUESS: tails.")
        words = text.split("guess:", 1)[1].split() if "guess:" in text else []
        state.guess = words[0] if words else "?"
        state.events.append(Event(index=0, player=player, tag="guess", content=state.guess))
        return Feedback()

    def is_over(self, state):
        return state.guess is not None

    def outcome(self, state):
        won = state.guess == state.instance.side
        return Outcome(rewards={"Guesser": 1.0 if won else 0.0}, metrics={"correct": won})

    def events(self, state):
        return list(state.events)
