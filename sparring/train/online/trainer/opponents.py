"""Who sits where in a training game: the learner against fixed opponents, against itself
(self-play), or against a small league of its own earlier checkpoints.

- `fixed`: the learner plays the seat its prompt names; every other competing seat is played by
  the experiment's other participants (a scripted player, a served or local model, a teacher) —
  fixed models the learner can learn to exploit.
- `self_play`: the learner plays every competing seat of the game and is trained in each; a
  judge (an evaluator seat) is never the learner and never trained.
- `pool`: the learner plays its prompt's seat; each other seat is, per group, one of the
  experiment's other participants drawn uniformly — the same for every game of the group, so GRPO
  compares the learner's games against one opponent, while the steps mix them (e.g. a random
  player and one that blocks, so that beating the first is not all it learns).
- `league`: the learner plays its prompt's seat; each other seat is, per game, the current learner
  (probability `current_share`; that seat is then trained too, as in self-play) or one of its
  frozen earlier checkpoints, sampled uniformly (SPIRAL-style opponent diversity, so that the
  learner cannot just exploit one opponent). A checkpoint joins every `snapshot_every` steps; the
  league keeps the last `league_size`.

Snapshots are extra LoRA adapters on the learner's own model (`past-0`, `past-1`, ...), played
through the `hf` backend's per-request adapter, so league games batch with the learner's.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from sparring.types import Strict

SNAPSHOT = "past-{}"  # adapter name of league slot k
SNAPSHOT_AGENT = "{agent}-past{k}"  # the agent that plays it


class OpponentSettings(Strict):
    """`opponents:` of an online config (sparring's trainer)."""

    mode: Literal["fixed", "pool", "self_play", "league"] = Field(
        "fixed", description="fixed: the experiment's other participants; pool: per group, one of them drawn "
        "at random; self_play: the learner in every competing seat, trained in each; league: the learner "
        "against itself or its earlier checkpoints")
    league_size: int = Field(4, ge=1, description="league: earlier checkpoints kept")
    snapshot_every: int = Field(10, ge=1, description="league: steps between checkpoints joining the league")
    current_share: float = Field(0.5, ge=0.0, le=1.0, description="league: share of games whose opponent is the "
                                                                   "current learner (trained in both seats)")


@dataclass
class Seating:
    agents: tuple[str, ...]   # the agent in each competing seat, in seat order
    trained: tuple[int, ...]  # seats whose turns are trained (the current learner's)


class Opponents:
    """Seats the learner and its opponents for each training game (see the module docstring)."""

    def __init__(self, settings: OpponentSettings, learner_agent: str, participants: list[str], seats: int):
        self.settings, self.learner, self.seats = settings, learner_agent, seats
        self.snapshot_agents = {SNAPSHOT_AGENT.format(agent=learner_agent, k=k) for k in range(settings.league_size)}
        self.others = [a for a in participants if a != learner_agent and a not in self.snapshot_agents]
        self.snapshots: list[int] = []  # league slots filled so far, oldest first (slot k = adapter past-k)
        self.snapshot_steps: dict[int, int] = {}  # slot -> the step it was taken after

    def seating(self, seat: int, rng: random.Random, group: random.Random | None = None) -> Seating:
        """`rng`: this game's generator; `group`: its group's (the same for every game of a group)."""
        mode = self.settings.mode
        if mode == "self_play":
            return Seating((self.learner,) * self.seats, tuple(range(self.seats)))
        if mode == "league":
            agents, trained = [], []
            for s in range(self.seats):
                if s == seat or not self.snapshots or rng.random() < self.settings.current_share:
                    agents.append(self.learner)
                    trained.append(s)
                else:
                    agents.append(SNAPSHOT_AGENT.format(agent=self.learner, k=rng.choice(self.snapshots)))
            return Seating(tuple(agents), tuple(trained))
        others = self.others or [self.learner]
        if mode == "pool":
            draw = group or rng
            agents = [draw.choice(others) for _ in range(self.seats)]
            agents[seat] = self.learner
            return Seating(tuple(agents), (seat,))
        agents = [others[i % len(others)] for i in range(self.seats)]
        agents[seat] = self.learner
        return Seating(tuple(agents), (seat,))

    def next_slot(self, step: int) -> int:
        """The league slot the snapshot after `step` goes to (the oldest once the league is full)."""
        size = self.settings.league_size
        slot = len(self.snapshot_steps) % size if len(self.snapshot_steps) < size else \
            min(self.snapshot_steps, key=self.snapshot_steps.__getitem__)
        self.snapshot_steps[slot] = step
        self.snapshots = sorted(self.snapshot_steps, key=self.snapshot_steps.__getitem__)
        return slot

    def state(self) -> dict[str, Any]:
        return {"snapshot_steps": {str(k): v for k, v in self.snapshot_steps.items()}}

    def restore(self, state: dict[str, Any]) -> None:
        self.snapshot_steps = {int(k): int(v) for k, v in (state.get("snapshot_steps") or {}).items()}
        self.snapshots = sorted(self.snapshot_steps, key=self.snapshot_steps.__getitem__)


def league_agents(experiment: dict[str, Any], learner_agent: str, settings: OpponentSettings) -> dict[str, Any]:
    """The experiment with one agent per league slot (the learner's agent config on adapter
    `past-k`), so that the arena can seat them; unchanged unless `mode: league`."""
    if settings.mode != "league":
        return experiment
    agents = dict(experiment.get("agents") or {})
    base = dict(agents[learner_agent])
    for k in range(settings.league_size):
        agents[SNAPSHOT_AGENT.format(agent=learner_agent, k=k)] = {**base, "adapter": SNAPSHOT.format(k)}
    return {**experiment, "agents": agents}
