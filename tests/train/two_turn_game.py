"""A scripted two-turn game for credit tests: one player answers twice; only the second reply
changes the reward (1 when it has an even number of characters, else 0), reported as that step's
reward and as the outcome. The first reply never matters."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from sparring.gameapi.game import (
    ACCEPTED,
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

PLAYER = "Solo"


class TwoTurnInstance(Instance):
    topic: str


@dataclass
class TwoTurnState:
    instance: TwoTurnInstance
    replies: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


def second_reward(text: str) -> float:
    return 1.0 if len(text) % 2 == 0 else 0.0


@register_game("two_turn")
class TwoTurnGame(Game[TwoTurnInstance, TwoTurnState]):
    name: ClassVar[str] = "two_turn"
    Config = Strict
    InstanceType = TwoTurnInstance
    default_prompts: dict[str, str] = {"player": "two_turn"}
    ranking: ClassVar = "none"

    def players(self) -> dict[str, str]:
        return {PLAYER: "player"}

    def reset(self, instance: TwoTurnInstance, seats: dict[str, Seat], rng: random.Random,
              flip: bool = False) -> TwoTurnState:
        return TwoTurnState(instance=instance)

    def to_act(self, state: TwoTurnState) -> list[str]:
        return [] if len(state.replies) >= 2 else [PLAYER]

    def action_spec(self, state: TwoTurnState, player: str) -> ActionSpec:
        return ActionSpec(kind="text", tag="reply")

    def observation(self, state: TwoTurnState, player: str) -> list[Message]:
        msgs = [Message(role="system", content="Answer briefly."),
                Message(role="user", content=f"Say something about {state.instance.topic}.")]
        if state.replies:
            msgs += [Message(role="assistant", content=state.replies[0]),
                     Message(role="user", content="And once more.")]
        return msgs

    def act(self, state: TwoTurnState, player: str, action: Action) -> Feedback:
        text = action.text or ""
        state.replies.append(text)
        state.events.append(Event(index=len(state.events), player=player, tag="reply", content=text))
        return Feedback(reward=second_reward(text)) if len(state.replies) == 2 else ACCEPTED

    def is_over(self, state: TwoTurnState) -> bool:
        return len(state.replies) >= 2

    def outcome(self, state: TwoTurnState) -> Outcome:
        return Outcome(rewards={PLAYER: second_reward(state.replies[1])})

    def events(self, state: TwoTurnState) -> list[Event]:
        return list(state.events)

    def prompt_files(self) -> list[str]:
        return [str(Path(__file__).with_name("two_turn.yaml"))]

    def load_instances(self, dataset: DatasetConfig, base_dir: Path) -> list[TwoTurnInstance]:
        topics = ["rain", "snow", "wind", "sun", "fog", "hail", "ice", "dew"]
        start = 0 if (dataset.split or "train") == "train" else 4
        return [TwoTurnInstance(id=f"{dataset.split or 'train'}-{t}", topic=t) for t in topics[start:start + 4]]
