"""The game registry checks the contract at registration, resolves aliases in one place, and
every built-in game declares its hooks (typed) in its own folder."""

from __future__ import annotations

import pytest

from sparring.gameapi import GAMES
from sparring.gameapi.game import Game
from sparring.gameapi.hooks import GameHooks, Metric, PlayPanel
from sparring.registry import PluginError, Registry

_made: list[Registry] = []


def _registry() -> Registry:
    from sparring.gameapi.game import _check_game  # the check GAMES runs

    reg = Registry("game", check=_check_game)
    _made.append(reg)
    return reg


@pytest.fixture(autouse=True)
def _forget_test_registries():
    """Worker processes import every registry's modules: leave no test registry behind."""
    yield
    while _made:
        Registry.instances.remove(_made.pop())


def test_a_class_missing_methods_is_refused_naming_the_plugin():
    class HalfGame(Game):  # only players()
        def players(self):
            return {"A": "a"}

    with pytest.raises(PluginError) as e:
        _registry().register("half")(HalfGame)
    msg = str(e.value)
    assert "game plug-in" in msg and f"{__name__}." in msg and "'half'" in msg
    assert "missing method(s)" in msg and "reset" in msg and "outcome" in msg


def test_not_a_game_and_bad_hooks_are_refused():
    with pytest.raises(PluginError, match="not a subclass of sparring's Game"):
        _registry().register("x")(object)

    class Full(Game):
        hooks = {"quality": None}  # type: ignore[assignment]  # not a GameHooks

        def players(self): return {}
        def reset(self, instance, seats, rng, flip=False): return None
        def to_act(self, state): return []
        def action_spec(self, state, player): raise NotImplementedError
        def observation(self, state, player): return []
        def act(self, state, player, action): raise NotImplementedError
        def is_over(self, state): return True
        def outcome(self, state): raise NotImplementedError
        def events(self, state): return []

    with pytest.raises(PluginError, match="hooks must be a GameHooks"):
        _registry().register("full")(Full)
    Full.hooks = GameHooks(play=PlayPanel(roles=("a",), move_tags=frozenset({"turn"})))
    with pytest.raises(PluginError, match="move_tags need both move_form and parse_move"):
        _registry().register("full")(Full)
    Full.hooks = GameHooks(metrics=(Metric("m"),))
    assert _registry().register("full")(Full) is Full


def test_a_broken_entry_point_plugin_is_named_when_its_game_is_asked_for(monkeypatch):
    class EP:
        name, value = "broken", "somepkg.game"

        def load(self):
            reg.register("broken")(object)

    reg = _registry()
    reg._group = "sparring.games"
    monkeypatch.setattr("sparring.registry._entry_points", lambda group: [EP()])
    with pytest.raises(KeyError) as e:
        reg.get("broken")
    assert "broken (somepkg.game)" in str(e.value) and "PluginError" in str(e.value)


def test_aliases_resolve_in_one_place():
    assert GAMES.canonical("deal_or_no_deal") == "dond" and GAMES.canonical("dond") == "dond"
    assert GAMES.canonical("debate") == "debate" and GAMES.canonical("nope") == "nope"


def test_every_builtin_game_declares_its_hooks():
    hooks = {name: cls.hooks for name, cls in GAMES.items() if cls.__module__.startswith("sparring.games.")}
    assert hooks["dond"].play.roles == ("negotiator",) and hooks["debate"].play.roles == ("judge", "debater")
    assert hooks["dond"].quality is not None and hooks["debate"].quality is not None
    assert hooks["textworld_cooking"].quality is not None
    assert {h.name for h in hooks["dond"].human_data} == {"dond"} and {h.name for h in hooks["debate"].human_data} == {"nyu"}
    for name, h in hooks.items():
        assert h.metrics, f"{name} declares no headline metric"
        assert all(m.direction in ("higher", "lower") for m in h.metrics)


def test_metric_value_defaults_to_the_outcome_key():
    m = Metric("correct")
    assert m.of({"correct": True}) == 1.0 and m.of({"correct": 0.25}) == 0.25 and m.of({}) is None
    assert m.of({"correct": "yes"}) is None


def test_a_report_section_is_found_through_the_games_aliases():
    from sparring.analysis.report_sections import section_for

    assert type(section_for("deal_or_no_deal")) is type(section_for("dond")) and section_for("dond") is not None
    assert section_for("nope") is None


def test_sections_that_count_aborted_episodes_share_one_rule():
    from sparring.analysis.report_sections import rated_records, section_for
    from sparring.gameapi import Outcome
    from sparring.records.record import EpisodeRecord, SeatRecord

    def rec(status):
        return EpisodeRecord(id=status, experiment="e", game="taboo", instance_id="i", seed=0, status=status,
                             seats={"A": SeatRecord(agent="a", model="m", role="r")},
                             outcome=None if status == "failed" else Outcome())

    recs = [rec("complete"), rec("aborted"), rec("failed")]
    assert [r.id for r in section_for("taboo").rated(recs)] == ["complete", "aborted"]
    assert [r.id for r in section_for("debate").rated(recs)] == ["complete"]
    assert rated_records(recs, aborted=False) == section_for("debate").rated(recs)
