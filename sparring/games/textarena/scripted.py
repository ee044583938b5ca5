"""Scripted TextArena players: baselines for the shipped games and fast tests
(`backend: scripted, mode: callable`). Each reads only the observation it is shown.

- `random_legal`: a uniformly random move among those the observation lists as available
  ("Available Moves: '[0]', '[4]'", "Your available actions are: '[check]', '[bet]'"), seeded by
  the observation, so the same position always gets the same move.
- `random_per_game`: the same, seeded by the observation and the game (its episode id), so the
  games of one GRPO group (the same seed, the same cards) meet different moves while a run reproduces.
- `kuhn_equilibrium` (Kuhn Poker): Kuhn's equilibrium at alpha = 1/6 (`kuhn.PLAYED_EQUILIBRIUM`:
  every information set is reached), its mixed moves drawn per game as `random_per_game` draws;
  nothing beats it in expectation (a demonstrator whose moves depend on the card).
- `kuhn_rule` (Kuhn Poker): a fixed card rule — with the King it bets (or calls), with the Queen it
  checks (or calls), with the Jack it checks (or folds to a bet); a held-out opponent the learning
  suite never trains against.
- `tictactoe_perfect` (TicTacToe): minimax over the whole game — it never loses, and takes a win
  or a draw when one exists; among equally good moves it picks one seeded by the observation.
- `tictactoe_blocker` (TicTacToe): one move of look-ahead — it takes a win when it can, blocks the
  opponent's when it must, and otherwise moves at random (the player `textarena-random` never is).
- `negotiator` (SimpleNegotiation): accepts an incoming offer that does not lose it value by its own
  values, otherwise denies it and offers one unit of its least valuable resource for one unit of its
  most valuable one.
"""

from __future__ import annotations

import functools
import hashlib
import random
import re

from sparring.stats import kuhn
from sparring.types import GenerateRequest

_AVAILABLE = re.compile(r"available (?:moves|actions)[^:\n]*:\s*((?:'\[[^\]]+\]'(?:,\s*)?)+)", re.IGNORECASE)
_MOVE = re.compile(r"'(\[[^\]]+\])'")
_RESOURCE = re.compile(r"\[(\w+)\]\s+Qty:\s*(\d+)\s+Value:\s*(\d+)")
_ME = re.compile(r"You are Player (\d+)")
_OFFER = re.compile(r"Player (\d+) made the following offer to Player (\d+): Offered items: (.+?) -> "
                    r"Requested items: (.+)")


def _observation(request: GenerateRequest) -> str:
    """TextArena's whole observation so far: the one user message of the rendered view, or the user
    turns of the conversation view joined as TextArena wrote them (each new part began with the
    newline the conversation drops), so a baseline plays the same moves in either view."""
    return "\n".join(m.content for m in request.messages if m.role == "user")


def _rng(text: str) -> random.Random:
    return random.Random(int(hashlib.sha256(text.encode()).hexdigest()[:16], 16))


def random_legal(request: GenerateRequest) -> str:
    obs = _observation(request)
    lists = _AVAILABLE.findall(obs)
    moves = _MOVE.findall(lists[-1]) if lists else []
    return _rng(obs).choice(moves) if moves else "[0]"


def _game_rng(request: GenerateRequest, obs: str) -> random.Random:
    return _rng(f"{obs}\x00{request.context.get('episode_id', '')}")


def random_per_game(request: GenerateRequest) -> str:
    obs = _observation(request)
    lists = _AVAILABLE.findall(obs)
    moves = _MOVE.findall(lists[-1]) if lists else []
    return _game_rng(request, obs).choice(moves) if moves else "[0]"


def kuhn_equilibrium(request: GenerateRequest) -> str:
    obs = _observation(request)
    found = kuhn.read_infoset(obs)
    if found is None or found[0] not in kuhn.PLAYED_EQUILIBRIUM:
        return random_per_game(request)
    name, legal = found
    probs = kuhn.PLAYED_EQUILIBRIUM[name]
    draw, total = _game_rng(request, obs).random(), 0.0
    for move in legal:
        total += probs.get(move, 0.0)
        if draw < total:
            return f"[{move}]"
    return f"[{legal[-1]}]"


_CARD = re.compile(r"Your card is: '([JQK])'")


def kuhn_rule(request: GenerateRequest) -> str:
    obs = _observation(request)
    cards = _CARD.findall(obs)
    lists = _AVAILABLE.findall(obs)
    moves = [m.strip("[]").lower() for m in _MOVE.findall(lists[-1])] if lists else []
    card = cards[-1] if cards else "J"
    prefer = kuhn.RULE_PREFERENCE[card]  # one rule: `kuhn.CARD_RULE` is the same as a strategy
    return f"[{next((m for m in prefer if m in moves), moves[0] if moves else 'check')}]"


def _items(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in text.split(","):
        m = re.match(r"\s*(\d+)\s+(\w+)", part)
        if m:
            out[m.group(2)] = out.get(m.group(2), 0) + int(m.group(1))
    return out


def negotiator(request: GenerateRequest) -> str:
    obs = _observation(request)
    values = {name: int(value) for name, _, value in _RESOURCE.findall(obs)}
    me = _ME.search(obs)
    offers = _OFFER.findall(obs)
    if me and offers and offers[-1][1] == me.group(1) and obs.rstrip().endswith(offers[-1][3].rstrip()):
        _, _, given, asked = offers[-1]
        gain = sum(values.get(k, 0) * n for k, n in _items(given).items())
        loss = sum(values.get(k, 0) * n for k, n in _items(asked).items())
        return "[Accept]" if gain >= loss else "[Deny]"
    if len(values) < 2:
        return "[Deny]"
    cheap, dear = min(values, key=values.__getitem__), max(values, key=values.__getitem__)
    return f"[Offer: 1 {cheap} -> 1 {dear}]"


_BOARD = re.compile(r"Current Board:\s*\n((?:.*\|.*\|.*\n?(?:-+\+-+\+-+\n?)?){3})")
_SYMBOL = re.compile(r"you will be '([OX])'")
_LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))


def _tictactoe(request: GenerateRequest) -> tuple[list[str], str, str, random.Random] | None:
    """(the latest board as 9 cells, own symbol, the opponent's, a position-seeded generator)."""
    obs = _observation(request)
    boards, symbol = _BOARD.findall(obs), _SYMBOL.search(obs)
    if not boards or not symbol:
        return None
    cells = [c.strip() for row in boards[-1].splitlines() if "|" in row for c in row.split("|")]
    if len(cells) != 9:
        return None
    me = symbol.group(1)
    return cells, me, "X" if me == "O" else "O", _rng(obs)


def _winner(cells: list[str]) -> str | None:
    for a, b, c in _LINES:
        if cells[a] == cells[b] == cells[c] and cells[a] in ("O", "X"):
            return cells[a]
    return None


def _free(cells: list[str]) -> list[int]:
    return [i for i, c in enumerate(cells) if c not in ("O", "X")]


def _value(cells: list[str], me: str, other: str, to_move: str) -> int:
    """Minimax value for `me` (+1 win, 0 draw, -1 loss) with `to_move` on the move."""
    return _minimax("".join(c if c in ("O", "X") else "." for c in cells), me, other, to_move)


@functools.cache
def _minimax(board: str, me: str, other: str, to_move: str) -> int:
    """`_value` on a 9-character board ("." free): cached, as the whole game has < 6,000 positions."""
    cells = [c if c != "." else str(i) for i, c in enumerate(board)]
    won = _winner(cells)
    if won is not None:
        return 1 if won == me else -1
    free = _free(cells)
    if not free:
        return 0
    nxt = other if to_move == me else me
    values = [_minimax(board[:i] + to_move + board[i + 1:], me, other, nxt) for i in free]
    return max(values) if to_move == me else min(values)


def tictactoe_perfect(request: GenerateRequest) -> str:
    parsed = _tictactoe(request)
    if parsed is None:
        return random_legal(request)
    cells, me, other, rng = parsed
    scored = []
    for i in _free(cells):
        cells[i] = me
        scored.append((_value(cells, me, other, other), i))
        cells[i] = str(i)
    best = max(v for v, _ in scored)
    return f"[{rng.choice([i for v, i in scored if v == best])}]"


def _completes(cells: list[str], symbol: str) -> list[int]:
    """The free cells that would give `symbol` three in a row."""
    out = []
    for i in _free(cells):
        cells[i] = symbol
        if _winner(cells) == symbol:
            out.append(i)
        cells[i] = str(i)
    return out


def tictactoe_blocker(request: GenerateRequest) -> str:
    parsed = _tictactoe(request)
    if parsed is None:
        return random_legal(request)
    cells, me, other, rng = parsed
    choice = _completes(cells, me) or _completes(cells, other) or _free(cells)
    return f"[{rng.choice(choice)}]"
