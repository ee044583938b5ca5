"""The learning suite's own machinery: disjointness is enforced, intervals and paired differences
are computed, learning.json / learning.md / the curves are written, the quote judge's rule."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from sparring.errors import SparringError
from sparring.learning.results import Experiment, Stage, check_disjoint, mean, paired, rate


def test_a_held_out_set_that_overlaps_training_is_refused():
    with pytest.raises(SparringError, match="also in the training set"):
        check_disjoint("x", ["a", "b"], ["b", "c"])
    with pytest.raises(SparringError, match="empty"):
        check_disjoint("x", ["a"], [])
    with pytest.raises(SparringError, match="disjoint"):
        Experiment("x", "", "m", "score", training_ids=["i1"], heldout_ids=["i1", "i2"])
    check_disjoint("x", ["a"], ["b"])


def test_rates_means_and_paired_differences():
    r = rate([True, False, True, True])
    assert r.value == 0.75 and r.n == 4 and 0.2 < r.ci[0] < 0.75 < r.ci[1] <= 1.0
    m = mean([0.0, 1.0, 0.5])
    assert m.value == pytest.approx(0.5) and m.ci[0] <= 0.5 <= m.ci[1]
    p = paired({"a": 0.0, "b": 0.2, "c": 0.5}, {"a": 1.0, "b": 0.2, "c": 0.7, "d": 9.0})
    assert p["n"] == 3 and p["n_positive"] == 2 and p["n_zero"] == 1
    assert p["mean_diff"] == pytest.approx(0.4)


def _experiment() -> Experiment:
    e = Experiment("toy", "a toy", "tiny", "score", training_ids=["t1", "t2"], heldout_ids=["h1", "h2", "h3"])
    e.stages = [Stage("base", 0, {"score": mean([0.1, 0.2, 0.0])}, {"play_heldout": 3.0}),
                Stage("sft-s0", 4, {"score": mean([0.3, 0.4, 0.2])}, {"train": 5.0}, seed=0),
                Stage("sft-s1", 4, {"score": mean([0.2, 0.5, 0.1])}, {"train": 5.0}, seed=1)]
    e.paired["score sft-s0 - base"] = paired({"h1": 0.1, "h2": 0.2, "h3": 0.0}, {"h1": 0.3, "h2": 0.4, "h3": 0.2})
    return e


def test_the_suite_writes_json_markdown_and_a_curve_per_experiment(tmp_path):
    from sparring.learning.report import write_suite

    paths = write_suite(tmp_path, "quick", [_experiment()], {"machine": "test"})
    data = json.loads(paths["json"].read_text())
    (exp,) = data["experiments"]
    assert exp["training_ids"] == ["t1", "t2"] and exp["heldout_ids"] == ["h1", "h2", "h3"] and exp["disjoint"]
    stage = exp["stages"][1]
    assert stage["metrics"]["score"]["n"] == 3 and len(stage["metrics"]["score"]["ci"]) == 2
    assert stage["wall_s"] == {"train": 5.0}
    md = paths["md"].read_text()
    assert "| sft-s1 | 4 | 1 |" in md and "disjoint: checked" in md and "paired score sft-s0 - base" in md
    png = tmp_path / "curves" / "toy.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_run_suite_runs_registered_experiments_and_keeps_going_after_a_failure(tmp_path, monkeypatch):
    from sparring.learning import suite
    from sparring.learning.registry import EXPERIMENTS

    monkeypatch.setattr(suite, "load_experiments", lambda: EXPERIMENTS)
    monkeypatch.setattr(suite, "quick_model", lambda out: "smollm2-135m")
    monkeypatch.setitem(EXPERIMENTS, "good", lambda ctx: _experiment())

    def broken(ctx):
        raise RuntimeError("boom")

    monkeypatch.setitem(EXPERIMENTS, "broken", broken)
    paths = suite.run_suite("quick", tmp_path, only=["broken", "good"])
    data = json.loads(paths["json"].read_text())
    assert [e["name"] for e in data["experiments"]] == ["toy"]
    assert "boom" in data["failures"]["broken"]
    assert (tmp_path / "models.yaml").is_file()

    def leaky(ctx):
        return Experiment("leak", "", "m", "score", training_ids=["x"], heldout_ids=["x"])

    monkeypatch.setitem(EXPERIMENTS, "leaky", leaky)
    with pytest.raises(SparringError, match="disjoint"):
        suite.run_suite("quick", tmp_path, only=["leaky"])
    with pytest.raises(SparringError, match="unknown experiment"):
        suite.run_suite("quick", tmp_path, only=["nope"])


def _judge_request(speech_a: str, speech_b: str):
    from sparring.types import Message, ScoreRequest

    system = ("You are the judge of a debate.\n\nQuestion: What kind of animal is Osric's pet?\n"
              "A: a goose\nB: a donkey")
    user = f"Debater_A: {speech_a}\n\nDebater_B: {speech_b}\n\nWhich answer is correct? Reply with A or B."
    return ScoreRequest(messages=[Message(role="system", content=system), Message(role="user", content=user)],
                        options=[" A", " B"])


def test_the_quote_judge_prefers_valid_quotes_that_support_the_side():
    from sparring.games.debate.scripted_judge import debater_score, quote_judge_weights

    plain = "I am right about this."
    quoted = "The story says <quote>Osric fed his goose every morning</quote> so it is a goose."
    invalid = "The story says <invalid_quote>made up words</invalid_quote> trust me."
    wa, wb = quote_judge_weights(_judge_request(quoted, plain))
    assert wa > wb * 20  # +2 valid quote, +1 supports A, +1 names A
    wa, wb = quote_judge_weights(_judge_request(invalid, plain))
    assert wa < wb
    assert quote_judge_weights(_judge_request(quoted, plain)) == quote_judge_weights(_judge_request(quoted, plain))
    assert debater_score(quoted, "a goose") == pytest.approx(1 + 2 + 1 + 0.01 * len(
        "The story says so it is a goose.".split()))
    assert math.isfinite(debater_score("", ""))


def test_the_quote_judge_is_registered_as_a_scripted_model():
    from sparring.models.registry import create_model, load_model_specs
    from sparring.models.scripted import ScriptedModel

    specs = load_model_specs("sparring/configs/experiments/models/scripted.yaml")
    judge = create_model("quote-judge", specs)
    assert isinstance(judge, ScriptedModel)
    (lp,) = judge.score([_judge_request("<quote>the goose</quote> a goose", "no")])
    assert math.exp(lp[0]) > 0.9


def test_check_results_flags_failures_missing_experiments_and_overlaps(tmp_path):
    from sparring.learning.report import check_results, write_suite

    paths = write_suite(tmp_path, "quick", [_experiment()], {"failures": {}})
    assert check_results(paths["json"], ["toy"]) == []
    problems = check_results(paths["json"], ["toy", "other"])
    assert problems == [f"other is missing from {paths['json']}"]
    data = json.loads(paths["json"].read_text())
    data["experiments"][0]["heldout_ids"].append("t1")
    data["failures"] = {"grpo": "RuntimeError: boom\ntrace"}
    paths["json"].write_text(json.dumps(data))
    problems = check_results(paths["json"], ["toy"])
    assert "grpo failed: RuntimeError: boom" in problems and any("overlapping" in p for p in problems)


@pytest.mark.parametrize("size", ["quick", "full"])
def test_the_loop_experiments_build_valid_loop_configs(tmp_path, size):
    from sparring.learning.context import Context
    from sparring.learning.experiments import debate_dpo as debate
    from sparring.learning.experiments import dond_selfplay as dond
    from sparring.learning.experiments import dond_selfplay_mutual as mutual

    ctx = Context(out=tmp_path, size=size, model="smollm2-135m", label="smollm2-135m")
    d = debate.loop_config(ctx, debate.SIZES[size], str(tmp_path / "warm"))
    assert d.method == "dpo" and d.selfplay["agents"]["judge"]["model"] == "quote-judge"
    assert d.warm_start is not None and d.warm_start.adapter == str(tmp_path / "warm")  # DPO starts from the SFT'd debater
    assert d.selfplay["dataset"]["split"] == "train" and d.evaluation.dataset["split"] == "test"
    warm = {"human": "dond", "file": str(tmp_path / "data.txt"), "split": "train", "limit": 4}
    n = dond.loop_config(ctx, dond.SIZES[size], "dond-selfplay", warm, [])
    assert n.method == "sft" and n.warm_start is not None and n.export.require == []
    assert n.selfplay["dataset"]["split"] == "train" and n.evaluation.dataset["split"] == "test"
    m = dond.loop_config(ctx, mutual.MUTUAL[size], "dond-selfplay-mutual", {"adapter": str(tmp_path / "warm")},
                          ["scored_both"])
    assert m.warm_start is not None and m.warm_start.adapter == str(tmp_path / "warm")
    # the full size keeps only deals where both sides score; the quick one keeps every game (a pipeline check)
    assert m.export.require == (["scored_both"] if size == "full" else [])
    # its iterations' SFT is capped apart from the warm start's (fitted with dond-selfplay's own size)
    assert m.train.max_steps == (24 if size == "full" else 1) and n.train.max_steps == dond.SIZES[size]["max_steps"]


def test_registered_adapters_become_model_specs_and_transfer_picks_the_final_ones(tmp_path):
    import yaml

    from sparring.learning.context import Context
    from sparring.learning.experiments.transfer import finals, trained_game
    from sparring.models.registry import load_model_specs

    ctx = Context(out=tmp_path, size="quick", model="smollm2-135m", label="smollm2-135m")
    adapter = tmp_path / "a"
    adapter.mkdir()
    for stage in ("textworld-sft-s0-c1", "textworld-sft-s0", "textworld-sft-s1", "textworld-sft-g24", "dond-warm",
                  "dond-selfplay-1", "dond-selfplay-2", "debate-dpo-1", "debate-dpo-2", "grpo"):
        ctx.register(stage, adapter)
    specs = load_model_specs(ctx.models_file)
    spec = specs["smollm2-135m@textworld-sft-s0"]
    assert spec.backend == "hf" and spec.args["default_adapter"] == "trained"
    assert spec.args["adapters"]["trained"] == str(adapter.resolve())
    assert finals(ctx.adapters) == ["smollm2-135m@textworld-sft-s0", "smollm2-135m@dond-selfplay-2",
                                    "smollm2-135m@debate-dpo-2", "smollm2-135m@grpo"]
    assert trained_game("smollm2-135m@grpo") == "dond" and trained_game("x@textworld-sft-s0") == "textworld_cooking"
    again = Context(out=tmp_path, size="quick", model="smollm2-135m", label="smollm2-135m")
    again.load_adapters()
    assert again.adapters == ctx.adapters
    assert "quote-judge" in yaml.safe_load(ctx.models_file.read_text())["models"]


def test_the_cli_command_refuses_an_unknown_suite(tmp_path):
    from sparring.cli import main

    with pytest.raises(SystemExit) as e:
        main(["learning", "--suite", "huge", "--output", str(tmp_path)])
    assert e.value.code == 2


def test_the_cli_help_names_every_experiment_of_the_suite():
    """`sparring learning --help` lists the experiments without importing the suite (the help
    stays instant), from `sparring.learning.order`: it must name every experiment the suite runs."""
    import inspect

    from sparring.cli.learning import learning
    from sparring.learning.suite import ORDER

    help_text = inspect.signature(learning).parameters["only"].default.help
    assert all(name in help_text for name in ORDER), help_text


def test_every_experiment_of_the_suite_is_one_module_named_as_the_experiment():
    """The registry is a scan of `sparring.learning.experiments`: each name in the suite's order is
    registered by the module of the same name, and nothing else is registered."""
    import inspect

    from sparring.learning.registry import load_experiments
    from sparring.learning.suite import ORDER

    found = load_experiments()
    assert set(ORDER) <= set(found)
    for name in ORDER:
        assert inspect.getmodule(found[name]).__name__ == f"sparring.learning.experiments.{name.replace('-', '_')}"


def test_two_suite_runs_compare_by_their_held_out_figures(tmp_path):
    """`scripts/run_learning.py --compare A B`: the held-out figures (not wall times or speeds) of
    two learning.json files, identical or listed."""
    import subprocess
    import sys
    from pathlib import Path

    from sparring.learning.report import compare_figures

    a = _experiment().to_json()
    before = {"suite": "quick", "experiments": [a]}
    timed = json.loads(json.dumps(before))
    timed["experiments"][0]["wall_s"] = 99.0  # a slower machine: the same figures
    assert compare_figures(before, timed) == (3 + 1 + 2, [])  # 3 stages' scores, 1 paired, 2 id lists
    moved = json.loads(json.dumps(before))
    moved["experiments"][0]["stages"][1]["metrics"]["score"]["value"] = 0.5
    same, lines = compare_figures(before, moved)
    assert len(lines) == 1 and lines[0].startswith("differs: toy / sft-s0 / score")
    files = []
    for name, data in (("a.json", before), ("b.json", moved)):
        (tmp_path / name).write_text(json.dumps(data))
        files.append(str(tmp_path / name))
    script = Path(__file__).resolve().parents[2] / "scripts" / "run_learning.py"
    out = subprocess.run([sys.executable, str(script), "--compare", *files], capture_output=True, text=True)
    assert out.returncode == 1 and "1 not" in out.stdout


def test_the_dpo_precheck_overrides_a_design_and_its_loop_samples_at_the_given_temperature(tmp_path):
    """scripts/debate_dpo_loop_check.py: the experiment's arm with the command line's overrides (warm-start
    steps, branch temperature, learning rate, iterations, the greedy check always on), which the
    arm's loop config then uses; the experiment's own arm is left as it is."""
    import importlib.util

    from sparring.learning.context import Context
    from sparring.learning.experiments import debate_dpo, debate_dpo_contrast

    spec = importlib.util.spec_from_file_location("precheck", Path(__file__).parents[2] / "scripts" / "debate_dpo_loop_check.py")
    precheck = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(precheck)
    args = precheck.build_parser().parse_args(["--output", str(tmp_path), "--demo-steps", "30", "--temperature", "0.5",
                                               "--learning-rate", "5e-5", "--iterations", "2"])
    arm = precheck.design("debate-dpo-contrast", "full", args)
    size = arm.sizes["full"]
    assert (size["demo_steps"], size["iterations"], arm.temperature, arm.train["learning_rate"]) == (30, 2, 0.5, 5e-5)
    assert arm.check and size["check"] == 8
    assert debate_dpo_contrast.ARM.temperature == 0.7 and debate_dpo_contrast.ARM.sizes["full"]["demo_steps"] == 42
    ctx = Context(out=tmp_path, size="full", model="smollm2-135m", label="smollm2-135m")
    config = debate_dpo.loop_config(ctx, size, str(tmp_path / "warm"), arm)
    assert config.selfplay["agents"]["policy"]["sampling"]["temperature"] == 0.5
    assert config.iterations == 2 and config.train.learning_rate == 5e-5 and config.check.instances == 8
    plain = precheck.design("debate-dpo", "quick", precheck.build_parser().parse_args(["--output", str(tmp_path)]))
    assert plain.check and plain.sizes["quick"]["check"] == 1 and plain.temperature == 0.9


def test_an_experiment_missing_its_extra_names_the_install_command():
    from sparring.learning.extras import require_extra

    require_extra("x", "yaml", "dev", "PyYAML")  # present: nothing happens
    with pytest.raises(SparringError, match=r"textarena-kuhn needs TextArena: pip install 'sparring\[textarena\]'"):
        require_extra("textarena-kuhn", "no_such_module_here", "textarena", "TextArena")
