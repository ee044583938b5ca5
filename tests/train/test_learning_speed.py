"""The learning suite's speed ratios and loop driving: the rollout reference generates on the
engine's own calls of the measured model with their sampling; training tokens per row kind; the
shared iteration driver times every stage, registers, evaluates and re-checks disjointness; GRPO
starts from the DoND warm start when the suite registered one."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from sparring.errors import SparringError
from sparring.learning.context import Context, Played
from sparring.learning.results import Experiment, mean
from sparring.records.record import CallRecord, EpisodeRecord, SeatRecord
from sparring.types import Completion, Message, Sampling, Usage


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    from sparring.models.tiny import save_tiny_model

    return save_tiny_model(tmp_path_factory.mktemp("m") / "tiny", vocab=1024)


def call(model: str, text: str, tokens: int, sampling: Sampling, prefix: str = "") -> CallRecord:
    return CallRecord(player="p0", tag="speech", model=model, op="generate", assistant_prefix=prefix,
                      messages=[Message(role="user", content=text)], sampling=sampling,
                      completions=[Completion(text="x", usage=Usage(prompt_tokens=5, completion_tokens=tokens))])


def record(i: int, calls: list[CallRecord]) -> EpisodeRecord:
    return EpisodeRecord(id=f"e{i}", experiment="x", game="dond", instance_id=f"i{i}", status="complete", seed=0,
                         seats={"p0": SeatRecord(agent="a", model="m", role="r")}, calls=calls)


def test_the_rollout_reference_runs_the_engines_calls_of_the_measured_model_with_their_sampling(tiny_dir):
    from sparring.learning.speed import engine_rate, rollout_ratio

    mine = Sampling(max_new_tokens=3, temperature=0.0, stop=["\n"])
    records = [record(i, [call("tiny", f"offer {i}", 3, mine, prefix="[propose] ("),
                          call("partner", "scripted", 50, Sampling(max_new_tokens=64))]) for i in range(6)]
    eng = engine_rate(records, 2.0, "tiny")
    assert eng["engine_generated_tokens"] == 18 and eng["engine_tokens_per_s"] == 9.0  # the partner's 300 not counted
    assert len(eng["calls"]) == 6 and eng["calls"][0][1] == "[propose] (" and eng["calls"][0][2] == mine
    played = Played(records, 3.0, Path("."), 1.0, 2.0)
    out = rollout_ratio(str(tiny_dir), played, "tiny", batch_size=4, sample=2)
    assert out["raw_prompts"] == 4 and out["raw_batch"] == 4  # the sample fills at least one engine-sized batch
    assert 0 < out["raw_generated_tokens"] <= 4 * 3  # the calls' own max_new_tokens
    assert out["rollout_ratio"] == pytest.approx(9.0 / out["raw_tokens_per_s"])
    assert played.walls() == {"load_heldout": 1.0, "play_heldout": 2.0}


def test_no_ratio_is_computed_from_a_session_that_did_not_play_or_train(tiny_dir):
    """A resumed suite skips the held-out games an earlier session stored and may have nothing
    left to train: its play and training times do not cover that work, so no ratio is given."""
    from sparring.learning.speed import rollout_ratio, training_ratio

    records = [record(i, [call("tiny", f"offer {i}", 3, Sampling(max_new_tokens=3))]) for i in range(4)]
    resumed = Played(records, 0.5, Path("."), 0.4, 0.04, stored=4)
    out = rollout_ratio(str(tiny_dir), resumed, "tiny", batch_size=4)
    assert "rollout_ratio" not in out and "4 of the base model's 4 held-out games" in out["rollout_unmeasured"]
    assert "train_ratio" not in training_ratio(0.0, 0.0, 1000, 1e9)
    assert training_ratio(100.0, 2.0, 1000, 6e6)["train_ratio"] == pytest.approx(0.05)


def test_training_tokens_per_row_kind_and_rows_seen(tiny_dir):
    from sparring.learning.speed import row_tokens, run_tokens

    prompt = [{"role": "user", "content": "What do you offer?"}]
    a, b = [{"role": "assistant", "content": "All the books."}], [{"role": "assistant", "content": "No."}]
    model = str(tiny_dir)
    sft = row_tokens(model, {"messages": prompt + a})
    assert sft == row_tokens(model, {"prompt": prompt, "completion": a}) > 0
    assert row_tokens(model, {"prompt": prompt, "chosen": a, "rejected": b}) == sft + row_tokens(
        model, {"messages": prompt + b})  # both sequences of a pair
    rows = [{"messages": prompt + a}] * 3
    assert run_tokens(model, rows, steps=1, batch_rows=2) == 2 * sft  # 1 step of 2 rows
    assert run_tokens(model, rows, steps=10, batch_rows=2) == 3 * sft  # one epoch: every row once
    assert run_tokens(model, [], steps=3, batch_rows=2) == 0.0


class FakeLoop:
    """What `run_iterations` reads of `sparring.train.loop.driver.Loop`: config, stage(), state."""

    def __init__(self, root: Path, instances: list[list[str]]):
        self.root, self.instances, self.ran = root, instances, []
        self.config = SimpleNamespace(iterations=len(instances),
                                      train=SimpleNamespace(batch_size=2, gradient_accumulation=1, epochs=1.0))
        self.state: dict = {"iterations": {}}

    def stage(self, k: int, stage: str) -> dict:
        self.ran.append(f"{k}:{stage}")
        if stage == "export":
            path = self.root / f"rows-{k}.jsonl"
            path.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"},
                                                     {"role": "assistant", "content": "hello"}]}) + "\n")
            return {"path": str(path), "pairs": 1, "instances": self.instances[k - 1]}
        if stage == "train":
            adapter = self.root / f"adapter-{k}"
            adapter.mkdir(exist_ok=True)
            self.state["iterations"][str(k)] = {"train": {"adapter": str(adapter), "rows": 1, "steps": 1, "loss": 0.5}}
        if stage == "check":  # the greedy check: none asked in iteration 1, a reading in iteration 2
            return None if k == 1 else {"diff": {"reward": {"before": 0.4, "after": 0.6, "diff": 0.2, "ci_low": 0.1,
                                                            "ci_high": 0.3, "n": 2}}}
        return {}


def test_run_iterations_times_every_stage_registers_evaluates_and_checks_disjointness(tmp_path, tiny_dir):
    from sparring.learning.loops import run_iterations

    ctx = Context(out=tmp_path, size="quick", model=str(tiny_dir), label="tiny")
    exp = Experiment("x", "", "tiny", "score", training_ids=[], heldout_ids=["h1", "h2"])
    evaluated = []

    def evaluate(alias: str, name: str):
        evaluated.append((alias, name))
        return {"score": mean([0.5, 1.0])}, {"h1": 0.5, "h2": 1.0}, Played([], 4.0, tmp_path, 1.5, 2.5)

    loop = FakeLoop(tmp_path, [["t1"], ["t2"]])
    done = run_iterations(ctx, exp, loop, "it", evaluate, {"h1": 0.0, "h2": 1.0}, "score",
                          lambda export, train: {"pairs": export["pairs"], "loss": train["loss"]}, suffix=" (j)")
    assert loop.ran == [f"{k}:{s}" for k in (1, 2) for s in ("play", "export", "train", "register", "check")]
    assert evaluated == [("tiny@it-1", "it-1"), ("tiny@it-2", "it-2")] and done.final == "tiny@it-2"
    assert set(ctx.adapters) == {"tiny@it-1", "tiny@it-2"}
    assert [s.name for s in exp.stages] == ["it-1", "it-2"] and exp.stages[0].info == {"pairs": 1, "loss": 0.5}
    assert exp.stages[1].info == {"pairs": 1, "loss": 0.5, "check/reward": [0.4, 0.6, 0.2, 0.1, 0.3]}
    assert set(exp.stages[0].wall_s) == {"play", "export", "train", "register", "check", "load_heldout",
                                         "play_heldout"}
    assert exp.training_ids == ["t1", "t2"] and exp.paired["score it-2 - base (j)"]["mean_diff"] == pytest.approx(0.25)
    assert done.train_tokens > 0 and done.train_s == pytest.approx(sum(w["train"] for w in done.walls))
    with pytest.raises(SparringError, match="disjoint"):  # a held-out scenario trained on is refused
        run_iterations(ctx, Experiment("y", "", "tiny", "score", [], ["h1"]), FakeLoop(tmp_path, [["h1"]]),
                       "it", evaluate, {}, "score", lambda e, t: {})


def test_grpo_starts_from_the_dond_warm_start_when_the_suite_registered_it(tmp_path):
    from sparring.learning.experiments.grpo import start_adapter

    ctx = Context(out=tmp_path, size="quick", model="smollm2-135m", label="smollm2-135m")
    assert start_adapter(ctx) == (None, None)
    ctx.adapters["smollm2-135m@dond-selfplay-2"] = "/x/iter"
    assert start_adapter(ctx) == (None, None)
    ctx.adapters["smollm2-135m@dond-warm"] = "/x/warm"
    assert start_adapter(ctx) == ("smollm2-135m@dond-warm", "/x/warm")