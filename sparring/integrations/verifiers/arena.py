"""The engine side of a verifiers environment: one experiment's arena whose held seats are answered
by verifiers agents. No verifiers import here: this is the sparring half (tasks from the schedule,
one episode played through the in-memory play API), tested on its own.

A task is one scheduled job of the experiment (instance, seating, seed, mirrored or not), so the
taskset is exactly the tournament `sparring run` would play on the same split. Each episode gets
a fresh `repeat` (so a task played several times at once, a GRPO group, has distinct episode ids
while its game and partners' seeds stay those of the task).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparring.engine.episode import EpisodeJob
from sparring.integrations.seats import SEAT_MODEL, Answer, SeatRouter, resolve_experiment, with_split
from sparring.records.record import EpisodeRecord

# Keys of verifiers' EnvConfig (and of ours) that a seat's field name must not take.
RESERVED_FIELDS = frozenset({"id", "taskset", "timeout", "retries", "max_concurrent_agents", "interception",
                             "frozen", "format_penalty", "model_config", "model_fields", "env_id"})


@dataclass(frozen=True)
class Seating:
    """What a verifiers environment declares before any instance is loaded: the game's players,
    their roles, the config field each seat is addressed by (`--env.<field>.model`), the
    evaluator (judge) players and the players some agent lets verifiers hold."""

    name: str
    game: str
    roles: dict[str, str]
    fields: dict[str, str]
    evaluators: frozenset[str]
    held_roles: frozenset[str]


def field_name(player: str, taken: set[str]) -> str:
    """A config field for a player id ("Player 0" -> player_0, "Debater_A" -> debater_a)."""
    base = re.sub(r"[^0-9a-zA-Z]+", "_", player).strip("_").lower() or "seat"
    if base[0].isdigit():
        base = f"seat_{base}"
    name, n = base, 2
    while name in taken or name in RESERVED_FIELDS:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


def seating(data: Mapping[str, Any], path: Path) -> Seating:
    exp = resolve_experiment(data, path)
    taken: set[str] = set()
    fields = {p: field_name(p, taken) for p in exp.roles}
    held = frozenset(a.role for a in exp.agent_configs.values() if a.model == SEAT_MODEL)
    return Seating(name=exp.name, game=exp.game.name, roles=dict(exp.roles), fields=fields,
                   evaluators=frozenset(exp.judge_players), held_roles=held)


class HeldArena:
    """The experiment's arena with the `SEAT_MODEL` agents played by a `SeatRouter`, its other
    agents by their own models (a scripted partner, a served judge), built once and shared by
    every episode."""

    def __init__(self, data: Mapping[str, Any], path: Path, split: str | None = None, limit: int | None = None):
        from sparring.engine.play import Arena

        self.router = SeatRouter(SEAT_MODEL)
        self.arena = Arena.from_config(with_split(data, split, limit), models={SEAT_MODEL: self.router},
                                       base_dir=path.parent)
        self._repeats = itertools.count(1)

    @property
    def exp(self) -> Any:
        return self.arena.exp

    def jobs(self) -> list[EpisodeJob]:
        """The scheduled jobs: one task each."""
        return self.arena.jobs()

    def agents_of(self, job: EpisodeJob) -> list[str]:
        """The agents of the competing seats, in seating order."""
        return [job.seats[p] for p in self.exp.seat_players]

    def job(self, instance_id: str, agents: list[str], seed: int, flip: bool) -> EpisodeJob:
        """A task's job with a repeat no other episode of this arena has."""
        return self.arena.job(instance_id, tuple(agents), seed=seed, flip=flip, repeat=next(self._repeats))

    def held(self, job: EpisodeJob) -> list[str]:
        """The players of `job` whose agent plays through `SEAT_MODEL`, in seating order."""
        configs = self.exp.agent_configs
        return [p for p, agent in job.seats.items() if agent in configs and configs[agent].model == SEAT_MODEL]

    def play(self, job: EpisodeJob, holders: Mapping[str, Answer]) -> EpisodeRecord:
        """Play `job` with `holders` answering its held seats (blocks: run it off the event loop)."""
        self.router.hold(job.id, holders)
        try:
            (record,) = self.arena.play([job], max_live=1)
        finally:
            self.router.release(job.id)
        return record

    def close(self) -> None:
        self.arena.close()
