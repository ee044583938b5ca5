"""Support modules of the API backends: secrets, the event-loop thread, top-k option scoring."""

from __future__ import annotations

import asyncio
import math
import threading

import pytest

from sparring.errors import BackendError, ScoringNotSupported
from sparring.models.aio import LoopThread
from sparring.models.secrets import Secret, redact, resolve_api_key
from sparring.models.topk_scoring import clean_top, floor_logprob, option_logprobs, plan_options


# -- secrets ---------------------------------------------------------------------------------------
def test_secret_hides_value():
    s = Secret("sk-very-secret-value")
    assert "secret-value" not in repr(s) and "secret-value" not in str(s) and "secret-value" not in f"{s}"
    assert s.get() == "sk-very-secret-value"


def test_redact_known_values_and_key_shapes():
    assert redact("key=abc123xyz!", ["abc123xyz"]) == "key=***!"
    assert redact("Authorization: Bearer tok_0123456789") == "Authorization: Bearer ***"
    assert redact("got sk-ant-api03-AAAAAAAAAAAA") == "got sk-ant-***"
    assert redact("placeholder EMPTY stays", ["EMPTY", None, ""]) == "placeholder EMPTY stays"


def test_resolve_key_env_file_and_errors(monkeypatch, tmp_path):
    monkeypatch.setenv("SPARRING_T_KEY", "  from-env \n")
    assert resolve_api_key(provider="p", env_var="SPARRING_T_KEY", key_file=None, required=True).get() == "from-env"
    f = tmp_path / "k"
    f.write_text("from-file\n")
    assert resolve_api_key(provider="p", env_var="SPARRING_T_KEY", key_file=str(f), required=True).get() == "from-file"
    monkeypatch.delenv("SPARRING_T_KEY")
    assert resolve_api_key(provider="p", env_var="SPARRING_T_KEY", key_file=None, required=False) is None
    with pytest.raises(BackendError, match="SPARRING_T_KEY"):
        resolve_api_key(provider="p", env_var="SPARRING_T_KEY", key_file=None, required=True)
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(BackendError, match="is empty"):
        resolve_api_key(provider="p", env_var=None, key_file=str(tmp_path / "empty"), required=False)


# -- aio -------------------------------------------------------------------------------------------
def test_loop_thread_serves_many_threads_and_running_loops():
    lt = LoopThread("t")

    async def work(i: int) -> tuple[int, str]:
        await asyncio.sleep(0.01)
        return i, threading.current_thread().name

    out: dict[int, tuple[int, str]] = {}
    threads = [threading.Thread(target=lambda i=i: out.__setitem__(i, lt.run(work(i)))) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert out == {i: (i, "t") for i in range(8)}  # all ran on the one loop thread

    async def caller() -> int:
        return lt.run(work(1))[0]  # a sync call from inside a running loop

    assert asyncio.run(caller()) == 1
    lt.close()
    lt.close()
    with pytest.raises(RuntimeError, match="closed"):
        lt.run(work(0))


def test_loop_thread_refuses_reentrant_blocking_call():
    lt = LoopThread("t2")

    async def inner() -> int:
        return 1

    async def outer() -> None:
        lt.run(inner())

    with pytest.raises(RuntimeError, match="deadlock"):
        lt.run(outer())
    lt.close()


# -- top-k option scoring ----------------------------------------------------------------------------
def test_plan_options():
    assert plan_options([" A", " B"], "", prefill=False).heads == ["A", "B"]
    plan = plan_options([" The first", " The second"], "Answer:", prefill=True)
    assert plan.prefix == "Answer: The" and plan.heads == ["first", "second"]
    with pytest.raises(ScoringNotSupported, match="differ only in whitespace"):
        plan_options(["A B", "A  B"], "", prefill=True)
    with pytest.raises(ScoringNotSupported, match="coincide"):
        plan_options(["A", " A"], "", prefill=False)
    with pytest.raises(ScoringNotSupported, match="empty"):
        plan_options(["A", " "], "", prefill=True)


def test_floor_rule_and_finiteness():
    top = [("A", math.log(0.7)), ("B", math.log(0.2))]
    assert floor_logprob(top, 2) == pytest.approx(math.log(0.05))
    full = [("A", math.log(0.5)), ("B", math.log(0.5))]  # no unseen mass: 1e-9 floor, still finite
    assert floor_logprob(full, 1) == pytest.approx(math.log(1e-9))
    assert clean_top([("A", float("nan")), ("B", -1e9), ("C", 0.1), ("B", -1.0), (None, -1.0)]) == \
        [("B", -1e4), ("C", 0.0)]
    scores = option_logprobs(["X", "Y"], clean_top([("A", 0.0)]))
    assert all(math.isfinite(v) for v in scores)
    with pytest.raises(BackendError, match="no top_logprobs"):
        option_logprobs(["X"], [])
