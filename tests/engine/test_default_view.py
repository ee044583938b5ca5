"""The default view (issue #59): the conversation wherever a game offers it and no setting asks for
a re-rendered view; the resolved config names the view, so a run directory records it; a run
stored before the default changed keeps its rendered view when resumed."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
import yaml

from sparring.engine.config import ExperimentConfig, config_hash, read_config
from sparring.engine.loader import load_config, resolve
from sparring.engine.plan import keep_stored_view
from sparring.errors import ConfigError
from sparring.gameapi import GAMES
from sparring.gameapi.game import Game

SHIPPED = Path(str(resources.files("sparring") / "configs" / "experiments"))


def _resolve(name: str, **changes):
    cfg, path = load_config(SHIPPED / f"{name}.yaml")
    cfg = ExperimentConfig.model_validate({**cfg.model_dump(exclude_none=True), **changes})
    return resolve(cfg, path)


@pytest.mark.parametrize("name", ["scripted-debate", "scripted-dond", "scripted-taboo", "scripted-wordle",
                                  "textarena-tictactoe"])
def test_a_config_that_names_no_view_plays_the_conversation_and_records_it(name):
    exp = _resolve(name)
    assert exp.game.view == "conversation" and exp.config.view == "conversation"
    assert _resolve(name, view="rendered").game.view == "rendered"


def test_a_plug_in_game_without_the_view_plays_rendered(monkeypatch):
    monkeypatch.setattr(GAMES.get("debate"), "conversation", Game.conversation)
    exp = _resolve("scripted-debate")
    assert exp.game.view == "rendered" and exp.config.view == "rendered"


def test_a_history_window_keeps_the_rendered_view_and_refuses_the_conversation():
    pytest.importorskip("textworld_express")
    exp = _resolve("textworld-quickstart")  # history: 2 drops earlier steps: only a re-rendered view can
    assert exp.game.view == "rendered"
    with pytest.raises(ConfigError) as e:
        _resolve("textworld-quickstart", view="conversation")
    assert "game_args history shape only the rendered view" in str(e.value) and e.value.key == "view"
    assert _resolve("textworld-quickstart", game_args={"max_steps": 20}).game.view == "conversation"
    short = _resolve("textworld-quickstart", game_args={"max_steps": 20, "history_view": "short"})
    assert short.game.view == "rendered"


def test_an_old_run_keeps_its_rendered_view_and_a_new_one_its_conversation(tmp_path):
    cfg, _ = load_config(SHIPPED / "scripted-debate.yaml")
    old = tmp_path / "old"
    old.mkdir()
    (old / "config.yaml").write_text(yaml.safe_dump(cfg.model_dump(mode="json", exclude_none=True)))
    assert keep_stored_view(cfg, old).view == "rendered"  # stored before the default changed: rendered
    assert keep_stored_view(cfg.model_copy(update={"view": "conversation"}), old).view == "conversation"
    new = tmp_path / "new"
    new.mkdir()
    resolved = _resolve("scripted-debate").config
    (new / "config.yaml").write_text(yaml.safe_dump(resolved.model_dump(mode="json", exclude_none=True)))
    assert read_config(new).view == "conversation" and keep_stored_view(cfg, new).view is None
    assert keep_stored_view(cfg, tmp_path / "none").view is None  # a new run directory
    # an old run and a rendered one are the same experiment; a conversation-view run is another
    rendered = cfg.model_copy(update={"view": "rendered"})
    assert config_hash(cfg) == config_hash(rendered) != config_hash(resolved)
