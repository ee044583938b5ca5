"""The shipped `quickstart` debate with its model served by a llama.cpp-like server: one that
ignores `continue_final_message` but returns `top_logprobs` (the local fake server in
`drops_prefill` mode, over real HTTP). Every verdict must be scored by instruction."""

from __future__ import annotations

import logging
import math
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from sparring.cli import app
from sparring.records.reader import iter_records

sys.path.insert(0, str(Path(__file__).parent.parent / "models"))
from fake_api_server import FakeAPIServer  # noqa: E402


@pytest.fixture
def llama():
    server = FakeAPIServer().start()
    server.behaviour.drops_prefill = True
    yield server
    server.stop()


def served_quickstart(tmp_path: Path, server: FakeAPIServer, *extra: str):
    """`sparring run quickstart` with the shipped model name pointing at `server`, as a user would
    after `sparring models check` told them to set `supports_prefill: false`."""
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"models": {"smollm2-135m": {"backend": "openai", "args": {
        "model": "smollm2-135m.gguf", "base_url": server.openai_base_url, "supports_prefill": False,
        "api_key_env": "SPARRING_TEST_UNSET_KEY", "max_retries": 0, "concurrency": 4}}}}))
    return CliRunner().invoke(app, ["run", "quickstart", "--models-file", str(models), "-o", str(tmp_path / "runs"),
                                    "--run-name", "q", *extra], env={"COLUMNS": "200"})


def test_every_quickstart_verdict_is_scored_by_instruction(llama, tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        res = served_quickstart(tmp_path, llama, "--max-live", "1")
    assert res.exit_code == 0, res.output
    records = list(iter_records(tmp_path / "runs" / "q"))
    assert len(records) == 8 and all(r.status == "complete" for r in records)  # 4 questions, flipped
    p_correct = []
    for rec in records:
        metrics = rec.outcome.metrics
        meta = metrics["verdict_meta"]
        assert meta["method"] == "score_instruction"
        weights = [math.exp(v) for v in meta["logprobs"]]  # the verdict IS the softmax of the log-probs
        assert list(metrics["probs"].values()) == pytest.approx([w / sum(weights) for w in weights])
        assert meta["mass"] == pytest.approx(0.9)
        verdict_calls = [c for c in rec.calls if c.tag == "verdict"]
        assert all(c.op == "score" for c in verdict_calls) and verdict_calls[-1].error is None
        p_correct.append(metrics["p_correct"])
    assert len({round(p, 9) for p in p_correct}) == len(records)  # distinct across debates
    # The first verdict's refused prefix call is the only one (episodes played one at a time here):
    # later verdicts ask by instruction at once.
    refused = [c for r in records for c in r.calls if c.error and "PrefillNotSupported" in c.error]
    assert len(refused) == 1
    out = " ".join(res.output.split())
    assert "verdicts by method │ score_instruction 8" in out
    assert not [r for r in caplog.records if "cannot score verdicts" in r.getMessage()]
    report = (tmp_path / "runs" / "q" / "report" / "report.html").read_text()
    assert "score_instruction 100.0% (8; the options held 90.0% of the probability)" in report


def test_without_logprobs_the_judge_warns_once_and_reads_text_verdicts(llama, tmp_path, caplog):
    llama.behaviour.omit_logprobs = True
    llama.behaviour.reply = lambda body: ("Debater_B | 70%" if "NN" in str(body["messages"][-1]["content"])
                                          else "I argue for my answer.")
    with caplog.at_level(logging.WARNING):
        res = served_quickstart(tmp_path, llama, "--num-iters", "2", "--no-report")
    assert res.exit_code == 0, res.output
    records = list(iter_records(tmp_path / "runs" / "q"))
    assert len(records) == 4
    assert {r.outcome.metrics["verdict_meta"]["method"] for r in records} == {"generate"}
    warnings = [r for r in caplog.records if "cannot score verdicts" in r.getMessage()]
    assert len(warnings) == 1 and "no logprobs" in warnings[0].getMessage()
    assert "verdicts by method │ generate 4" in " ".join(res.output.split())


@pytest.mark.slow  # worker processes
def test_workers_count_the_verdict_methods_of_their_episodes(llama, tmp_path):
    res = served_quickstart(tmp_path, llama, "--workers", "2", "--no-report")
    assert res.exit_code == 0, res.output
    assert "verdicts by method │ score_instruction 8" in " ".join(res.output.split())
