"""Kuhn Poker's theory (foundations: pure arithmetic over strategies, below the games so both the
scripted players and the learning suite use it), for its scripted players and for scoring a learnt strategy.

Kuhn Poker as Kuhn (1950) defines it (sparring's `KuhnPokerBets-v0`: ante 1, one bet of 1, three
cards J < Q < K, one hand): the first to act has 6 decisions (a card x {first to act, after check
bet}), the second 6 (a card x {after check, after bet}). A behaviour strategy gives each of these 12
information sets a probability for each legal move.

- `read_infoset` reads a decision's information set from TextArena's observation;
- `equilibrium(alpha)` is Kuhn's family of equilibria: the first to act bets the Jack with
  probability alpha <= 1/3, always checks the Queen and calls a bet with it with alpha + 1/3, bets the
  King with 3 alpha; the second always bets and calls with the King, calls with the Queen a third of
  the time, bluffs the Jack after a check a third of the time. The game's value is -1/18 for the first
  to act;
- `exploitability(strategy)`: what a best response wins per hand against the strategy, averaged over
  the strategy's two seats (0 exactly at an equilibrium; 1/3 for "always bet and call");
- `payoff(strategy, other)`: the exact chips a hand against another strategy, both seats (e.g.
  `CARD_RULE`, the held-out scripted rule), and `greedy(strategy)`, what greedy decoding plays.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Mapping

CARDS = ("J", "Q", "K")
GAME_VALUE_FIRST = -1.0 / 18.0
# the moves of one hand before a decision, and who decides there
HISTORIES = {"": "first", "check bet": "first", "check": "second", "bet": "second"}
_CARD = re.compile(r"Your card is: '([JQK])'")
_BEFORE = re.compile(r"^\[Player \d\] \[(check|bet)\]", re.IGNORECASE | re.MULTILINE)
_LEGAL = re.compile(r"Your available actions are: (.*)$", re.MULTILINE)


def infoset_key(card: str, history: str) -> str:
    """`"Q, after bet"`, `"K, first to act"`: the name the learning suite's tables use."""
    return f"{card}, {'after ' + history if history else 'first to act'}"


INFOSETS = tuple(infoset_key(c, h) for h in HISTORIES for c in CARDS)
# the aggressive move at each history (its probability is the strategy's number there)
_AGGRESSIVE = {"": "bet", "check": "bet", "bet": "call", "check bet": "call"}
_PASSIVE = {"": "check", "check": "check", "bet": "fold", "check bet": "fold"}


def read_infoset(text: str) -> tuple[str, list[str]] | None:
    """A decision's information set and its legal moves from the observation (the player's card and
    the moves of this hand before it); None when the text shows no decision."""
    hand = text[text.rfind("### Starting round"):]
    cards, legal = _CARD.findall(hand), _LEGAL.findall(hand)
    if not cards or not legal:
        return None
    before = " ".join(m.lower() for m in _BEFORE.findall(hand))
    return infoset_key(cards[-1], before), [m.lower() for m in re.findall(r"\[(\w+)\]", legal[-1])]


@functools.cache
def _equilibrium(alpha: float) -> dict[str, dict[str, float]]:
    aggressive = {"": {"J": alpha, "Q": 0.0, "K": 3 * alpha},
                  "check bet": {"J": 0.0, "Q": alpha + 1 / 3, "K": 1.0},
                  "check": {"J": 1 / 3, "Q": 0.0, "K": 1.0},
                  "bet": {"J": 0.0, "Q": 1 / 3, "K": 1.0}}
    return {infoset_key(c, h): {_AGGRESSIVE[h]: p[c], _PASSIVE[h]: 1.0 - p[c]}
            for h, p in aggressive.items() for c in CARDS}


def equilibrium(alpha: float = 1 / 3) -> dict[str, dict[str, float]]:
    """Kuhn's equilibrium strategy for both seats (alpha in [0, 1/3]): infoset -> move -> probability."""
    if not 0.0 <= alpha <= 1 / 3 + 1e-12:
        raise ValueError(f"Kuhn's equilibria have alpha in [0, 1/3], not {alpha}")
    return {k: dict(v) for k, v in _equilibrium(alpha).items()}


# the scripted `kuhn_equilibrium` player's: the middle of the family, where every information set is
# reached (at alpha = 1/3 the first to act never checks a King)
PLAYED_ALPHA = 1 / 6
PLAYED_EQUILIBRIUM = equilibrium(PLAYED_ALPHA)


def _aggressive(strategy: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """history -> card -> probability of the aggressive move, normalised over the two legal moves."""
    missing = [k for k in INFOSETS if k not in strategy]
    if missing:
        raise ValueError(f"the strategy lacks information sets: {', '.join(missing)}")
    out: dict[str, dict[str, float]] = {}
    for h in HISTORIES:
        for c in CARDS:
            moves = strategy[infoset_key(c, h)]
            a, p = float(moves.get(_AGGRESSIVE[h], 0.0)), float(moves.get(_PASSIVE[h], 0.0))
            out.setdefault(h, {})[c] = a / (a + p) if a + p > 0 else 0.5
    return out


def _showdown(x: str, y: str) -> int:
    return 1 if CARDS.index(x) > CARDS.index(y) else -1


def value(first: Mapping[str, Mapping[str, float]], second: Mapping[str, Mapping[str, float]]) -> float:
    """The first to act's expected chips a hand when it plays `first` and the other plays `second`."""
    f, s = _aggressive(first), _aggressive(second)
    total = 0.0
    for x, y in itertools.permutations(CARDS, 2):
        sd = _showdown(x, y)
        bet = s["bet"][y] * 2 * sd + (1 - s["bet"][y])
        check = (1 - s["check"][y]) * sd + s["check"][y] * (f["check bet"][x] * 2 * sd - (1 - f["check bet"][x]))
        total += f[""][x] * bet + (1 - f[""][x]) * check
    return total / 6


def payoff(strategy: Mapping[str, Mapping[str, float]], other: Mapping[str, Mapping[str, float]]) -> float:
    """`strategy`'s expected chips a hand against `other`, averaged over the two seats (what the
    learning suite's held-out payoff per hand estimates from dealt hands)."""
    return (value(strategy, other) - value(other, strategy)) / 2


def greedy(strategy: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """The pure strategy that plays each information set's likeliest move (what greedy decoding of
    a scored strategy plays; a tie goes to the first move listed)."""
    out = {}
    for k, moves in strategy.items():
        best = max(moves, key=moves.__getitem__)
        out[k] = {m: 1.0 if m == best else 0.0 for m in moves}
    return out


# the scripted `textarena-kuhn-rule` player (the held-out opponent), per card its moves in order of
# preference, the first legal one played: bet and call with the King, check and call with the Queen,
# check and fold with the Jack
RULE_PREFERENCE = {"K": ("bet", "call"), "Q": ("check", "call"), "J": ("check", "fold")}


def _rule_strategy() -> dict[str, dict[str, float]]:
    out = {}
    for h in HISTORIES:
        legal = (_AGGRESSIVE[h], _PASSIVE[h])
        for c in CARDS:
            played = next(m for m in RULE_PREFERENCE[c] if m in legal)
            out[infoset_key(c, h)] = {m: float(m == played) for m in legal}
    return out


CARD_RULE = _rule_strategy()  # the same rule as a strategy (what `payoff` and `exploitability` read)


def best_response_values(strategy: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """What a best response wins a hand against `strategy`: `vs_first` when the strategy acts first
    (the best response's chips as second), `vs_second` when it acts second (as first)."""
    p = _aggressive(strategy)
    vs_first = 0.0
    for y in CARDS:
        others = [x for x in CARDS if x != y]
        call = sum(p[""][x] * -2 * _showdown(x, y) for x in others)
        fold = sum(p[""][x] * -1 for x in others)
        bet = sum((1 - p[""][x]) * (p["check bet"][x] * -2 * _showdown(x, y) + (1 - p["check bet"][x])) for x in others)
        check = sum((1 - p[""][x]) * -_showdown(x, y) for x in others)
        vs_first += max(call, fold) + max(bet, check)
    vs_second = 0.0
    for x in CARDS:
        others = [y for y in CARDS if y != x]
        bet = sum(p["bet"][y] * 2 * _showdown(x, y) + (1 - p["bet"][y]) for y in others)
        call = sum(p["check"][y] * 2 * _showdown(x, y) for y in others)
        fold = sum(p["check"][y] * -1 for y in others)
        check = sum((1 - p["check"][y]) * _showdown(x, y) for y in others) + max(call, fold)
        vs_second += max(bet, check)
    return {"vs_first": vs_first / 6, "vs_second": vs_second / 6}


def exploitability(strategy: Mapping[str, Mapping[str, float]]) -> float:
    """A best response's winnings a hand against `strategy`, averaged over the strategy's seats:
    0 at an equilibrium (the best responses then win the game's value, +1/18 and -1/18)."""
    br = best_response_values(strategy)
    return (br["vs_first"] + br["vs_second"]) / 2


def card_dependence(strategy: Mapping[str, Mapping[str, float]]) -> float:
    """How much the card decides the move: at each of the 4 histories, the spread (largest less
    smallest over J, Q, K) of the aggressive move's probability, averaged. 0 for a strategy that
    ignores its card; 0.875 for the played equilibrium (alpha 1/6), 1 for a pure card rule that bets
    and calls with the King alone. A start fitted on an equilibrium's moves can match its average
    frequencies without reading the card: this tells them apart."""
    p = _aggressive(strategy)
    return sum(max(p[h].values()) - min(p[h].values()) for h in HISTORIES) / len(HISTORIES)
