"""The scripted TicTacToe players (issue #60): `tictactoe_perfect` never loses, from either seat,
against every sequence of opponent moves, and draws itself; `tictactoe_blocker` takes a win when
it can and blocks one when it must. Played on TextArena's own environment and observations."""

from __future__ import annotations

import pytest

from sparring.games.textarena.scripted import tictactoe_blocker, tictactoe_perfect
from sparring.types import GenerateRequest, Message

ta = pytest.importorskip("textarena")


def _request(observation: str) -> GenerateRequest:
    return GenerateRequest(messages=[Message(role="system", content="play"), Message(role="user", content=observation)])


def _replay(moves: list[int]):
    """TextArena's TicTacToe after `moves`: (done, the player to move, its observation, rewards)."""
    env = ta.make("TicTacToe-v0")
    env.reset(num_players=2, seed=0)
    done = False
    for m in moves:
        env.get_observation()
        done, _ = env.step(action=f"[{m}]")
        if done:
            return True, None, None, env.close()[0]
    pid, obs = env.get_observation()
    return False, pid, obs, None


def _free(moves: list[int]) -> list[int]:
    return [i for i in range(9) if i not in moves]


@pytest.mark.parametrize("seat", [0, 1])
def test_the_perfect_player_never_loses_against_any_line(seat):
    games = 0
    stack: list[list[int]] = [[]]
    while stack:
        moves = stack.pop()
        done, pid, obs, rewards = _replay(moves)
        if done:
            games += 1
            assert rewards[seat] >= 0, f"lost after {moves}"
            continue
        if pid == seat:
            move = tictactoe_perfect(_request(obs))
            assert move.startswith("[") and int(move[1:-1]) in _free(moves)
            stack.append(moves + [int(move[1:-1])])
        else:
            stack.extend(moves + [m] for m in _free(moves))
    assert games > 100  # every opponent line was played out


def test_the_perfect_player_draws_itself_and_the_blocker_wins_or_blocks():
    moves: list[int] = []
    while True:
        done, _, obs, rewards = _replay(moves)
        if done:
            break
        moves.append(int(tictactoe_perfect(_request(obs))[1:-1]))
    assert rewards[0] == rewards[1] == 0 and len(moves) == 9
    # O (player 0) has 0 and 1: it completes 2 rather than block X's 3-4 threat
    _, pid, obs, _ = _replay([0, 3, 1, 4])
    assert pid == 0 and tictactoe_blocker(_request(obs)) == "[2]"
    # X (player 1) cannot win yet and must block O's 0-1 line at 2
    _, pid, obs, _ = _replay([0, 4, 1])
    assert pid == 1 and tictactoe_blocker(_request(obs)) == "[2]"
