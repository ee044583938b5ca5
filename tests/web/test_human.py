"""The WebHuman model: the engine's call waits for the submitted answer of the pending turn."""

from __future__ import annotations

import math
import threading

import pytest

from sparring.types import GenerateRequest, Message, ScoreRequest
from sparring.web.human import Abandoned, StaleTurn, WebHuman


def _in_thread(fn):
    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001
            out["error"] = e

    t = threading.Thread(target=run)
    t.start()
    return t, out


def test_generate_and_score_wait_for_the_submitted_answer():
    human = WebHuman()
    done = threading.Event()
    msgs = [Message(role="user", content="your move")]
    t, out = _in_thread(lambda: human.generate([GenerateRequest(messages=msgs, context={"tag": "turn"})]))
    human.wait_change(0, 5, done)
    turn = human.current()
    assert turn is not None and turn.op == "generate" and turn.messages == msgs and turn.tag == "turn"
    with pytest.raises(StaleTurn):
        human.submit(turn.seq + 1, "wrong turn")
    human.submit(turn.seq, "[message] hello")
    t.join(5)
    assert out["value"][0][0].text == "[message] hello"
    with pytest.raises(StaleTurn):
        human.submit(turn.seq, "twice")
    t, out = _in_thread(lambda: human.score([ScoreRequest(messages=msgs, options=[" A", " B"])]))
    human.wait_change(turn.seq, 5, done)
    human.submit(human.current().seq, [0.7, 0.3])
    t.join(5)
    assert [math.exp(x) for x in out["value"][0]] == pytest.approx([0.7, 0.3])


def test_abandon_and_idle_timeout_end_the_wait():
    human = WebHuman(idle_timeout_s=0.3)
    t, out = _in_thread(lambda: human.generate([GenerateRequest(messages=[Message(role="user", content="x")])]))
    t.join(10)
    assert isinstance(out["error"], Abandoned) and "no answer" in str(out["error"])
    human = WebHuman()
    t, out = _in_thread(lambda: human.generate([GenerateRequest(messages=[Message(role="user", content="x")])]))
    human.wait_change(0, 5, threading.Event())
    human.abandon("bye")
    t.join(5)
    assert isinstance(out["error"], Abandoned)
