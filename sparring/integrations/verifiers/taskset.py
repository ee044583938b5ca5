"""The taskset of a sparring environment: the experiment's scheduled episodes on one split.

Each task is one job of the tournament `sparring run` would play (an instance from the game's own
sources, the seating, the seed, mirrored or not) in which verifiers holds a seat (a matchup of
engine-played agents only has nothing to train), so tasks are seeded and reproducible, and the
split is the source's own (hash-split scenarios and words, disjoint seed ranges): `split = "train"`
for training and `split = "test"` for the held-out evaluation never share an instance.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar, Literal

import verifiers.v1 as vf
from pydantic import Field

from sparring.integrations.seats import experiment_data
from sparring.integrations.verifiers.arena import HeldArena


class GameTaskData(vf.TaskData):
    """One scheduled episode: the instance, the agents of the competing seats in order, the seed
    and whether the mirrored variant is played (sides swapped / the other seat first)."""

    instance_id: str
    agents: list[str]
    seed: int
    flip: bool = False


class GameTask(vf.Task[GameTaskData]):
    @property
    def key(self) -> str:
        """The episode's job id: durable across runs (not the content hash, which carries `idx`)."""
        return self.data.id or self.hash


class GameTasksetConfig(vf.TasksetConfig):
    split: Literal["train", "val", "test"] | None = Field(
        None, description="the dataset split (default: the experiment's); test is the held-out split")
    limit: int | None = Field(None, ge=1, description="at most this many instances (default: the experiment's)")


class GameTaskset(vf.Taskset[GameTask, GameTasksetConfig]):
    """The experiment's episodes; a package subclass names its experiment file."""

    experiment_file: ClassVar[Path | None] = None

    def held_arena(self) -> HeldArena:
        """The experiment's arena on this taskset's split (an environment plays its tasks here)."""
        if self.experiment_file is None:
            raise ValueError(f"{type(self).__name__} names no experiment (a package subclass sets experiment_file)")
        data, path = experiment_data(self.experiment_file)
        return HeldArena(data, path, split=self.config.split, limit=self.config.limit)

    def load(self) -> Iterator[GameTask]:
        arena = self.held_arena()
        try:
            jobs = [job for job in arena.jobs() if arena.held(job)]  # a matchup of engine-played agents only: none
            agents = [arena.agents_of(job) for job in jobs]
        finally:
            arena.close()
        for job, seats in zip(jobs, agents, strict=True):
            name = f"{job.instance_id} {job.matchup}" + (" (mirrored)" if job.flip else "")
            yield GameTask(GameTaskData(id=job.id, name=name, instance_id=job.instance_id, agents=seats,
                                        seed=job.seed, flip=job.flip), self.config.task)
