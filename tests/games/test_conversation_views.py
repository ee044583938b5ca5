"""Every shipped game offers the conversation view (issue #59): played by the engine with its shipped
scripted models, the same games as the rendered view (same events, same rewards, where no reply
was rejected), and each
player's calls extend one another exactly: a call's prompt is the previous call's prompt, then the
reply as the model wrote it (a prefilled reply with its prefix), then what came since. The
engine's own growth check runs in every one of these episodes; TextArena and Deal or No Deal have
their own tests beside their games."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
import yaml

from sparring.engine.play import Arena
from sparring.gameapi import GAMES
from sparring.types import Message

SHIPPED = Path(str(resources.files("sparring") / "configs" / "experiments"))

# shipped config, how many jobs, and what else to set so the games stay seconds long
CASES = {
    "debate": ("scripted-debate", 8, {"game_args": {"format": "debate", "rounds": 2}}),
    "taboo": ("scripted-taboo", 12, {}),
    "taboo-prefill": ("scripted-taboo", 12, {"game_args": {"max_rounds": 3, "prefill": True}}),
    "wordle": ("scripted-wordle", 40, {}),
    "wordle-prefill": ("scripted-wordle", 8, {"game_args": {"max_guesses": 6, "max_errors": 3, "prefill": True}}),
    "wordle_withcritic": ("scripted-wordle-withcritic", 6, {}),
    # without the shipped config's history window, which only a re-rendered view honours
    "textworld_cooking": ("textworld-gold", 2, {"game_args": {"max_steps": 30}, "dataset": {"name": "cookingworld", "split": "train", "limit": 2, "args": {
        "params": {"numLocations": 1, "numIngredients": 2, "numDistractorItems": 0, "includeDoors": 0,
                   "limitInventorySize": 0}}}}),
}


def _play(name: str, limit: int, changes: dict, view: str) -> list:
    config = yaml.safe_load((SHIPPED / f"{name}.yaml").read_text(encoding="utf-8"))
    config.update(changes, view=view)
    with Arena.from_config(config, base_dir=SHIPPED) as arena:
        return sorted(arena.play(arena.jobs(limit=limit)), key=lambda r: (r.instance_id, r.matchup, r.flip, r.repeat))


def _reply(call) -> Message:
    text = call.completions[call.chosen or 0].text
    return Message(role="assistant", content=call.assistant_prefix + text)


@pytest.mark.parametrize("case", list(CASES))
def test_the_conversation_view_plays_the_same_games_and_each_call_extends_the_last(case):
    name, limit, changes = CASES[case]
    if case == "textworld_cooking":
        import sys

        sys.path.insert(0, str(Path(__file__).parent / "textworld"))
        from tw_helpers import require_simulator

        require_simulator()
    grown, rendered = _play(name, limit, changes, "conversation"), _play(name, limit, changes, "rendered")
    assert len(grown) == limit and all(r.status != "failed" for r in grown), [r.error for r in grown]
    joined = 0
    same = 0
    for g, r in zip(grown, rendered, strict=True):
        # after a rejected reply the views differ by design (the conversation keeps it), and a
        # scripted model that draws by its prompt may then play on differently
        if not any(c.rejected for c in [*g.calls, *r.calls]):
            assert [e.content for e in g.events] == [e.content for e in r.events]
            assert g.outcome.rewards == r.outcome.rewards
            same += 1
        for player in {c.player for c in g.calls}:
            calls = [c for c in g.calls if c.player == player and c.op == "generate" and c.completions]
            for a, b in zip(calls, calls[1:], strict=False):
                assert b.messages[: len(a.messages) + 1] == [*a.messages, _reply(a)], (case, g.id, player, b.turn)
                joined += 1
    assert joined > 0 and same > 0  # the games had calls to join, and games to compare
    if case == "wordle":  # the sloppy guesser's rejected replies stay, each with its correction
        assert any(c.rejected for r in grown for c in r.calls)


def test_every_shipped_game_offers_the_conversation_view():
    from sparring.gameapi.game import Game

    # clembench's recorded games are read, reported and exported, never played
    shipped = [n for n in GAMES.names() if GAMES.get(n).__module__.startswith("sparring.games.") and n != "clembench"]
    assert {"debate", "dond", "taboo", "wordle", "wordle_withcritic", "textworld_cooking"} <= set(shipped)
    lacking = [n for n in shipped if issubclass(GAMES.get(n), Game) and not GAMES.get(n).offers_conversation()]
    assert not lacking, f"shipped games without the conversation view: {lacking}"
