"""Experiment config strictness: every mistake names the file, the configuration and the key."""

from __future__ import annotations

import pytest

from sparring.engine.config import RunSettings, config_hash
from sparring.engine.loader import build_agents, find_config, load_config, resolve
from sparring.errors import ConfigError, UnknownNameError


def load(path, **settings):
    cfg, p = load_config(path, RunSettings(**settings) if settings else None)
    return resolve(cfg, p)


def test_valid_config_resolves(make_config):
    exp = load(make_config())
    assert exp.name == "toyexp"  # default name: the file stem
    assert exp.participants == ["alice", "bob", "carol"] and exp.judges == ["judge"]
    # model spec defaults < agent sampling: t-random's spec sets max_new_tokens 32
    assert exp.samplings["alice"].max_new_tokens == 32
    assert exp.prompts["alice"].name == "toy-debater"


def test_unknown_top_level_key_names_file_key_and_suggestion(make_config):
    path = make_config({"tournamnet": {"type": "self_play"}})
    with pytest.raises(ConfigError) as e:
        load(path)
    msg = str(e.value)
    assert str(path) in msg and "toyexp" in msg and "tournamnet" in msg and "'tournament'" in msg


def test_unknown_nested_key_suggests_closest(make_config):
    with pytest.raises(ConfigError, match=r"tournament\.flipp: unknown key \(did you mean 'flip'\?\)"):
        load(make_config({"tournament": {"flipp": True}}))
    with pytest.raises(ConfigError, match=r"run\.max_lives.*did you mean 'max_live'"):
        load(make_config({"run": {"max_lives": 3}}))


def test_bad_game_args_are_prefixed(make_config):
    with pytest.raises(ConfigError, match=r"game_args\.rundos: unknown key \(did you mean 'rounds'\?\)"):
        load(make_config({"=game_args": {"rundos": 2}}))
    with pytest.raises(ConfigError, match=r"game_args\.rounds"):
        load(make_config({"game_args": {"rounds": 0}}))


def test_unknown_game_lists_known_games(make_config):
    with pytest.raises(ConfigError, match=r"key 'game'.*unknown game 'tyo'.*Did you mean: toy"):
        load(make_config({"game": "tyo"}))


def test_unknown_agent_in_tournament(make_config):
    with pytest.raises(ConfigError) as e:
        load(make_config({"tournament": {"participants": ["alice", "bobb"]}}))
    assert "tournament.participants[1]" in str(e.value) and "did you mean 'bob'" in str(e.value)
    with pytest.raises(ConfigError, match=r"tournament\.judges\[0\]"):
        load(make_config({"tournament": {"judges": ["jduge"]}}))
    with pytest.raises(ConfigError, match=r"tournament\.matchups\[0\]\[1\]"):
        load(make_config({"tournament": {"type": "custom", "matchups": [["alice", "zed"]]}}))


def test_agent_keys_checked_against_role_config(make_config):
    with pytest.raises(ConfigError, match=r"agents\.alice\.best_of_m: unknown key \(did you mean 'best_of_n'\?\)"):
        load(make_config({"agents": {"alice": {"best_of_m": {"n": 2}}}}))
    with pytest.raises(ConfigError, match=r"agents\.alice\.role.*unknown agent role 'debator'"):
        load(make_config({"agents": {"alice": {"role": "debator"}}}))
    with pytest.raises(ConfigError, match=r"agents\.alice\.model.*unknown model 't-randm'"):
        load(make_config({"agents": {"alice": {"model": "t-randm"}}}))
    # a scripted partner or judge of the shipped scripted.yaml, named without `models_file`: the error
    # says which file defines it and what to add (issue #61)
    with pytest.raises(ConfigError, match=r"agents\.alice\.model.*unknown model 'quote-judge'\. It is defined in "
                                          r"the shipped models file .*scripted\.yaml.*add `models_file: .*scripted"):
        load(make_config({"agents": {"alice": {"model": "quote-judge"}}}))
    with pytest.raises(ConfigError, match=r"agents\.alice\.sampling\.temperature"):
        load(make_config({"agents": {"alice": {"sampling": {"temperature": -1}}}}))
    with pytest.raises(ConfigError, match=r"agents\.judge\.verdict"):
        load(make_config({"agents": {"judge": {"verdict": "vote"}}}))


def test_roles_must_fit_seats(make_config):
    with pytest.raises(ConfigError, match=r"tournament\.participants\[0\].*role 'judge'"):
        load(make_config({"tournament": {"participants": ["judge", "alice"]}}))
    with pytest.raises(ConfigError, match=r"tournament\.judges\[0\].*not 'judge'"):
        load(make_config({"tournament": {"judges": ["alice"]}}))
    with pytest.raises(ConfigError, match="no judge seat"):
        load(make_config({"game_args": {"judged": False}, "tournament": {"judges": ["judge"]}}))
    with pytest.raises(ConfigError, match=r"matchups\[0\].*3 agents.*2 non-judge"):
        load(make_config({"tournament": {"type": "custom", "matchups": [["alice", "bob", "carol"]]}}))


def test_tournament_type_requirements(make_config):
    with pytest.raises(ConfigError, match="needs 'matchups'"):
        load(make_config({"tournament": {"type": "custom"}}))
    with pytest.raises(ConfigError, match="needs 'source_run'"):
        load(make_config({"tournament": {"type": "replicate"}}))
    with pytest.raises(ConfigError, match=r"tournament\.type.*'swap'"):
        load(make_config({"tournament": {"type": "swap"}}))


def test_prompt_override_typo_and_template_syntax(make_config):
    with pytest.raises(ConfigError, match=r"prompt_overrides\.systme.*did you mean 'system'"):
        load(make_config({"agents": {"alice": {"prompt_overrides": {"systme": "x"}}}}))
    with pytest.raises(ConfigError, match=r"template 'turn'.*agents\.alice\.prompts|agents\.alice\.prompts.*'turn'"):
        load(make_config({"agents": {"alice": {"prompt_overrides": {"turn": "{{ name "}}}}))
    exp = load(make_config({"agents": {"alice": {"prompt_overrides": {"turn": "Go, {{ name }}!"}}}}))
    assert exp.prompts["alice"].render("turn", name="A") == "Go, A!"


def test_missing_required_blocks(make_config):
    with pytest.raises(ConfigError, match=r"key 'dataset'"):
        load(make_config(drop=("dataset",)))
    with pytest.raises(ConfigError, match=r"key 'game'"):
        load(make_config(drop=("game",)))


def test_find_config_by_name_cwd_first_then_packaged(tmp_path, monkeypatch, make_config):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "configs" / "experiments").mkdir(parents=True)
    local = tmp_path / "configs" / "experiments" / "mine.yaml"
    local.write_text(make_config().read_text())
    assert find_config("mine") == local
    with pytest.raises(UnknownNameError, match="Did you mean: mine"):
        find_config("mien")
    with pytest.raises(ConfigError, match="not found"):
        find_config("nowhere/x.yaml")


def test_overrides_and_hash(make_config):
    path = make_config()
    a, _ = load_config(path)
    b, _ = load_config(path, RunSettings(num_iters=3, max_live=1, name="x", models_file=a.models_file))
    assert b.run.num_iters == 3 and b.run.max_live == 1 and b.run.name == "x"
    assert config_hash(a) == config_hash(b)  # volatile run settings do not change the experiment
    c, _ = load_config(path, RunSettings(seed=8))
    assert config_hash(a) != config_hash(c) and c.run.max_live == a.run.max_live  # unset: the config's own


def test_a_bad_setting_is_reported_like_the_yaml_key(make_config):
    with pytest.raises(ConfigError, match="run.max_live"):
        load_config(make_config(), RunSettings(max_live=0))
    with pytest.raises(Exception, match="extra"):
        RunSettings(max_lives=3)  # type: ignore[call-arg]  # typed: a misspelt option fails at once


def test_build_agents_panel_and_sampling(make_config):
    exp = load(make_config({"agents": {"judge2": {"role": "judge", "model": "t-fixed",
                                                 "sampling": {"temperature": 0.5}}},
                            "tournament": {"judges": ["judge", "judge2"]}}))
    agents = build_agents(exp)
    panel = agents["judge+judge2"]
    assert [j.name for j in panel.judges] == ["judge", "judge2"]
    assert agents["judge2"].sampling.temperature == 0.5


def test_a_copied_shipped_config_finds_the_scripted_models_file(tmp_path, monkeypatch):
    """`models_file: models/scripted.yaml` (as the shipped scripted configs write it) works from a
    config copied anywhere: a relative models file is also looked up among the shipped configs."""
    from importlib import resources

    shipped = resources.files("sparring") / "configs" / "experiments" / "scripted-debate.yaml"
    (tmp_path / "mine.yaml").write_text(shipped.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    exp = load(tmp_path / "mine.yaml")
    assert exp.config.models_file.endswith("scripted.yaml") and "judge" in exp.judges
