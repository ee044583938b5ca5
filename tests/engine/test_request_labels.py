"""`Game.request_labels`: private facts (an environment's expert action) reach the acting player's
model requests as `context`, never its messages nor the record — how a scripted expert policy
replays demonstrations without the policy being shown the answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from sparring.engine.play import Arena
from sparring.gameapi.game import (
    Action,
    ActionSpec,
    DatasetConfig,
    Event,
    Feedback,
    Game,
    Instance,
    Outcome,
    register_game,
)
from sparring.models.scripted import ScriptedModel
from sparring.types import Message


@dataclass
class _State:
    secret: str
    replies: list[str] = field(default_factory=list)


@register_game("label_probe")
class _LabelProbe(Game[Instance, _State]):
    """Two turns; the answer of each is a private label."""

    name: ClassVar[str] = "label_probe"
    ranking: ClassVar = "none"

    def players(self):
        return {"solo": "solo"}

    def load_instances(self, dataset: DatasetConfig, base_dir: Path):
        return [Instance(id=f"probe-{i}") for i in range(2)]

    def reset(self, instance, seats, rng, flip=False):
        return _State(secret=f"answer-of-{instance.id}")

    def to_act(self, state):
        return [] if len(state.replies) >= 2 else ["solo"]

    def action_spec(self, state, player):
        return ActionSpec(kind="text", tag="move")

    def observation(self, state, player):
        return [Message(role="user", content=f"Move {len(state.replies) + 1}?")]

    def request_labels(self, state, player):
        return {"expert": f"{state.secret}-{len(state.replies)}"}

    def act(self, state, player, action: Action) -> Feedback:
        state.replies.append(action.text or "")
        return Feedback()

    def is_over(self, state):
        return len(state.replies) >= 2

    def outcome(self, state):
        return Outcome(rewards={"solo": 1.0})

    def events(self, state):
        return [Event(index=i, player="solo", tag="move", content=r) for i, r in enumerate(state.replies)]


def test_request_labels_reach_the_request_context_but_not_the_messages():
    expert = ScriptedModel("expert", mode="callable", function=lambda req: req.context["expert"])
    config = {"game": "label_probe", "dataset": {"name": "probe"},
              "agents": {"me": {"role": "solo", "model": "expert", "prompts": "empty"}},
              "tournament": {"type": "self_play", "participants": ["me"]}}
    with Arena.from_config(config, models={"expert": expert}) as arena:
        records = arena.play(arena.jobs())
    assert len(records) == 2
    for rec in records:
        replies = [c.completions[0].text for c in rec.calls]
        assert replies == [f"answer-of-{rec.instance_id}-0", f"answer-of-{rec.instance_id}-1"]
        dumped = rec.model_dump_json()
        assert all("answer-of" not in m.content for c in rec.calls for m in c.messages)
        assert dumped.count("answer-of") == 4  # the two replies, in the calls and the events only
    assert all(req.context["expert"].startswith("answer-of") for req in expert.calls)
