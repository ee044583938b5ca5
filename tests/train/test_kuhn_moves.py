"""What the Kuhn Poker experiment reports a policy did with each card: moves read as TextArena reads
them (its action wrapper brackets a reply that has no bracket), so a bare `call` is a call, not an
invalid move, and a reply TextArena would refuse is counted as invalid."""

from __future__ import annotations

from types import SimpleNamespace

from sparring.train.learning.kuhn import moves_by_card


def _call(player: str, card: str, text: str) -> SimpleNamespace:
    message = SimpleNamespace(content=f"[GAME] ### Starting round 1 out of 1 rounds. Your card is: '{card}'")
    return SimpleNamespace(player=player, op="generate", messages=[message],
                           completions=[SimpleNamespace(text=text)])


def test_moves_are_read_per_card_as_textarena_reads_them():
    seats = {"Player 0": SimpleNamespace(agent="policy"), "Player 1": SimpleNamespace(agent="opponent")}
    record = SimpleNamespace(seats=seats, calls=[
        _call("Player 0", "K", "[Bet]"), _call("Player 0", "K", " call "), _call("Player 0", "J", "I fold"),
        _call("Player 0", "Q", "[check] then [bet]"), _call("Player 1", "Q", "[fold]")])
    assert moves_by_card([record]) == {"J": {"invalid": 1}, "K": {"bet": 1, "call": 1}, "Q": {"check": 1}}
