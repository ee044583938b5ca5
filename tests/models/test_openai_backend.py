"""The `openai` backend over real HTTP against the local fake server (no SDK mocking)."""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import pytest

from sparring.errors import (
    BackendError,
    ConfigError,
    ContextOverflowError,
)
from sparring.models.base import BACKENDS
from sparring.models.openai_backend import OpenAIModel
from sparring.types import GenerateRequest, Message, Sampling

KEY = "sk-test-SECRET-0123456789abcdef"


def req(text: str = "hello there", **sampling) -> GenerateRequest:
    return GenerateRequest(messages=[Message(role="user", content=text)], sampling=Sampling(**sampling))


def test_registered_and_args_validated():
    assert BACKENDS.get("openai") is OpenAIModel
    assert OpenAIModel.concurrent and OpenAIModel.can_score
    with pytest.raises(ValueError, match="unknown_arg"):
        OpenAIModel("x", model="m", unknown_arg=1)
    with pytest.raises(ConfigError, match="api_key_env") as info:  # an inline key is refused, never echoed
        OpenAIModel("x", model="m", api_key=KEY)
    assert KEY not in str(info.value)


def test_generate_maps_sampling_and_reads_reply(api, make_model):
    model = make_model(extra_body={"top_k": 5})
    [[c]] = model.generate([req("the quick brown fox", max_new_tokens=50, temperature=0.7, top_p=0.9,
                                stop=["###"], seed=11)])
    assert c.text == "the quick brown fox" and c.finish_reason == "stop"
    assert c.usage.completion_tokens == 4 and c.usage.prompt_tokens == 4 and c.latency_s > 0
    assert c.logprobs is None
    body = api.requests[-1].body
    assert body["model"] == "fake-model" and body["max_tokens"] == 50 and body["temperature"] == 0.7
    assert body["top_p"] == 0.9 and body["stop"] == ["###"] and body["seed"] == 11 and body["top_k"] == 5
    assert "logprobs" not in body
    assert api.requests[-1].headers["authorization"] == "Bearer EMPTY"  # local server: placeholder key


def test_length_stop_logprobs_and_n(api, make_model):
    model = make_model(logprobs=True)
    [[c]] = model.generate([req("one two three four five", max_new_tokens=2)])
    assert (c.text, c.finish_reason) == ("one two", "length")
    assert c.logprobs == pytest.approx([-0.1, -0.2])
    [[s]] = model.generate([req("keep this STOP drop that", stop=["STOP"])])
    assert s.text == "keep this " and s.finish_reason == "stop"
    [group] = model.generate([req("x", temperature=1.0, seed=5, n=3)])
    assert len(group) == 3
    assert sorted(r.body["seed"] for r in api.requests[-3:]) == [5, 6, 7]
    assert make_model().generate([req("top_p one", top_p=1.0)]) and "top_p" not in api.requests[-1].body


def test_concurrency_limit_and_throughput(api, make_model):
    model = make_model(concurrency=4)
    model.generate([req("warm up")])  # SDK import + client creation are not part of the measurement
    api.reset()
    api.behaviour.latency_s = 0.3
    start = time.perf_counter()
    out = model.generate([req(f"request {i}") for i in range(16)])
    elapsed = time.perf_counter() - start
    ideal = 0.3 * 16 / 4
    assert [o[0].text for o in out] == [f"request {i}" for i in range(16)]  # order preserved
    assert api.peak_in_flight == 4
    # latency_s is the HTTP attempt itself, not the time spent queued for a slot
    assert all(0.25 <= o[0].latency_s < 0.9 for o in out), [o[0].latency_s for o in out]
    assert 0.8 * ideal <= elapsed <= 2.5 * ideal, elapsed


def test_sync_callers_from_many_threads_and_inside_an_event_loop(api, make_model):
    model = make_model(concurrency=3)
    api.behaviour.latency_s = 0.05
    results: dict[int, list[str]] = {}
    errors: list[BaseException] = []

    def worker(t: int) -> None:
        try:
            out = model.generate([req(f"t{t} r{i}") for i in range(4)])
            results[t] = [o[0].text for o in out]
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(5)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(30)
    assert not errors
    assert results == {t: [f"t{t} r{i}" for i in range(4)] for t in range(5)}
    assert api.peak_in_flight <= 3  # one semaphore shared by every caller

    async def inside_loop() -> str:  # a caller that is itself running an event loop
        return model.generate([req("from a coroutine")])[0][0].text

    assert asyncio.run(inside_loop()) == "from a coroutine"


def test_prefill_continues_assistant_message(api, make_model):
    model = make_model(supports_prefill=True, extra_body={"top_k": 3})
    api.behaviour.reply = "A, because the quote is verified"
    [[c]] = model.generate([GenerateRequest(messages=[Message(role="system", content="Judge."),
                                                      Message(role="user", content="Who?")],
                                            assistant_prefix="Verdict: Debater ")])
    assert c.text == "A, because the quote is verified"
    body = api.requests[-1].body
    assert body["messages"][-1] == {"role": "assistant", "content": "Verdict: Debater "}
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    assert body["top_k"] == 3


def test_prefix_without_prefill_is_instructed_and_stripped(api, make_model):
    model = make_model()
    api.behaviour.reply = "Verdict: B wins"
    [[c]] = model.generate([GenerateRequest(messages=[Message(role="user", content="Who?")],
                                            assistant_prefix="Verdict: ")])
    assert c.text == "B wins"
    body = api.requests[-1].body
    assert body["messages"][-1]["role"] == "user" and "Start your reply with exactly: Verdict:" in \
        body["messages"][-1]["content"]
    assert "continue_final_message" not in body


def test_retry_after_is_honoured_on_429(api, make_model):
    model = make_model(backoff_max_s=5.0)
    api.fail(status=429, retry_after="1", message="slow down")
    [[c]] = model.generate([req("after the wait")])
    assert c.text == "after the wait"
    first, second = api.arrivals()
    assert second - first >= 1.0


def test_retry_after_is_capped_by_backoff_max(api, make_model):
    model = make_model(backoff_max_s=0.1)
    api.fail(status=429, retry_after="30")
    start = time.perf_counter()
    assert model.generate([req("capped")])[0][0].text == "capped"
    assert time.perf_counter() - start < 5


def test_retries_5xx_then_succeeds(api, make_model, caplog):
    model = make_model()
    api.fail(status=500)
    api.fail(status=503)
    with caplog.at_level(logging.WARNING, logger="sparring.models.retry"):
        assert model.generate([req("third time lucky")])[0][0].text == "third time lucky"
    assert len(api.requests) == 3
    assert "HTTP 500" in caplog.text and "HTTP 503" in caplog.text


def test_timeouts_retried_then_backend_error(api, make_model):
    model = make_model(timeout_s=0.2, max_retries=2)
    api.fail("hang", times=3, hang_s=2.0)
    start = time.perf_counter()
    with pytest.raises(BackendError, match="timed out") as info:
        model.generate([req("never")])
    assert info.value.retryable is True and "gave up after 3 attempt" in str(info.value)
    assert len(api.requests) == 3 and time.perf_counter() - start < 2.0


def test_connection_refused_is_retryable_backend_error(make_model):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = make_model(base_url=f"http://127.0.0.1:{port}/v1", max_retries=1)
    with pytest.raises(BackendError, match="connection error") as info:
        model.generate([req()])
    assert info.value.retryable is True


@pytest.mark.parametrize("kind", ["malformed", "text"])
def test_malformed_response_is_clear_error(api, make_model, kind):
    model = make_model()
    api.fail(kind)
    with pytest.raises(BackendError, match="server returned malformed JSON") as info:
        model.generate([req()])
    assert info.value.retryable is False and len(api.requests) == 1
    assert "fake-model" in str(info.value) and api.openai_base_url in str(info.value)


def test_401_is_not_retried_and_never_shows_the_key(api, make_model, monkeypatch, caplog):
    monkeypatch.setenv("SPARRING_TEST_OPENAI_KEY", KEY)
    api.behaviour.require_key = "the-right-key"  # the server echoes the wrong key back
    model = make_model(api_key_env="SPARRING_TEST_OPENAI_KEY")
    with caplog.at_level(logging.DEBUG), pytest.raises(BackendError) as info:
        model.generate([req()])
    err = info.value
    assert err.status == 401 and err.retryable is False and len(api.requests) == 1
    assert "Incorrect API key provided: ***" in str(err) and "fake-model" in str(err)
    for text in (str(err), repr(err), caplog.text, str(model), repr(model), repr(model.args)):
        assert KEY not in text


def test_context_overflow_is_typed(api, make_model):
    api.fail(status=400, message="This model's maximum context length is 4096 tokens.")
    with pytest.raises(ContextOverflowError) as info:
        make_model().generate([req()])
    assert info.value.status == 400 and not info.value.retryable


def test_secret_not_in_debug_logs_during_retries(api, make_model, monkeypatch, caplog):
    monkeypatch.setenv("SPARRING_TEST_OPENAI_KEY", KEY)
    api.behaviour.require_key = KEY
    model = make_model(api_key_env="SPARRING_TEST_OPENAI_KEY")
    api.fail(status=500, message=f"upstream said Bearer {KEY}")
    with caplog.at_level(logging.DEBUG):
        assert model.generate([req("ok")])[0][0].text == "ok"
    assert "upstream said Bearer ***" in caplog.text
    assert KEY not in caplog.text and KEY not in str(model)
    assert api.requests[-1].headers["authorization"] == f"Bearer {KEY}"


def test_key_read_from_env_at_call_time(api, make_model, monkeypatch):
    model = make_model(api_key_env="SPARRING_TEST_OPENAI_KEY")  # created before the variable exists
    monkeypatch.setenv("SPARRING_TEST_OPENAI_KEY", KEY)
    api.behaviour.require_key = KEY
    assert model.generate([req("env key")])[0][0].text == "env key"


def test_key_file_wins_over_env(api, make_model, monkeypatch, tmp_path):
    monkeypatch.setenv("SPARRING_TEST_OPENAI_KEY", "sk-from-env-0000000000")
    key_file = tmp_path / "openai.key"
    key_file.write_text(KEY + "\n")
    api.behaviour.require_key = KEY
    model = make_model(api_key_env="SPARRING_TEST_OPENAI_KEY", api_key_file=str(key_file))
    assert model.generate([req("file key")])[0][0].text == "file key"
    missing = make_model(api_key_file=str(tmp_path / "nope.key"))
    with pytest.raises(BackendError, match="nope.key"):
        missing.generate([req()])


def test_official_api_without_key_names_the_variable(make_model, monkeypatch):
    monkeypatch.delenv("SPARRING_TEST_MISSING_KEY", raising=False)
    model = make_model(base_url=None, api_key_env="SPARRING_TEST_MISSING_KEY")
    with pytest.raises(BackendError, match="SPARRING_TEST_MISSING_KEY") as info:
        model.generate([req()])
    assert "api_key_file" in str(info.value) and not info.value.retryable


def test_close_is_idempotent(make_model):
    model = make_model()
    model.generate([req("x")])
    model.close()
    model.close()


def test_a_vllm_server_is_asked_to_load_an_adapter_and_requests_then_name_it(api, make_model):
    """Iterative loops serve each new adapter from vLLM: `load_adapter` calls vLLM's runtime
    LoRA endpoint, and a request's `adapter` becomes the served model name."""
    model = make_model()
    model.load_adapter("smol-dpo@2", "/adapters/iter-2")
    assert api.adapters == {"smol-dpo@2": "/adapters/iter-2"}
    model.generate([GenerateRequest(messages=[Message(role="user", content="hi")], adapter="smol-dpo@2")])
    assert api.requests[-1].body["model"] == "smol-dpo@2"
    with pytest.raises(BackendError, match="loading adapter"):
        model.load_adapter("", "/nowhere")


@pytest.mark.parametrize("honours", [True, False])
def test_models_check_detects_a_server_that_ignores_continue_final_message(api, tmp_path, honours):
    """llama.cpp's server drops continue_final_message and opens a new turn: `sparring models check`
    probes it and refuses the spec instead of letting judges produce wrong scores."""
    import yaml
    from typer.testing import CliRunner

    from sparring.cli import app

    def reply(body):
        if honours and body.get("continue_final_message"):
            return " four, five, six"
        return "Sure! One, two, three, four, five, six."

    api.behaviour.reply = reply
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump({"models": {"served": {"backend": "openai", "args": {
        "model": "fake", "base_url": api.openai_base_url, "supports_prefill": True, "max_retries": 0,
        "api_key_env": "SPARRING_TEST_UNSET_KEY"}}}}))
    res = CliRunner().invoke(app, ["models", "check", "served", "--models-file", str(path)])
    if honours:
        assert "prefill: continued" in res.output
    else:
        assert res.exit_code == 2 and "ignores" in res.output and "continue_final_message" in res.output


def test_a_one_request_at_a_time_server_needs_concurrency_one(api, make_model):
    """llama.cpp computes one request at a time. With several requests in flight, the queued ones
    spend their timeout waiting in the server and fail; with `concurrency: 1` (the shipped
    llamacpp-local) each request is sent only when the previous one is done, so its timeout
    counts from when it is sent and every request succeeds."""
    api.behaviour.serial = True
    api.behaviour.latency_s = 0.3
    requests = [GenerateRequest(messages=[Message(role="user", content=f"q{i}")]) for i in range(5)]
    crowded = make_model(concurrency=5, timeout_s=0.8, max_retries=0).generate(requests)
    assert any(isinstance(r, BaseException) for r in crowded)  # queued behind each other: timed out
    assert api.peak_in_flight > 1
    api.reset()
    api.behaviour.serial = True
    api.behaviour.latency_s = 0.3
    one_at_a_time = make_model(concurrency=1, timeout_s=0.8, max_retries=0).generate(requests)
    assert all(not isinstance(r, BaseException) for r in one_at_a_time)
    assert api.peak_in_flight == 1  # never a second request queued in the server
