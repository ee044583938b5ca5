"""The loop's greedy check on training prompts, its parts without a model: the debate behaviour
hook, the greedy plan built from the self-play config, and the paired comparison."""

from __future__ import annotations

import pytest

from sparring.games.debate.hooks import behaviour
from sparring.train.loop.check import check_line, check_plan, compare
from sparring.train.loop.config import LoopConfig


def test_debate_behaviour_is_per_speech_quoting_of_one_debater():
    m = {"speech_words": {"Debater_A": [10, 20], "Debater_B": [5]},
         "quote_stats": {"Debater_A": {"n_valid": 1, "n_quotes": 3}, "Debater_B": {"n_valid": 0, "n_quotes": 0}}}
    assert behaviour(m, "Debater_A") == {"valid_quotes": 0.5, "quotes": 1.5, "words": 15.0}
    assert behaviour(m, "Debater_B") == {"valid_quotes": 0.0, "quotes": 0.0, "words": 5.0}
    assert behaviour({}, "Debater_A") == {}  # an aborted debate without speeches measures nothing


def test_the_plan_is_the_selfplay_config_greedy_unbranched_on_the_first_training_instances():
    selfplay = {"game": "debate", "dataset": {"name": "generated", "split": "train", "limit": 24},
                "agents": {"policy": {"role": "debater", "model": "x", "best_of_n": {"n": 4},
                                      "sampling": {"temperature": 0.9, "max_new_tokens": 48}},
                           "judge": {"role": "judge", "model": "evidence-judge"}},
                "tournament": {"type": "self_play", "participants": ["policy"], "judges": ["judge"], "repeats": 3},
                "branch": {"target": "policy", "k": 4}, "run": {"seed": 0}}
    config = LoopConfig.model_validate({"selfplay": selfplay, "check": {"instances": 8},
                                        "evaluation": {"dataset": {"name": "generated", "split": "test"}}})
    plan = check_plan(config, "debater@1")
    assert "branch" not in plan and "repeats" not in plan["tournament"]
    assert plan["agents"]["policy"] == {"role": "debater", "model": "debater@1",
                                        "sampling": {"temperature": 0.0, "max_new_tokens": 48}}
    assert plan["agents"]["judge"] == selfplay["agents"]["judge"]
    assert plan["dataset"] == {"name": "generated", "split": "train", "limit": 8}
    assert selfplay["branch"] and selfplay["agents"]["policy"]["best_of_n"]  # the loop's own config untouched
    small = config.model_copy(update={"check": config.check.model_copy(update={"instances": 50})})
    assert check_plan(small, "debater@1")["dataset"]["limit"] == 24  # never more than self-play has


def test_the_comparison_is_paired_per_instance_with_the_reward_first():
    before = {"games": 4, "means": {"reward": 0.5, "valid_quotes": 0.5},
              "per_instance": {"reward": {"q1": 0.5, "q2": 0.5}, "valid_quotes": {"q1": 1.0, "q2": 0.0}}}
    after = {"games": 4, "means": {"reward": 0.75, "valid_quotes": 0.0},
             "per_instance": {"reward": {"q1": 1.0, "q2": 0.5}, "valid_quotes": {"q1": 0.0, "q2": 0.0}}}
    diffs = compare(before, after)
    assert list(diffs) == ["reward", "valid_quotes"]
    assert diffs["reward"]["diff"] == pytest.approx(0.25) and diffs["reward"]["n"] == 2
    assert diffs["valid_quotes"]["diff"] == pytest.approx(-0.5)
    assert diffs["valid_quotes"]["ci_low"] <= -0.5 <= diffs["valid_quotes"]["ci_high"]
    line = check_line(1, 4, diffs)
    assert line.startswith("iteration 1 check (greedy, 4 games on training prompts): reward 0.500 → 0.750 (+0.250")

