"""The iterative DPO loop end to end on a tiny random model with a scripted judge: two iterations,
a crash between stages, and the resume that continues where it stopped."""

from __future__ import annotations

import json

import pytest
import yaml
from rich.console import Console

from sparring.train.loop.config import load_loop
from sparring.train.loop.driver import Loop

pytestmark = pytest.mark.slow  # trains a tiny model four times: about a minute on 2 CPU cores


@pytest.fixture
def loop_file(tmp_path):
    from sparring.models.tiny import save_tiny_model

    tiny = save_tiny_model(tmp_path / "tiny", seed=0, vocab=1024)
    (tmp_path / "models.yaml").write_text(yaml.safe_dump({"models": {
        "scripted-judge": {"backend": "scripted", "args": {"score_mode": "random", "seed": 5}}}}))
    config = {
        "alias": "tiny-dpo", "iterations": 2, "output_dir": str(tmp_path / "loop"),
        "models_file": str(tmp_path / "models.yaml"), "policy_agent": "policy",
        "selfplay": {"game": "debate", "game_args": {"format": "debate", "rounds": 1},
                     "dataset": {"name": "generated", "split": "train", "limit": 2},
                     "agents": {"policy": {"role": "debater", "model": "ignored", "best_of_n": {"n": 2},
                                           "sampling": {"temperature": 1.0, "max_new_tokens": 6}},
                                "judge": {"role": "judge", "model": "scripted-judge"}},
                     "tournament": {"type": "self_play", "participants": ["policy"], "judges": ["judge"]}},
        "train": {"method": "dpo", "model": str(tiny), "max_steps": 1, "batch_size": 2, "max_length": 1024,
                  "dpo": {"soft": True}},
        "evaluation": {"dataset": {"name": "generated", "split": "test", "limit": 1}},
    }
    path = tmp_path / "tiny-loop.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_two_iterations_with_a_crash_between_stages_and_the_resume(loop_file, monkeypatch, tmp_path):
    config, file = load_loop(str(loop_file))
    trained: list[int] = []
    real_train = Loop.train

    def crash_in_iteration_two(self, k):
        if k == 2 and not any(t == -2 for t in trained):
            trained.append(-2)
            raise RuntimeError("killed between export and train")
        trained.append(k)
        return real_train(self, k)

    monkeypatch.setattr(Loop, "train", crash_in_iteration_two)
    with pytest.raises(RuntimeError, match="killed"):
        Loop(config, file).run()
    state = json.loads((tmp_path / "loop" / "state.json").read_text())
    assert state["iterations"]["1"]["done"] == ["play", "export", "train", "register", "check", "evaluate"]
    assert state["iterations"]["2"]["done"] == ["play", "export"]

    report = Loop(config, file).run()  # the rerun: continues at iteration 2's train stage
    assert trained == [1, -2, 2]  # iteration 1 was never trained again
    state = json.loads((tmp_path / "loop" / "state.json").read_text())
    for k in ("1", "2"):
        it = state["iterations"][k]
        assert it["done"] == ["play", "export", "train", "register", "check", "evaluate"]
        assert it["export"]["pairs"] > 0 and it["train"]["steps"] == 1
        assert "base" in it["evaluate"]["vs"]
    assert "tiny-dpo@1" in state["iterations"]["2"]["evaluate"]["vs"]  # @2 also plays @1
    models = yaml.safe_load((tmp_path / "loop" / "models.yaml").read_text())["models"]
    assert {"tiny-dpo@0", "tiny-dpo@1", "tiny-dpo@2", "scripted-judge"} <= set(models)
    assert models["tiny-dpo@2"]["args"]["default_adapter"] == "iter2"
    text = report.read_text()
    assert "| 2 |" in text and "win rate vs base" in text
    for k in ("1", "2"):  # the soft DPO's preference metrics reach the report (#25)
        metrics = state["iterations"][k]["train"]["metrics"]
        assert {"rewards/chosen", "rewards/rejected", "rewards/margins", "rewards/accuracies", "soft/floor"} <= set(metrics)
    assert "## Preference training" in text and "floor (entropy of p)" in text
    assert (tmp_path / "loop" / "preference_metrics.png").stat().st_size > 1000


def test_branched_selfplay_gives_the_pairs(loop_file, tmp_path):
    """`selfplay.branch` instead of best-of-N: the policy's first speech branches k ways, each
    continuation is judged, and sibling speeches become the pairs (source "branch")."""
    data = yaml.safe_load(loop_file.read_text())
    data["iterations"] = 1
    del data["selfplay"]["agents"]["policy"]["best_of_n"]
    data["selfplay"]["branch"] = {"target": "policy", "k": 4}
    data["selfplay"]["dataset"]["limit"] = 3
    data["export"] = {"rejected": "worst", "held_back": 0.3, "seed": 1}
    data["check"] = {"instances": 2}
    loop_file.write_text(yaml.safe_dump(data))
    config, file = load_loop(str(loop_file))
    console = Console(record=True, width=400)
    Loop(config, file, console=console).run()
    state = json.loads((tmp_path / "loop" / "state.json").read_text())
    it = state["iterations"]["1"]
    assert it["done"] == ["play", "export", "train", "register", "check", "evaluate"]
    rows = [json.loads(line) for line in open(it["export"]["path"])]
    held = [json.loads(line) for line in open(it["export"]["heldback_path"])]
    assert rows and held and len(held) == it["export"]["heldback"] and it["export"]["pairs"] == len(rows)
    both = rows + held
    assert {r["meta"]["source"] for r in both} == {"branch"} and all(r["chosen"] != r["rejected"] for r in both)
    # rejected: worst -> one pair per branch point, the best against the lowest-valued of its 4 siblings
    assert len({(r["meta"]["tree"], r["meta"]["branch_depth"]) for r in both}) == len(both)
    assert all(r["meta"]["siblings"] >= 2 for r in both)
    assert not {json.dumps(r, sort_keys=True) for r in rows} & {json.dumps(r, sort_keys=True) for r in held}
    assert 0 <= it["export"]["similarity"] <= 1 and it["export"]["questions"] >= 1
    # the trained adapter against its reference on both sets, token by token, saved and printed
    fit = it["train"]["fit"]
    assert fit["trained"]["pairs"] == len(rows) and fit["held back"]["pairs"] == len(held)
    for figures in fit.values():
        for side in ("chosen", "rejected"):
            assert figures[f"{side}_logratio"] == pytest.approx(
                figures[f"{side}_logratio_shared"] + figures[f"{side}_logratio_differing"], abs=1e-4)
    # the greedy check on training prompts: the warm policy (@0) and @1 on the first 2 training
    # questions, unbranched, the policy greedy; its reward and quoting paired per question
    check = it["check"]
    for side, alias in (("before", "tiny-dpo@0"), ("after", "tiny-dpo@1")):
        played = check[side]
        assert played["games"] == 2 and set(played["per_instance"]["reward"]) == set(it["export"]["instances"][:2])
        assert {"reward", "valid_quotes", "quotes", "words"} <= set(played["means"])
        cfg = yaml.safe_load(open(tmp_path / "loop" / "configs" / f"check-{side == 'after' and 1 or 0}.yaml"))
        policy = cfg["agents"]["policy"]
        assert policy["model"] == alias and policy["sampling"]["temperature"] == 0.0 and "branch" not in cfg
        assert cfg["dataset"]["limit"] == 2
    assert check["diff"]["reward"]["n"] == 2 and set(check["diff"]) == set(check["after"]["means"])
    out = console.export_text()
    assert "iteration 1 check (greedy, 2 games on training prompts): reward" in out and "valid_quotes" in out
    assert "## Greedy check on training prompts" in (tmp_path / "loop" / "report.md").read_text()
    assert "iteration 1 pairs:" in out and "near-identical" in out
    assert "iteration 1 fit, trained pairs:" in out and "iteration 1 fit, held back pairs:" in out
