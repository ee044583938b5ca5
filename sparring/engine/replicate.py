"""The `replicate` tournament: re-judge a stored run's transcripts with new judges.

Every non-judge seat of the source run is re-seated with an agent of the same name whose model
replays that agent's recorded turns; instance ids, flips, repeats and seeds are taken from the
source records, so the new judges see the same debates the old ones saw. One replay index per
source matchup keeps cross-play transcripts apart (the same question was argued by several
pairs); requests are routed by the `matchup` label the episode driver attaches.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from sparring.agents.base import AGENTS, Agent
from sparring.engine.episode import EpisodeJob
from sparring.engine.loader import Experiment, panel_name
from sparring.errors import BackendError
from sparring.models.base import Model
from sparring.records.reader import iter_records
from sparring.records.record import EpisodeRecord
from sparring.types import Completion, GenerateRequest, Sampling

REPLAY_MATCH = ["instance_id", "flip", "repeat", "player", "tag", "index"]


class RunReplay(Model):
    """Replays the recorded turns of a run, one ReplayModel per source matchup."""

    can_score = False

    def __init__(self, name: str, records: list[EpisodeRecord]):
        from sparring.models.replay import ReplayModel

        super().__init__(name)
        by: dict[str, list[EpisodeRecord]] = defaultdict(list)
        for r in records:
            by[r.matchup].append(r)
        self.by_matchup = {m: ReplayModel.from_records(rs, name=f"{name}[{m}]", match=REPLAY_MATCH)
                           for m, rs in by.items()}

    def _generate(self, requests: list[GenerateRequest]) -> list[Completion]:
        out = []
        for req in requests:
            model = self.by_matchup.get(str(req.context.get("matchup")))
            if model is None:
                raise BackendError(f"replay {self.name!r}: no recorded matchup {req.context.get('matchup')!r}")
            out.extend(model.generate([req])[0])
        return out


def plan_replicate(exp: Experiment, instance_ids: list[str]) -> tuple[list[EpisodeJob], dict[str, Agent],
                                                                         dict[str, Model], dict[str, Any]]:
    """Jobs, replay agents and the replay model for a replicate tournament, plus a summary."""
    t = exp.config.tournament
    src = Path(str(t.source_run)).expanduser()
    if not (src / "episodes.jsonl").is_file():
        raise exp.error(f"source run {src} has no episodes.jsonl", "tournament.source_run")
    wanted = set(instance_ids)
    alias = f"replay:{src.name}"
    records: list[EpisodeRecord] = []
    skipped = {"not complete": 0, "instance not loaded": 0, "seats differ": 0}
    for rec in iter_records(src):
        if rec.status != "complete":
            skipped["not complete"] += 1
        elif rec.instance_id not in wanted:
            skipped["instance not loaded"] += 1
        elif any(p not in rec.seats for p in exp.seat_players):
            skipped["seats differ"] += 1
        else:
            records.append(rec)
    if not records:
        raise exp.error(f"source run {src} has no complete episode to re-judge ({skipped})", "tournament.source_run")
    agents: dict[str, Agent] = {}
    judge = panel_name(exp.judges) if exp.judges else None
    jobs = []
    for rec in records:
        seats = {}
        for p in exp.seat_players:
            name, role = rec.seats[p].agent, exp.roles[p]
            if name in exp.judges:
                raise exp.error(f"source agent {name!r} has the name of a judge of this config; rename the judge",
                                "tournament.judges")
            if name not in agents:
                agents[name] = _replay_agent(exp, name, role, alias)
            seats[p] = name
        if judge:
            seats.update({p: judge for p in exp.judge_players})
        jobs.append(EpisodeJob(experiment=exp.name, instance_id=rec.instance_id, seats=seats, seed=rec.seed,
                               repeat=rec.repeat, flip=rec.flip, matchup=rec.matchup,
                               meta={"source_episode": rec.id}))
    model = RunReplay(alias, records)
    return jobs, agents, {alias: model}, {"source_run": str(src), "episodes": len(records), "skipped": skipped}


def _replay_agent(exp: Experiment, name: str, role: str, alias: str) -> Agent:
    from sparring.prompts import prompt_set

    cls = AGENTS.get(role)
    cfg = cls.Config(role=role, model=alias)
    prompts = prompt_set(exp.game.default_prompts[role], tuple(exp.config.prompt_files))
    return cls(name, cfg, Sampling(), prompts)
