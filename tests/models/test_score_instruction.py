"""Scoring on servers that cannot continue an assistant prefix (llama.cpp, TGI), over real HTTP
against the local fake server in `drops_prefill` mode: it ignores `continue_final_message` (a new
turn always opens) but returns `top_logprobs`, like llama-cpp-python's server."""

from __future__ import annotations

import math

import pytest
import yaml
from typer.testing import CliRunner

from sparring.cli import app
from sparring.errors import PrefillNotSupported, ScoringNotSupported
from sparring.models.openai_backend import OpenAIModel
from sparring.models.topk_scoring import answer_instruction, instruction_request
from sparring.types import Message, ScoreRequest

VERDICT_OPTIONS = [" A", " B"]


def verdict_request(story: str = "Story one.") -> ScoreRequest:
    return ScoreRequest(messages=[Message(role="system", content="You judge debates."),
                                  Message(role="user", content=f"{story}\n\nWhich answer is correct? Reply with A or B.")],
                        options=VERDICT_OPTIONS, assistant_prefix="Answer:")


@pytest.fixture
def llama(api):
    api.behaviour.drops_prefill = True
    return api


@pytest.fixture
def model(llama):
    m = OpenAIModel("served", model="gguf", base_url=llama.openai_base_url, api_key_env="SPARRING_TEST_UNSET_KEY",
                    max_retries=0, timeout_s=5.0)
    yield m
    m.close()


def test_a_prefix_without_prefill_is_refused_as_prefill_not_supported_before_any_request(llama, model):
    with pytest.raises(PrefillNotSupported, match="assistant_prefix 'Answer:'"):
        model.score([verdict_request()])
    assert llama.requests == []


def test_the_instruction_request_is_scored_from_the_first_token_of_a_new_turn(llama, model):
    stories = [f"Story number {i}." for i in range(6)]
    results = model.score([instruction_request(verdict_request(s)) for s in stories])
    for body in (r.body for r in llama.requests):
        last = body["messages"][-1]
        assert last["role"] == "user" and last["content"].endswith("Answer with the letter only: A or B.")
        assert "continue_final_message" not in body and body["max_tokens"] == 1
        assert body["logprobs"] is True and body["top_logprobs"] == 20
    masses = [sum(math.exp(v) for v in lp) for lp in results]
    assert masses == pytest.approx([0.9] * 6)  # the toy model puts 90% on the two letters
    p_a = [math.exp(lp[0]) / sum(math.exp(v) for v in lp) for lp in results]
    assert len({round(p, 6) for p in p_a}) == 6  # each conversation its own verdict


def test_answer_instruction_wording():
    assert answer_instruction([" A", " B"]) == "Answer with the letter only: A or B."
    assert answer_instruction(["A", "B", "C"]) == "Answer with the letter only: A, B or C."
    assert answer_instruction(["yes", "no"]) == "Answer with only one of: yes or no. Write nothing else."
    req = ScoreRequest(messages=[Message(role="assistant", content="My view.")], options=["A", "B"],
                       assistant_prefix="Answer:")
    out = instruction_request(req)  # no user turn to extend: the instruction is a new one
    assert out.assistant_prefix == "" and [m.role for m in out.messages] == ["assistant", "user"]
    assert req.assistant_prefix == "Answer:" and len(req.messages) == 1  # the original is untouched


def test_prefill_on_such_a_server_would_score_a_new_turn(llama):
    """Why the spec must say `supports_prefill: false`: the server accepts the prefilled request
    but answers a new turn, so the letters get almost no probability (wrong numbers, no error)."""
    m = OpenAIModel("served", model="gguf", base_url=llama.openai_base_url, api_key_env="SPARRING_TEST_UNSET_KEY",
                    supports_prefill=True, max_retries=0)
    try:
        [lp] = m.score([verdict_request()])
    finally:
        m.close()
    assert llama.requests[-1].body["continue_final_message"] is True
    assert sum(math.exp(v) for v in lp) < 0.01


def test_a_server_without_logprobs_cannot_score(llama, model):
    llama.behaviour.omit_logprobs = True
    with pytest.raises(ScoringNotSupported, match="no logprobs"):
        model.score([instruction_request(verdict_request())])


def _check(api, tmp_path, **args) -> str:
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump({"models": {"served": {"backend": "openai", "args": {
        "model": "gguf", "base_url": api.openai_base_url, "max_retries": 0,
        "api_key_env": "SPARRING_TEST_UNSET_KEY", **args}}}}))
    res = CliRunner().invoke(app, ["models", "check", "served", "--models-file", str(path)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    return " ".join(res.output.split())


def test_models_check_reports_that_judges_score_by_instruction(llama, tmp_path):
    out = _check(llama, tmp_path, supports_prefill=False)
    assert "judges: score_instruction" in out and "'Answer with the letter only: A or B.'" in out
    assert "P(A)=" in out and "the options hold 90.0%" in out


def test_models_check_reports_prefix_scoring_on_a_server_that_continues_it(api, tmp_path):
    def table(body):
        last = body["messages"][-1]
        if last["role"] == "assistant" and last["content"] == "Answer:":  # continues the verdict prefix
            return [(" A", math.log(0.8)), (" B", math.log(0.15))]
        if "yes or no" in last["content"]:
            return [("yes", math.log(0.7)), ("no", math.log(0.2))]
        return None

    def reply(body):
        return " four, five, six" if body.get("continue_final_message") else "Debate helps."

    api.behaviour.table, api.behaviour.reply = table, reply
    out = _check(api, tmp_path, supports_prefill=True)
    assert "prefill: continued" in out
    assert "judges: score — verdicts are the probabilities of the letters A/B continuing 'Answer:'" in out
    assert "P(A)=0.842" in out and "the options hold 95.0%" in out


def test_models_check_reports_text_verdicts_on_a_server_without_logprobs(llama, tmp_path):
    llama.behaviour.omit_logprobs = True
    out = _check(llama, tmp_path)
    assert "cannot score" in out and "judges: generate" in out
