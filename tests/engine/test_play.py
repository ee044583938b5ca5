"""The in-memory play API: an Arena from a dict, injected models, records in job order, storing."""

from __future__ import annotations

from sparring.engine.config import open_store
from sparring.engine.play import Arena, play
from sparring.models.scripted import ScriptedModel
from sparring.records.reader import iter_records

DOND = {
    "name": "inline-dond",
    "game": "dond",
    "game_args": {"max_turns": 6},
    "dataset": {"name": "dond_generated", "args": {"n": 6, "seed": 0}},
    "agents": {"me": {"role": "negotiator", "model": "policy"},
               "partner": {"role": "negotiator", "model": "partner"}},
    "tournament": {"type": "custom", "matchups": [["me", "partner"]]},
}


def _models():
    return {"policy": ScriptedModel("policy", mode="cycle",
                                    texts=["[message] Let us split.", "[propose] 1 books, 1 hats, 1 balls"]),
            "partner": ScriptedModel("partner", mode="fixed", text="[propose] 1 books, 1 hats, 1 balls")}


def test_arena_plays_jobs_in_memory_and_returns_records_in_job_order():
    with Arena.from_config(DOND, models=_models()) as arena:
        jobs = arena.jobs()
        assert len(jobs) == 6
        records = arena.play(list(reversed(jobs)))
        assert [r.id for r in records] == [j.id for j in reversed(jobs)]
        assert all(r.status in ("complete", "aborted") for r in records)
        assert all(r.seats["Player_1"].model in ("policy", "partner") for r in records)
        # the arena can play again (an online loop plays many batches with one arena)
        again = arena.play([arena.job(jobs[0].instance_id, ("partner", "me"))])
        assert again[0].seats["Player_1"].agent == "partner"


def test_play_stores_records_when_given_a_store(tmp_path):
    with Arena.from_config(DOND, models=_models()) as arena:
        with open_store(tmp_path / "run", arena.exp.config) as store:
            records = arena.play(arena.jobs(limit=3), store=store)
    stored = list(iter_records(tmp_path / "run"))
    assert sorted(r.id for r in stored) == sorted(r.id for r in records)


def test_one_shot_play_runs_the_whole_schedule():
    records = play(DOND, models=_models())
    assert len(records) == 6


def test_a_player_who_leaves_gives_an_aborted_episode_marked_abandoned():
    """EpisodeAbandoned from a seat's model (a person who left a web game) is not a failure:
    the episode is stored aborted with the transcript so far and `metrics["abandoned"]`."""
    from sparring.errors import EpisodeAbandoned
    from sparring.models.base import Model
    from sparring.types import Completion

    class Leaver(Model):
        def __init__(self) -> None:
            super().__init__("policy")
            self.calls = 0

        def _generate(self, requests):
            self.calls += 1
            if self.calls > 1:
                raise EpisodeAbandoned("abandoned by the human player (gone)")
            return [Completion(text="[message] Hello there.") for _ in requests]

    models = {**_models(), "policy": Leaver()}
    with Arena.from_config(DOND, models=models) as arena:
        job = arena.job(arena.jobs()[0].instance_id, ("me", "partner"))
        (rec,) = arena.play([job])
    assert rec.status == "aborted" and rec.error is None
    assert rec.outcome.status == "aborted" and rec.outcome.winner is None
    assert rec.outcome.reason == "abandoned by the human player (gone)"
    assert rec.outcome.metrics["abandoned"] is True and "points" in rec.outcome.metrics  # the game's metrics kept
    assert any("Hello there." in e.content for e in rec.events)
    assert rec.calls[-1].error.startswith("EpisodeAbandoned")
