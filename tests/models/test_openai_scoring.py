"""Scoring (`score`: the options' probabilities from top log-probs) of the `openai` backend over
real HTTP against the local fake server (no SDK mocking)."""

from __future__ import annotations

import math

import pytest

from sparring.errors import BackendError, PrefillNotSupported, ScoringNotSupported
from sparring.types import Message, ScoreRequest


def sreq(options: list[str], prefix: str = "") -> ScoreRequest:
    return ScoreRequest(messages=[Message(role="user", content="Who won?")], options=options,
                        assistant_prefix=prefix)


def probs(logprobs: list[float]) -> list[float]:
    z = sum(math.exp(v) for v in logprobs)
    return [math.exp(v) / z for v in logprobs]


def test_score_reads_top_logprobs(api, make_model):
    api.behaviour.table = [("A", math.log(0.6)), ("B", math.log(0.3)), ("C", math.log(0.05))]
    model = make_model(top_logprobs=5)
    [scores] = model.score([sreq(["B", "A"])])
    assert scores == pytest.approx([math.log(0.3), math.log(0.6)])
    assert sum(probs(scores)) == pytest.approx(1.0) and probs(scores)[1] > probs(scores)[0]
    body = api.requests[-1].body
    assert body["max_tokens"] == 1 and body["temperature"] == 0.0
    assert body["logprobs"] is True and body["top_logprobs"] == 5


def test_score_floor_for_missing_options(api, make_model):
    model = make_model()
    # Unseen mass 0.49 but the least likely shown token has 0.01: the floor is log(0.01).
    api.behaviour.table = [("A", math.log(0.5)), ("C", math.log(0.01))]
    [s1] = model.score([sreq(["A", "B"])])
    assert s1 == pytest.approx([math.log(0.5), math.log(0.01)])
    # Unseen mass 0.1 split between two missing options: log(0.05) each.
    api.behaviour.table = [("A", math.log(0.6)), ("C", math.log(0.3))]
    [s2] = model.score([sreq(["A", "B", "D"])])
    assert s2 == pytest.approx([math.log(0.6), math.log(0.05), math.log(0.05)])
    # Nothing of the options shown at all: finite, equal, no NaN.
    api.behaviour.table = [("Z", 0.0)]
    [s3] = model.score([sreq(["A", "B"])])
    assert all(math.isfinite(v) for v in s3) and s3[0] == s3[1]
    assert probs(s3) == pytest.approx([0.5, 0.5])


def test_score_merges_whitespace_variants(api, make_model):
    api.behaviour.table = [(" A", math.log(0.4)), ("A", math.log(0.2)), (" B", math.log(0.3))]
    [scores] = make_model().score([sreq([" A", " B"])])
    assert scores == pytest.approx([math.log(0.6), math.log(0.3)])


def test_score_moves_shared_prefix_into_prefill(api, make_model):
    def table(body):
        last = body["messages"][-1]
        if last["role"] == "assistant" and last["content"].endswith("Debater_"):
            return [("B", math.log(0.7)), ("A", math.log(0.2))]
        return [("Deb", -0.01)]

    api.behaviour.table = table
    model = make_model(supports_prefill=True)
    [scores] = model.score([sreq(["Debater_A", "Debater_B"], prefix="Winner: ")])
    assert scores == pytest.approx([math.log(0.2), math.log(0.7)])
    body = api.requests[-1].body
    assert body["messages"][-1] == {"role": "assistant", "content": "Winner: Debater_"}
    assert body["continue_final_message"] is True


def test_score_unsupported_cases_raise_before_any_request(api, make_model):
    model = make_model()  # no prefill
    with pytest.raises(ScoringNotSupported, match="Debater_"):
        model.score([sreq(["Debater_A", "Debater_B"])])
    with pytest.raises(PrefillNotSupported, match="assistant_prefix"):
        model.score([sreq(["A", "B"], prefix="Answer:")])
    with pytest.raises(ScoringNotSupported, match="prefix of another"):
        make_model(supports_prefill=True).score([sreq(["A", "AB"])])
    assert api.requests == []


def test_an_unscorable_request_fails_alone_in_its_batch(api, make_model):
    """One agent still sending its prefix must not fail another's instruction request."""
    api.behaviour.table = [("A", math.log(0.7)), ("B", math.log(0.2))]
    ok, refused = make_model().score([sreq(["A", "B"]), sreq(["A", "B"], prefix="Answer:")])
    assert isinstance(refused, PrefillNotSupported) and "score request 1" in str(refused)
    assert ok == pytest.approx([math.log(0.7), math.log(0.2)]) and len(api.requests) == 1


def test_score_without_server_logprobs_is_clear_error(api, make_model):
    api.behaviour.omit_logprobs = True
    with pytest.raises(BackendError, match="no logprobs"):
        make_model().score([sreq(["A", "B"])])
