"""Hostile model output through every game's parser and the store: random bytes, unicode
(surrogates, RTL, NUL, BOM), 1 MB strings, broken tags. Nothing may crash or fail an episode: every
invalid action is corrected or aborts the game, and is recorded as rejected."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from sparring.engine.config import open_store
from sparring.engine.play import Arena
from sparring.gameapi.game import GAMES
from sparring.models.scripted import ScriptedModel
from sparring.records.reader import iter_records

sys.path.insert(0, str(Path(__file__).parent))  # reply_helpers

FUZZ_MODEL = {"mode": "callable", "function": "reply_helpers:fuzz_reply", "score_mode": "random"}
CONFIGS = {
    "debate": {"game": "debate", "game_args": {"format": "debate", "rounds": 2},
               "dataset": {"name": "generated", "split": "all", "limit": 6},
               "agents": {"d": {"role": "debater", "model": "fuzz"}, "j": {"role": "judge", "model": "fuzz"}},
               "tournament": {"type": "self_play", "participants": ["d"], "judges": ["j"]}},
    "dond": {"game": "dond", "game_args": {"max_turns": 8, "max_errors": 3},
             "dataset": {"name": "dond_generated", "args": {"n": 12, "seed": 3}},
             "agents": {"a": {"role": "negotiator", "model": "fuzz"}, "b": {"role": "negotiator", "model": "fuzz"}},
             "tournament": {"type": "self_play", "participants": ["a"]}},
    "taboo": {"game": "taboo", "game_args": {"max_rounds": 3, "max_errors": 3},
              "dataset": {"name": "taboo_words", "split": "test", "limit": 6},
              "agents": {"d": {"role": "describer", "model": "fuzz"}, "g": {"role": "guesser", "model": "fuzz"}},
              "tournament": {"type": "custom", "matchups": [["d", "g"]]}},
    "wordle": {"game": "wordle", "game_args": {"max_guesses": 6, "max_errors": 3},
               "dataset": {"name": "words", "split": "test", "limit": 6},
               "agents": {"p": {"role": "guesser", "model": "fuzz"}},
               "tournament": {"type": "self_play", "participants": ["p"]}},
    "wordle_withcritic": {"game": "wordle_withcritic", "game_args": {"max_guesses": 6, "max_errors": 3},
                          "dataset": {"name": "words", "split": "test", "limit": 6},
                          "agents": {"p": {"role": "guesser", "model": "fuzz"}, "c": {"role": "critic", "model": "fuzz"}},
                          "tournament": {"type": "custom", "matchups": [["p", "c"]]}},
    "textworld_cooking": {"game": "textworld_cooking", "game_args": {"max_steps": 12},
                          "dataset": {"name": "cookingworld", "split": "train", "limit": 3},
                          "agents": {"p": {"role": "player", "model": "fuzz"}},
                          "tournament": {"type": "self_play", "participants": ["p"]}, "run": {"max_live": 2}},
}
# games whose simulator is an optional extra: (Python package, program on PATH)
NEEDS = {"textworld_cooking": ("textworld_express", "java")}


def _games() -> list[str]:
    return sorted({GAMES.get(n).name for n in GAMES.names()})


@pytest.mark.parametrize("game", _games())
def test_hostile_replies_never_crash_and_are_recorded_as_rejected(tmp_path, game):
    if game not in CONFIGS:
        pytest.skip(f"no fuzz configuration for game {game!r} (add one to CONFIGS)")
    if game in NEEDS:
        package, program = NEEDS[game]
        pytest.importorskip(package)
        if shutil.which(program) is None:
            pytest.skip(f"game {game!r} needs {program!r} on PATH")
    fuzz = ScriptedModel("fuzz", **FUZZ_MODEL, record_requests=False)
    with Arena.from_config(CONFIGS[game], models={"fuzz": fuzz}) as arena:
        with open_store(tmp_path / "run", arena.exp.config) as store:
            records = arena.play(arena.jobs(), store=store)
    assert records and all(r.status in ("complete", "aborted") for r in records), \
        [r.error for r in records if r.status == "failed"]
    stored = list(iter_records(tmp_path / "run"))
    assert len(stored) == len(records)
    for r in stored:
        invalid = [e for e in r.events if e.tag == "invalid"]
        rejected = [c for c in r.calls if c.rejected]
        if invalid:
            assert len(invalid) == len(rejected), r.id
        assert all(c.meta.get("correction") or c.meta.get("abort") for c in rejected)
        assert all("\udcff" not in (comp.text or "") for c in r.calls for comp in c.completions or [])
