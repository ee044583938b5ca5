"""Benchmark suites: the shipped ones are valid experiment templates; placeholders, --partner,
--instances and lookup errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparring.engine.loader import config_from_data, resolve
from sparring.errors import ConfigError, UnknownNameError
from sparring.evaluation.suite import experiment_config, find_suite, load_suite, select_games
from sparring.gameapi.game import GAMES

SHIPPED = ("suite", "bench-quickstart")
CLEM_GAMES = {"taboo", "wordle", "wordle_withcritic", "dond", "textworld_cooking", "debate"}


def _registered(game: str) -> bool:
    try:
        GAMES.get(game)
    except UnknownNameError:
        return False
    return True


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_suites_cover_the_games_and_resolve(name):
    suite, path = load_suite(name)
    assert suite.version and set(suite.games) == CLEM_GAMES
    for key, entry in suite.games.items():
        for partner in (None, "smol-135m"):
            cfg = experiment_config(suite, path, key, "smollm2-135m", partner, instances=1)
            assert cfg["run"]["num_iters"] == 1
            assert "$model" not in str(cfg) and "$partner" not in str(cfg)
            if _registered(entry.game):  # taboo / wordle resolve here once their branch is merged
                exp = resolve(*config_from_data(cfg, path / f"{key}.yaml"))
                assert exp.game.name == entry.game


def test_placeholders_partner_and_instances(tmp_path: Path):
    suite, path = load_suite("suite")
    cfg = experiment_config(suite, path, "dond", "m1", None)
    assert cfg["name"] == "bench-dond" and cfg["run"]["num_iters"] == suite.games["dond"].instances
    assert [a["model"] for a in cfg["agents"].values()] == ["m1"]
    assert cfg["tournament"]["type"] == "self_play"
    paired = experiment_config(suite, path, "dond", "m1", "m2", instances=4, models_file="x.yaml")
    assert {n: a["model"] for n, a in paired["agents"].items()} == {"negotiator": "m1", "partner": "m2"}
    assert paired["tournament"] == {"type": "custom", "matchups": [["negotiator", "partner"]], "flip": True}
    assert paired["run"]["num_iters"] == 4 and Path(paired["models_file"]).is_absolute()
    big = experiment_config(suite, path, "dond", "m1", None, instances=10_000)
    assert big["run"]["num_iters"] == suite.games["dond"].instances  # --instances only trims
    debate = experiment_config(suite, path, "debate", "m1", "judge-model")
    assert debate["agents"]["judge"]["model"] == "judge-model" and debate["agents"]["debater"]["model"] == "m1"
    assert experiment_config(suite, path, "debate", "m1", None)["agents"]["judge"]["model"] == "m1"


def test_lookup_errors(tmp_path: Path):
    with pytest.raises(UnknownNameError, match="benchmark suite"):
        find_suite("no-such-suite")
    with pytest.raises(ConfigError, match="not found"):
        find_suite(str(tmp_path / "missing.yaml"))
    suite, _ = load_suite("suite")
    with pytest.raises(UnknownNameError, match="Did you mean: wordle"):
        select_games(suite, ["wordel"])
    assert select_games(suite, ["dond", "taboo", "dond"]) == ["dond", "taboo"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\ngames:\n  g:\n    game: dond\n    instances: 1\n    dataset: {name: x}\n"
                   "    agents: {a: {role: negotiator, model: fixed-model}}\n")
    with pytest.raises(ConfigError, match=r"\$model"):
        load_suite(str(bad))
