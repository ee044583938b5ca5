"""Pieces of TextWorld cooking that need no simulator: command parsing, the Java check, the gold
policy's refusal, instance selection and the report's summary."""

from __future__ import annotations

import pytest

from sparring.errors import BackendError, ConfigError, SparringError
from sparring.games.textworld_cooking import env as tw_env
from sparring.games.textworld_cooking.commands import match_command, parse_command
from sparring.games.textworld_cooking.gold import gold_command
from sparring.games.textworld_cooking.instance import CookingParams, CookingSourceArgs, fold_of, pick_seeds
from sparring.games.textworld_cooking.report import summarize
from sparring.types import GenerateRequest, Message


@pytest.mark.parametrize("reply, command", [
    ("take knife", "take knife"), ("> Take Knife.", "take knife"), ("`open fridge`", "open fridge"),
    ("\n\n  - slice red apple\nbecause...", "slice red apple"), ("Command: eat meal", "eat meal"),
    ("```\nprepare meal\n```", "prepare meal"), ("", ""), ("   \n ", ""),
])
def test_parse_command(reply, command):
    assert parse_command(reply) == command


def test_match_command_drops_articles_only_when_needed():
    valid = {"take knife", "open fridge"}
    assert match_command("take the knife", valid) == "take knife"
    assert match_command("open fridge", valid) == "open fridge"
    assert match_command("dance", valid) is None


def test_missing_java_fails_with_one_clear_message(monkeypatch):
    monkeypatch.setattr(tw_env.shutil, "which", lambda name: None)
    with pytest.raises(SparringError, match="apt-get install default-jre-headless"):
        tw_env.EnvPool("numLocations=1").acquire()


def test_gold_policy_refuses_requests_without_a_gold_action():
    req = GenerateRequest(messages=[Message(role="user", content="go")], context={"gold_action": "eat meal"})
    assert gold_command(req) == "eat meal"
    with pytest.raises(BackendError, match="gold path"):
        gold_command(GenerateRequest(messages=[Message(role="user", content="go")]))


def test_params_string_and_seed_selection():
    assert CookingParams().game_params() == ("numLocations=1,numIngredients=2,numDistractorItems=0,"
                                             "includeDoors=0,limitInventorySize=0")
    valid = list(range(100, 110))
    assert pick_seeds(valid, CookingSourceArgs(offset=2), "dev", 3, None) == [102, 103, 104]
    shuffled = pick_seeds(valid, CookingSourceArgs(), "dev", 5, 7)
    assert len(shuffled) == 5 and shuffled == pick_seeds(valid, CookingSourceArgs(), "dev", 5, 7)
    with pytest.raises(ConfigError, match="not dev seeds"):
        pick_seeds(valid, CookingSourceArgs(seeds=[1]), "dev", None, None)
    assert fold_of("val") == "dev" and fold_of(None) == "test"
    with pytest.raises(ConfigError):
        fold_of("holdout")


def test_summary_counts_invalid_commands_over_all_commands():
    s = summarize([{"success": True, "score": 1.0, "steps": 10, "n_invalid": 0, "gold_steps": 10},
                   {"success": False, "score": 0.5, "steps": 30, "n_invalid": 10, "gold_steps": 12}])
    assert s["success_rate"] == 0.5 and s["mean_score"] == 0.75 and s["invalid_rate"] == 0.25
    assert s["mean_steps_solved"] == 10 and summarize([]) == {"episodes": 0}
