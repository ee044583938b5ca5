"""The lockstep runner's garbage-collector settings: rarer young collections while episodes play,
cyclic garbage still collected during the run, and the process's own settings back afterwards."""

from __future__ import annotations

import gc
import weakref

from sparring.engine.runner import YOUNG_GC_MIN, YOUNG_GC_PER_LIVE, Runner, sparse_gc
from sparring.models.scripted import ScriptedModel
from sparring.types import GenerateRequest, Message, ModelCall


class Node:
    """Garbage that only the cyclic collector can free (it refers to itself)."""

    def __init__(self) -> None:
        self.me = self


def _episode(seen: list[tuple[int, int, int]], refs: list[weakref.ref], nodes_per_turn: int):
    request = GenerateRequest(messages=[Message(role="user", content="hi")])
    for _ in range(3):
        seen.append(gc.get_threshold())
        for _ in range(nodes_per_turn):
            refs.append(weakref.ref(Node()))
        (completions,) = yield [ModelCall(model="m", op="generate", request=request)]
        assert completions[0].text == "ok"
    return "done"


def test_young_collections_are_rarer_while_episodes_play_and_the_old_settings_return():
    before = gc.get_threshold()
    model = ScriptedModel(text="ok")
    done: list[str] = []
    seen: list[tuple[int, int, int]] = []
    refs: list[weakref.ref] = []
    runner = Runner(lambda alias: model, max_live=300, on_done=done.append)
    # 900 episodes x 3 turns x 100 self-referencing objects: several young collections' worth
    runner.run(_episode(seen, refs, 100) for _ in range(900))
    assert done == ["done"] * 900
    assert gc.get_threshold() == before
    young = max(before[0], YOUNG_GC_MIN, YOUNG_GC_PER_LIVE * 300)
    assert {t[0] for t in seen} == {young}
    # Cyclic garbage is still collected during the run, not left to pile up until its end: at most
    # about one threshold's worth (plus what the last turns made) can still be waiting.
    alive = sum(r() is not None for r in refs)
    assert len(refs) == 270_000 and alive <= young + 30_000 < len(refs)
    gc.collect()
    assert all(r() is None for r in refs)


def test_sparse_gc_restores_the_thresholds_even_after_an_error():
    before = gc.get_threshold()
    try:
        with sparse_gc(123_456):
            assert gc.get_threshold()[0] == max(before[0], 123_456)
            raise KeyError("boom")
    except KeyError:
        pass
    assert gc.get_threshold() == before
