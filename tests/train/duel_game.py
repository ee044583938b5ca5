"""A scripted two-player zero-sum game for self-play tests: `First` replies, then `Second` replies;
`First` scores +1 when its reply has an even number of characters, else -1, and `Second` the
opposite (only the first reply matters). Each player sees the topic and, for `Second`, the first
reply."""

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

FIRST, SECOND = "First", "Second"


class DuelInstance(Instance):
    topic: str


@dataclass
class DuelState:
    instance: DuelInstance
    replies: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


def first_reward(text: str) -> float:
    return 1.0 if len(text) % 2 == 0 else -1.0


@register_game("duel")
class DuelGame(Game[DuelInstance, DuelState]):
    name: ClassVar[str] = "duel"
    Config = Strict
    InstanceType = DuelInstance
    default_prompts: dict[str, str] = {"player": "two_turn"}
    ranking: ClassVar = "none"

    def players(self) -> dict[str, str]:
        return {FIRST: "player", SECOND: "player"}

    def reset(self, instance: DuelInstance, seats: dict[str, Seat], rng: random.Random,
              flip: bool = False) -> DuelState:
        return DuelState(instance=instance)

    def to_act(self, state: DuelState) -> list[str]:
        return [[FIRST, SECOND][len(state.replies)]] if len(state.replies) < 2 else []

    def action_spec(self, state: DuelState, player: str) -> ActionSpec:
        return ActionSpec(kind="text", tag="reply")

    def observation(self, state: DuelState, player: str) -> list[Message]:
        msgs = [Message(role="system", content="You play a short word game. Answer with one word."),
                Message(role="user", content=f"You are {player}. The topic is {state.instance.topic}.")]
        if player == SECOND:
            msgs[-1] = Message(role="user", content=msgs[-1].content + f" The first player said: {state.replies[0]}")
        return msgs

    def act(self, state: DuelState, player: str, action: Action) -> Feedback:
        state.replies.append(action.text or "")
        state.events.append(Event(index=len(state.events), player=player, tag="reply", content=action.text or ""))
        return ACCEPTED

    def is_over(self, state: DuelState) -> bool:
        return len(state.replies) >= 2

    def outcome(self, state: DuelState) -> Outcome:
        r = first_reward(state.replies[0])
        return Outcome(rewards={FIRST: r, SECOND: -r}, winner=FIRST if r > 0 else SECOND)

    def events(self, state: DuelState) -> list[Event]:
        return list(state.events)

    def prompt_files(self) -> list[str]:
        return [str(Path(__file__).with_name("two_turn.yaml"))]

    def load_instances(self, dataset: DatasetConfig, base_dir: Path) -> list[DuelInstance]:
        topics = ["rain", "snow", "wind", "sun", "fog", "hail", "ice", "dew"]
        start = 0 if (dataset.split or "train") == "train" else 4
        return [DuelInstance(id=f"{dataset.split or 'train'}-{t}", topic=t) for t in topics[start:start + 4]]
