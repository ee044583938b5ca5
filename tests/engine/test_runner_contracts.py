"""The runner's contracts: one batched call per model per tick, and a failing request fails only
its own episode."""

from __future__ import annotations

from sparring.engine.play import Arena, InProcessRunner
from sparring.errors import BackendError
from sparring.models.scripted import ScriptedModel

DOND = {
    "name": "contracts",
    "game": "dond",
    "game_args": {"max_turns": 4},
    "dataset": {"name": "dond_generated", "args": {"n": 8, "seed": 1}},
    "agents": {"a": {"role": "negotiator", "model": "m1"}, "b": {"role": "negotiator", "model": "m2"}},
    "tournament": {"type": "custom", "matchups": [["a", "b"]]},
}


class Counting(ScriptedModel):
    """Records the size of every generate call."""

    def __init__(self, name, **kw):
        super().__init__(name, mode="fixed", text="[message] hello", **kw)
        self.batches: list[int] = []

    def generate(self, requests):
        self.batches.append(len(requests))
        return super().generate(requests)


def test_every_tick_sends_each_model_one_batched_call():
    m1, m2 = Counting("m1"), Counting("m2")
    with Arena.from_config(DOND, models={"m1": m1, "m2": m2}) as arena:
        ticks = []
        runner = InProcessRunner(arena.exp, arena.instances, arena.agents, arena.pool.get, max_live=8)
        runner.on_tick = lambda: ticks.append((len(m1.batches), len(m2.batches)))
        runner.run(arena.jobs())
    calls_per_tick = [(b1 - a1, b2 - a2) for (a1, a2), (b1, b2) in zip([(0, 0)] + ticks, ticks, strict=False)]
    assert all(c1 <= 1 and c2 <= 1 for c1, c2 in calls_per_tick)  # never two calls to a model in a tick
    assert m1.batches[0] + m2.batches[0] == 8  # the 8 episodes' first turns went out together
    assert sum(m1.batches) + sum(m2.batches) == 8 * 4  # every request of every turn, nothing repeated


def test_per_row_errors_from_a_backend_fail_only_those_episodes():
    class OneBad(Counting):
        def generate(self, requests):
            out = super().generate(requests)
            # the first request of the first call fails; every other row succeeds
            if len(self.batches) == 1:
                out[0] = BackendError("400: bad request")
            return out

    m1 = OneBad("m1")
    with Arena.from_config(DOND, models={"m1": m1, "m2": Counting("m2")}) as arena:
        records = arena.play(arena.jobs())
    failed = [r for r in records if r.status == "failed"]
    assert len(failed) == 1 and "bad request" in failed[0].error
    assert len(records) == 8
