"""A one-decision game with a known optimum, for the online trainers' learning checks.

One player answers one question with one reply. `rule: half`: the reply earns 1 when its text
falls in a fixed half of all texts (`good(text)`: the byte sum of the stripped text is even; an
empty reply earns 0), so a random policy over a large vocabulary succeeds about half the time
(there is signal from the start) and the optimum, 1.0, is reached by always choosing a reply in
that half. `rule: constant`: every reply earns `constant` (fixed returns: a critic's target is
known exactly). The outcome's `correct` metric is the reward as a bool (rule half).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal

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
from sparring.gameapi.hooks import GameHooks, Metric
from sparring.types import Message, Strict

PLAYER = "Solo"
TOPICS = ["rain", "snow", "wind", "sun", "fog", "hail", "ice", "dew", "mist", "frost", "storm", "cloud"]


class OneDecisionConfig(Strict):
    rule: Literal["half", "constant"] = "half"
    constant: float = 1.0


class OneDecisionInstance(Instance):
    topic: str


@dataclass
class OneDecisionState:
    instance: OneDecisionInstance
    reply: str | None = None
    events: list[Event] = field(default_factory=list)


def good(text: str) -> bool:
    """The fixed half of all replies that earns 1: a non-empty text whose bytes sum to an even number."""
    text = text.strip()
    return bool(text) and sum(text.encode("utf-8")) % 2 == 0


@register_game("one_decision")
class OneDecisionGame(Game[OneDecisionInstance, OneDecisionState]):
    name: ClassVar[str] = "one_decision"
    Config = OneDecisionConfig
    InstanceType = OneDecisionInstance
    default_prompts: dict[str, str] = {"player": "one_decision"}
    ranking: ClassVar = "none"
    hooks: ClassVar[GameHooks] = GameHooks(metrics=(Metric("correct", "higher", "wilson", "the reply earned 1"),))
    config: OneDecisionConfig

    def players(self) -> dict[str, str]:
        return {PLAYER: "player"}

    def reset(self, instance: OneDecisionInstance, seats: dict[str, Seat], rng: random.Random,
              flip: bool = False) -> OneDecisionState:
        return OneDecisionState(instance=instance)

    def to_act(self, state: OneDecisionState) -> list[str]:
        return [] if state.reply is not None else [PLAYER]

    def action_spec(self, state: OneDecisionState, player: str) -> ActionSpec:
        return ActionSpec(kind="text", tag="reply")

    def observation(self, state: OneDecisionState, player: str) -> list[Message]:
        return [Message(role="system", content="Answer with one word."),
                Message(role="user", content=f"One word about {state.instance.topic}?")]

    def act(self, state: OneDecisionState, player: str, action: Action) -> Feedback:
        state.reply = action.text or ""
        state.events.append(Event(index=0, player=player, tag="reply", content=state.reply))
        return Feedback()

    def is_over(self, state: OneDecisionState) -> bool:
        return state.reply is not None

    def reward(self, text: str) -> float:
        if self.config.rule == "constant":
            return self.config.constant
        return 1.0 if good(text) else 0.0

    def outcome(self, state: OneDecisionState) -> Outcome:
        reward = self.reward(state.reply or "")
        return Outcome(rewards={PLAYER: reward}, metrics={"correct": reward >= 1.0})

    def events(self, state: OneDecisionState) -> list[Event]:
        return list(state.events)

    def prompt_files(self) -> list[str]:
        return [str(Path(__file__).with_name("one_decision.yaml"))]

    def load_instances(self, dataset: DatasetConfig, base_dir: Path) -> list[OneDecisionInstance]:
        """`train`: the first eight topics; any other split: the last four."""
        split = dataset.split or "train"
        topics = TOPICS[:8] if split == "train" else TOPICS[8:]
        return [OneDecisionInstance(id=f"{split}-{t}", topic=t) for t in topics]
