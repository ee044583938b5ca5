"""Concurrent calls from many threads into one shared model become one batched call, and each
caller gets exactly its own rows (the web app's games share models this way)."""

from __future__ import annotations

import threading
import time

import pytest

from sparring.models.coalesce import Coalescing
from sparring.models.scripted import ScriptedModel
from sparring.types import GenerateRequest, Message, ScoreRequest


class Gate(ScriptedModel):
    """Echo model whose first call blocks until released, so later calls queue meanwhile."""

    def __init__(self) -> None:
        super().__init__("m", mode="callable", function="sparring.models.scripted:echo")
        self.release = threading.Event()
        self.sizes: list[int] = []

    def _generate(self, requests):
        self.sizes.append(len(requests))
        if len(self.sizes) == 1:
            self.release.wait(10)
        return super()._generate(requests)


def req(text: str) -> GenerateRequest:
    return GenerateRequest(messages=[Message(role="user", content=text)])


def test_calls_queued_while_a_batch_runs_go_out_as_one_batch():
    inner = Gate()
    model = Coalescing(inner, window=0.0)
    results: dict[int, str] = {}

    def play(i: int) -> None:
        results[i] = model.generate([req(f"game {i}")])[0][0].text

    first = threading.Thread(target=play, args=(0,))
    first.start()
    while not inner.sizes:  # the first batch is in flight
        time.sleep(0.001)
    others = [threading.Thread(target=play, args=(i,)) for i in range(1, 10)]
    for t in others:
        t.start()
    while model.waiting < 9:
        time.sleep(0.001)
    inner.release.set()
    for t in [first, *others]:
        t.join(10)
    assert inner.sizes == [1, 9]  # ten games, two forward passes
    assert results == {i: f"game {i}" for i in range(10)}


def test_a_caller_whose_rows_all_failed_raises_while_the_others_get_theirs():
    class Picky(ScriptedModel):
        def _generate(self, requests):
            return [ValueError("too long") if "bad" in r.messages[-1].content else ScriptedModel._generate(self, [r])[0]
                    for r in requests]

    model = Coalescing(Picky("m", mode="callable", function="sparring.models.scripted:echo"), window=0.05)
    out: dict[str, object] = {}

    def call(text: str) -> None:
        try:
            out[text] = model.generate([req(text)])[0][0].text
        except ValueError as e:
            out[text] = e

    threads = [threading.Thread(target=call, args=(t,)) for t in ("good", "bad")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert out["good"] == "good" and isinstance(out["bad"], ValueError)


def test_scores_pass_through_and_an_inner_error_reaches_its_callers():
    model = Coalescing(ScriptedModel("m", score_mode="uniform"), window=0.0)
    scores = model.score([ScoreRequest(messages=[Message(role="user", content="q")], options=["A", "B"])])
    assert len(scores) == 1 and len(scores[0]) == 2

    class Broken(ScriptedModel):
        def _generate(self, requests):
            raise RuntimeError("server gone")

    broken = Coalescing(Broken("m", mode="fixed", texts=["x"]), window=0.0)
    with pytest.raises(RuntimeError, match="server gone"):
        broken.generate([req("hi")])
    assert broken.generate([]) == []


def test_the_backend_hook_goes_through_the_same_batching():
    model = Coalescing(ScriptedModel("m", mode="callable", function="sparring.models.scripted:echo"), window=0.0)
    assert [c.text for c in model._generate([req("a"), req("b")])] == ["a", "b"]
    assert model.batches == [2]
