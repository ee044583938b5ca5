"""A small clembench results tree written by the tests (in clembench's own layout and both
`players` forms): taboo and wordle from two model pairs, wordle_withcritic, one game sparring does
not implement (referencegame), and broken episodes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TABOO_1 = ("You are playing a collaborative word guessing game in which you have to describe a target word for "
           "another player to guess.\n\nThis is the target word: winter\nRelated words are: cold, snow, season")
TABOO_2 = ("You are playing a collaborative word guessing game in which you have to guess a target word that "
           "another player describes to you.\n\nCLUE: Time of year with the shortest days.")


def act(frm: str, to: str, kind: str, content: Any, ts: str = "2025-01-30T20:59:04") -> dict[str, Any]:
    return {"from": frm, "to": to, "timestamp": ts, "action": {"type": kind, "content": content}}


def taboo_turns(won: bool) -> list[list[dict[str, Any]]]:
    first = [act("GM", "Player 1", "send message", TABOO_1),
             act("Player 1", "GM", "get message", "CLUE: Time of year with the shortest days."),
             act("GM", "GM", "valid response", "continue"),
             act("GM", "Player 2", "send message", TABOO_2),
             act("Player 2", "GM", "get message", "GUESS: autumn"),
             act("GM", "GM", "valid guess", "autumn")]
    second = [act("GM", "Player 1", "send message", "GUESS: autumn"),
              act("Player 1", "GM", "get message", "CLUE: It comes after autumn."),
              act("GM", "Player 2", "send message", "CLUE: It comes after autumn."),
              act("Player 2", "GM", "get message", "GUESS: winter" if won else "GUESS: spring"),
              act("GM", "GM", "correct guess" if won else "invalid format", "end game" if won else "abort game")]
    return [first, second]


def scores(main: float | None, success: int, aborted: int) -> dict[str, Any]:
    return {"turn scores": {"0": {"Request Count": 2, "Parsed Request Count": 2, "Violated Request Count": 0},
                            "1": {"Request Count": 2, "Parsed Request Count": 2 - aborted,
                                  "Violated Request Count": aborted}},
            "episode scores": {"Main Score": float("nan") if main is None else main, "Success": success,
                               "Lose": int(not success and not aborted), "Aborted": aborted,
                               "Request Count": 4}}


def write(folder: Path, interactions: Any, score: dict[str, Any] | None = None, raw: str | bytes | None = None,
          scores_raw: str | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if raw is not None:
        (folder / "interactions.json").write_bytes(raw if isinstance(raw, bytes) else raw.encode())
    else:
        (folder / "interactions.json").write_text(json.dumps(interactions))
    if scores_raw is not None:
        (folder / "scores.json").write_text(scores_raw)
    elif score is not None:
        (folder / "scores.json").write_text(json.dumps(score))


def build(root: Path, broken: bool = True) -> Path:
    a = root / "modelA-t0.0--modelA-t0.0"
    old_players = {"GM": "Game master for taboo", "Player 1": "WordDescriber, modelA",
                   "Player 2": "WordGuesser, modelA"}
    write(a / "taboo" / "0_high_en" / "episode_0", {"players": old_players, "turns": taboo_turns(True)},
          scores(50.0, 1, 0))
    write(a / "taboo" / "0_high_en" / "episode_1", {"players": old_players, "turns": taboo_turns(False)},
          scores(None, 0, 1))
    b = root / "modelB-t0.0--modelC-t0.0"
    new_players = {"GM": {"game_role": "Game Master", "model_name": "programmatic"},
                   "Player 1": {"game_role": "WordDescriber", "model_name": "modelB"},
                   "Player 2": {"game_role": "WordGuesser", "model_name": "modelC"}}
    write(b / "taboo" / "1_medium_en" / "episode_0",
          {"meta": {"game_name": "taboo", "experiment_name": "medium_en", "game_id": 0, "round_count": 2,
                    "completed": True},
           "players": new_players, "turns": taboo_turns(True), "Request Count": [2, 2]}, scores(50.0, 1, 0))
    wordle = {"GM": "Game master for wordle", "Player 1": "Guesser, modelA"}
    write(a / "wordle" / "0_high_frequency_words_no_clue_no_critic" / "episode_0",
          {"players": wordle, "turns": [[act("GM", "Player 1", "send message", "Guess a 5-letter word."),
                                         act("Player 1", "GM", "get message", "guess: crane\nexplanation: vowels"),
                                         act("GM", "GM", "metadata", {"attempts": 1, "target_word": "crane"}),
                                         act("GM", "GM", "correct guess", "game_result = WIN")]]},
          scores(100.0, 1, 0))
    critic = {"GM": "Game master for wordle_withcritic", "Player 1": "Guesser, modelA", "Player 2": "Critic, modelA"}
    write(a / "wordle_withcritic" / "0_high_frequency_words_clue_with_critic" / "episode_0",
          {"players": critic, "turns": [[act("GM", "Player 1", "send message", "Guess a 5-letter word."),
                                         act("Player 1", "GM", "get message", "guess: slate"),
                                         act("GM", "Player 2", "send message", "The guesser proposes slate."),
                                         act("Player 2", "GM", "get message", "agreement: yes"),
                                         act("GM", "GM", "incorrect guess", "game_result = LOSS")]]},
          scores(0.0, 0, 0))
    ref = {"GM": "Game master for referencegame", "Player 1": "Instruction Giver, modelA",
           "Player 2": "Instruction Follower, modelA"}
    write(a / "referencegame" / "0_line_grids_rows" / "episode_0",
          {"players": ref, "turns": [[act("GM", "Player 1", "send message", "Describe the first grid."),
                                      act("Player 1", "GM", "get message", "Expression: the grid with a line"),
                                      act("GM", "Player 2", "send message", "Which grid is it? Expression: the grid"),
                                      act("Player 2", "GM", "get message", "Answer: first"),
                                      act("GM", "GM", "parse", {"correct": True})]]},
          scores(100.0, 1, 0))
    if broken:
        write(a / "taboo" / "0_high_en" / "episode_2", None, raw='{"players": {"GM": "x", "Player 1": "Word')
        write(a / "taboo" / "0_high_en" / "episode_3", {"players": old_players, "turns": taboo_turns(True)},
              scores_raw="[1, 2")
        write(a / "taboo" / "0_high_en" / "episode_4", {"players": old_players, "rounds": []})
        write(a / "taboo" / "0_high_en" / "episode_5", None, raw=b"\xff\xfe not json")
    return root
