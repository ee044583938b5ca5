"""Kuhn Poker's theory (`sparring.stats.kuhn`) and the scripted players built on it: the
equilibrium family is unexploitable and worth -1/18 to the first to act, the best responses are the
best of every pure strategy, and the equilibrium player draws its mixed moves per game."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from sparring.games.textarena.scripted import kuhn_equilibrium, random_per_game
from sparring.stats import kuhn
from sparring.types import GenerateRequest, Message


@pytest.mark.parametrize("alpha", [0.0, 1 / 6, 1 / 3])
def test_every_equilibrium_is_worth_minus_one_eighteenth_and_unexploitable(alpha):
    e = kuhn.equilibrium(alpha)
    assert set(e) == set(kuhn.INFOSETS) and len(e) == 12
    assert kuhn.value(e, e) == pytest.approx(kuhn.GAME_VALUE_FIRST, abs=1e-12)
    assert kuhn.best_response_values(e) == pytest.approx({"vs_first": 1 / 18, "vs_second": -1 / 18}, abs=1e-12)
    assert kuhn.exploitability(e) == pytest.approx(0.0, abs=1e-12)


def _pure(history_seat: str, choice: tuple[int, ...]) -> dict[str, dict[str, float]]:
    """A pure strategy of one seat's 6 information sets (1 = the aggressive move); the other seat's
    information sets get the equilibrium's moves (they do not matter to that seat's value)."""
    out = kuhn.equilibrium()
    keys = [kuhn.infoset_key(c, h) for h, seat in kuhn.HISTORIES.items() if seat == history_seat for c in kuhn.CARDS]
    for key, pick in zip(keys, choice, strict=True):
        moves = list(out[key])
        aggressive = "bet" if "bet" in moves else "call"
        passive = next(m for m in moves if m != aggressive)
        out[key] = {aggressive: float(pick), passive: 1.0 - pick}
    return out


@pytest.mark.parametrize("name", ["always aggressive", "card rule", "mixed"])
def test_the_best_responses_are_the_best_pure_strategies(name):
    strategy = {"always aggressive": {k: {"bet": 1.0, "call": 1.0} for k in kuhn.INFOSETS},
                "card rule": {k: ({"bet": 1.0, "call": 1.0} if k.startswith("K") else
                                  {"check": 1.0, "call": 1.0} if k.startswith("Q") else {"check": 1.0, "fold": 1.0})
                              for k in kuhn.INFOSETS},
                "mixed": {k: {m: p for m, p in zip(("check", "bet", "fold", "call"), (0.3, 0.7, 0.6, 0.4), strict=True)}
                          for k in kuhn.INFOSETS}}[name]
    br = kuhn.best_response_values(strategy)
    pures = list(itertools.product((0, 1), repeat=6))
    assert br["vs_first"] == pytest.approx(max(-kuhn.value(strategy, _pure("second", c)) for c in pures), abs=1e-12)
    assert br["vs_second"] == pytest.approx(max(kuhn.value(_pure("first", c), strategy) for c in pures), abs=1e-12)
    assert kuhn.exploitability(strategy) > 0
    if name == "always aggressive":
        assert kuhn.exploitability(strategy) == pytest.approx(1 / 3)


def test_a_strategy_missing_an_information_set_is_refused_by_name():
    strategy = kuhn.equilibrium()
    del strategy["Q, after check bet"]
    with pytest.raises(ValueError, match="Q, after check bet"):
        kuhn.exploitability(strategy)
    with pytest.raises(ValueError, match="alpha"):
        kuhn.equilibrium(0.5)


def test_card_dependence_tells_a_card_reader_from_one_that_matches_only_the_frequencies():
    """The probe of 2026-12-04: a start fitted on the equilibrium's moves had the same probabilities
    for every card (the equilibrium's averages per history); this is the number that shows it."""
    assert kuhn.card_dependence(kuhn.PLAYED_EQUILIBRIUM) == pytest.approx(0.875)
    averaged = {}
    for key in kuhn.INFOSETS:
        history = key.split(", ", 1)[1]
        same = [kuhn.PLAYED_EQUILIBRIUM[f"{c}, {history}"] for c in kuhn.CARDS]
        averaged[key] = {m: sum(s[m] for s in same) / 3 for m in same[0]}
    assert kuhn.card_dependence(averaged) == pytest.approx(0.0)
    king_only = {k: {m: float(k.startswith("K") == (m in ("bet", "call"))) for m in v} for k, v in averaged.items()}
    assert kuhn.card_dependence(king_only) == pytest.approx(1.0)


def _request(text: str, episode: str) -> GenerateRequest:
    return GenerateRequest(messages=[Message(role="system", content="Kuhn Poker"), Message(role="user", content=text)],
                           context={"episode_id": episode})


FIRST = "[GAME] ### Starting round 1 out of 1 rounds. Your card is: '{card}'\n[GAME] Your available actions are: '[check]', '[bet]'"
AFTER_BET = ("[GAME] ### Starting round 1 out of 1 rounds. Your card is: '{card}'\n[Player 1] [bet]\n"
             "[GAME] Player 1, submitted move: '[bet]'.\n[GAME] Your available actions are: '[fold]', '[call]'")


def test_the_equilibrium_player_mixes_per_game_and_repeats_a_game_exactly():
    assert kuhn.PLAYED_ALPHA == 1 / 6
    jack = Counter(kuhn_equilibrium(_request(FIRST.format(card="J"), f"ep{i}")) for i in range(1500))
    assert set(jack) == {"[bet]", "[check]"} and jack["[bet]"] / 1500 == pytest.approx(1 / 6, abs=0.04)
    king = Counter(kuhn_equilibrium(_request(FIRST.format(card="K"), f"ep{i}")) for i in range(1500))
    assert king["[bet]"] / 1500 == pytest.approx(1 / 2, abs=0.04)
    queen = Counter(kuhn_equilibrium(_request(AFTER_BET.format(card="Q"), f"ep{i}")) for i in range(1500))
    assert queen["[call]"] / 1500 == pytest.approx(1 / 3, abs=0.04)
    assert {kuhn_equilibrium(_request(FIRST.format(card="Q"), f"ep{i}")) for i in range(50)} == {"[check]"}
    assert {kuhn_equilibrium(_request(AFTER_BET.format(card="J"), f"ep{i}")) for i in range(50)} == {"[fold]"}
    same = _request(FIRST.format(card="J"), "ep7")
    assert len({kuhn_equilibrium(same) for _ in range(5)}) == 1


def test_the_per_game_random_player_differs_between_games_of_one_position():
    moves = {random_per_game(_request(FIRST.format(card="Q"), f"ep{i}")) for i in range(40)}
    assert moves == {"[check]", "[bet]"}


def test_the_equilibrium_player_plays_whole_hands_and_reaches_every_information_set():
    pytest.importorskip("textarena")
    from sparring.engine.play import Arena

    cfg = {"game": "textarena", "view": "rendered",
           "game_args": {"env_id": "KuhnPokerBets-v0", "env_kwargs": {"max_rounds": 1}, "reward": "chips"},
           "dataset": {"name": "seeds", "split": "train", "args": {"n": 60}},
           "agents": {"a": {"role": "player", "model": "textarena-kuhn-equilibrium"},
                      "b": {"role": "player", "model": "textarena-kuhn-equilibrium"}},
           "tournament": {"type": "custom", "matchups": [["a", "b"]], "flip": False}, "run": {"seed": 0}}
    with Arena.from_config(cfg) as arena:
        records = arena.play(arena.jobs())
    assert all(r.status == "complete" for r in records)
    seen = {kuhn.read_infoset(c.messages[-1].content)[0] for r in records for c in r.calls}
    assert seen == set(kuhn.INFOSETS)


def test_the_card_rule_is_the_scripted_rule_and_its_best_response_wins_a_sixth():
    """`CARD_RULE` plays what `textarena-kuhn-rule` plays at every information set; `payoff` is exact
    (0 against itself, an equilibrium never loses), and the best of the 4,096 pure strategies wins
    1/6 a hand against the rule — `greedy` of a strategy reads off what greedy decoding plays."""
    from sparring.games.textarena.scripted import kuhn_rule

    legal = {"": "'[check]', '[bet]'", "check": "'[check]', '[bet]'", "bet": "'[fold]', '[call]'",
             "check bet": "'[fold]', '[call]'"}
    for history in kuhn.HISTORIES:
        for card in kuhn.CARDS:
            moves = "".join(f"\n[Player {i % 2}] [{m}]" for i, m in enumerate(history.split()))
            text = (f"[GAME] ### Starting round 1 out of 1 rounds. Your card is: '{card}'{moves}\n"
                    f"[GAME] Your available actions are: {legal[history]}")
            request = GenerateRequest(messages=[Message(role="user", content=text)])
            key = kuhn.read_infoset(text)[0]
            played = kuhn_rule(request).strip("[]")
            assert kuhn.CARD_RULE[key][played] == 1.0, (key, played)
    assert kuhn.payoff(kuhn.CARD_RULE, kuhn.CARD_RULE) == 0.0
    assert kuhn.payoff(kuhn.equilibrium(1 / 6), kuhn.CARD_RULE) >= -1e-12
    pures = [{k: {m: float(bits >> i & 1 if m in ("bet", "call") else 1 - (bits >> i & 1)) for m in moves}
              for i, (k, moves) in enumerate(kuhn.CARD_RULE.items())} for bits in range(4096)]
    assert max(kuhn.payoff(p, kuhn.CARD_RULE) for p in pures) == pytest.approx(1 / 6)
    mixed = {k: {m: 0.6 if m in ("bet", "call") else 0.4 for m in moves} for k, moves in kuhn.CARD_RULE.items()}
    assert kuhn.greedy(mixed) == {k: {m: 1.0 if m in ("bet", "call") else 0.0 for m in moves}
                                  for k, moves in kuhn.CARD_RULE.items()}
