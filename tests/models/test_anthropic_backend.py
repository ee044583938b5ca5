"""The `anthropic` backend over real HTTP against the local fake server (no SDK mocking)."""

from __future__ import annotations

import logging

import pytest

from sparring.errors import BackendError, ScoringNotSupported
from sparring.models.anthropic_backend import AnthropicModel, to_messages_api
from sparring.models.base import BACKENDS
from sparring.types import GenerateRequest, Message, Sampling, ScoreRequest

KEY = "sk-ant-test-SECRET-0123456789"


def m(role: str, content: str) -> Message:
    return Message(role=role, content=content)


@pytest.fixture
def make_model(api, closing):
    fast = {"timeout_s": 5.0, "backoff_initial_s": 0.01, "backoff_max_s": 0.05, "api_key_env": "SPARRING_TEST_UNSET_KEY"}
    return lambda **kw: closing(AnthropicModel("test-anthropic", **{"model": "claude-fake", "base_url": api.url,
                                                                    **fast, **kw}))


def test_registered_cannot_score():
    assert BACKENDS.get("anthropic") is AnthropicModel
    assert AnthropicModel.concurrent and not AnthropicModel.can_score


def test_system_and_merged_messages(api, make_model):
    model = make_model()
    msgs = [m("system", "You judge debates."), m("user", "Debater A says X."), m("user", "Debater B says Y."),
            m("assistant", "Noted."), m("system", "Be brief."), m("user", "Who wins?")]
    [[c]] = model.generate([GenerateRequest(messages=msgs, sampling=Sampling(max_new_tokens=40, seed=3))])
    body = api.requests[-1].body
    assert body["system"] == "You judge debates.\n\nBe brief."
    assert body["messages"] == [
        {"role": "user", "content": "Debater A says X.\n\nDebater B says Y."},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "Who wins?"},
    ]
    assert body["max_tokens"] == 40 and body["model"] == "claude-fake"
    assert "seed" not in body and "temperature" not in body and "top_p" not in body
    assert c.text == "Who wins?" and c.finish_reason == "stop"
    assert c.usage.prompt_tokens > 0 and c.usage.completion_tokens == 2 and c.latency_s > 0


def test_to_messages_api_drops_empty_and_strips_trailing_assistant_space():
    system, turns = to_messages_api([m("user", "hi"), m("user", "  "), m("assistant", "ok ")], "So: ")
    assert system is None
    assert turns == [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok \n\nSo:"}]


def test_sampling_params_only_when_enabled(api, make_model):
    model = make_model(send_sampling_params=True, api_version="2023-06-01")
    model.generate([GenerateRequest(messages=[m("user", "x")], sampling=Sampling(temperature=1.5))])
    body = api.requests[-1].body
    assert body["temperature"] == 1.0 and "top_p" not in body  # clipped; top_p 1.0 not sent
    assert api.requests[-1].headers["anthropic-version"] == "2023-06-01"
    model.generate([GenerateRequest(messages=[m("user", "x")], sampling=Sampling(temperature=0.2, top_p=0.9))])
    assert api.requests[-1].body["top_p"] == 0.9 and api.requests[-1].body["temperature"] == 0.2


def test_prefill_returns_only_the_continuation(api, make_model):
    model = make_model()
    api.behaviour.reply = " A, clearly"
    [[c]] = model.generate([GenerateRequest(messages=[m("user", "Who?")], assistant_prefix="Verdict: ")])
    assert c.text == "A, clearly"
    assert api.requests[-1].body["messages"][-1] == {"role": "assistant", "content": "Verdict:"}
    api.behaviour.reply = "B"
    assert model.generate([GenerateRequest(messages=[m("user", "Who?")],
                                           assistant_prefix="Verdict:")])[0][0].text == "B"


def test_prefix_without_prefill_support_is_instructed(api, make_model):
    model = make_model(supports_prefill=False)
    api.behaviour.reply = "Verdict: A"
    [[c]] = model.generate([GenerateRequest(messages=[m("user", "Who?")], assistant_prefix="Verdict: ")])
    assert c.text == "A"
    last = api.requests[-1].body["messages"][-1]
    assert last["role"] == "user" and "Start your reply with exactly: Verdict:" in last["content"]


def test_stop_sequences_and_max_tokens(api, make_model):
    model = make_model()
    [[c]] = model.generate([GenerateRequest(messages=[m("user", "alpha beta END gamma")],
                                            sampling=Sampling(stop=["END"]))])
    assert c.text == "alpha beta " and c.finish_reason == "stop"
    assert api.requests[-1].body["stop_sequences"] == ["END"]
    [[c]] = model.generate([GenerateRequest(messages=[m("user", "one two three")],
                                            sampling=Sampling(max_new_tokens=2))])
    assert (c.text, c.finish_reason) == ("one two", "length")


def test_retries_overload_and_rate_limit(api, make_model):
    model = make_model(backoff_max_s=2.0)
    api.fail(status=529, message="Overloaded")
    api.fail(status=429, retry_after="0.3")
    [[c]] = model.generate([GenerateRequest(messages=[m("user", "finally")])])
    assert c.text == "finally" and len(api.requests) == 3
    arrivals = api.arrivals()
    assert arrivals[2] - arrivals[1] >= 0.3


def test_timeout_exhausts_retries(api, make_model):
    model = make_model(timeout_s=0.2, max_retries=1)
    api.fail("hang", times=2, hang_s=2.0)
    with pytest.raises(BackendError, match="timed out") as info:
        model.generate([GenerateRequest(messages=[m("user", "x")])])
    assert info.value.retryable and len(api.requests) == 2


def test_401_redacted_and_not_retried(api, make_model, monkeypatch, caplog):
    monkeypatch.setenv("SPARRING_TEST_ANTHROPIC_KEY", KEY)
    api.behaviour.require_key = "the-right-key"
    model = make_model(api_key_env="SPARRING_TEST_ANTHROPIC_KEY")
    with caplog.at_level(logging.DEBUG), pytest.raises(BackendError) as info:
        model.generate([GenerateRequest(messages=[m("user", "x")])])
    assert info.value.status == 401 and not info.value.retryable and len(api.requests) == 1
    assert "claude-fake" in str(info.value) and "***" in str(info.value)
    for text in (str(info.value), caplog.text, str(model), repr(model.args)):
        assert KEY not in text


def test_key_from_env_and_malformed_json(api, make_model, monkeypatch):
    monkeypatch.setenv("SPARRING_TEST_ANTHROPIC_KEY", KEY)
    api.behaviour.require_key = KEY
    model = make_model(api_key_env="SPARRING_TEST_ANTHROPIC_KEY")
    assert model.generate([GenerateRequest(messages=[m("user", "ok")])])[0][0].text == "ok"
    api.fail("malformed")
    with pytest.raises(BackendError, match="malformed JSON"):
        model.generate([GenerateRequest(messages=[m("user", "ok")])])


def test_official_api_without_key_names_the_variable(make_model, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    model = make_model(base_url=None, api_key_env="ANTHROPIC_API_KEY")
    with pytest.raises(BackendError, match="ANTHROPIC_API_KEY"):
        model.generate([GenerateRequest(messages=[m("user", "x")])])


def test_score_not_supported(api, make_model):
    model = make_model()
    with pytest.raises(ScoringNotSupported):
        model.score([ScoreRequest(messages=[m("user", "Who?")], options=["A", "B"])])
    assert api.requests == []
