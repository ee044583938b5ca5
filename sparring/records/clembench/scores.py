"""clembench's scores of an episode sparring played: `scores.json` as clembench's own scorers
(the `TabooScorer`, `WordleScorer` and `WordleWithCriticScorer` of clembench's games, run by
clemcore 3.x) compute it from the `interactions.json` that `clembench_played` writes.

The rules, as clembench's scorers give them:
- every game: Aborted, Lose, Success are 0/1 and exclusive (an aborted game is neither lost nor
  won); Main Score is NaN for an aborted game, 0 for a lost one;
- taboo: one request a round (its scorer's count), a round violated from the first malformed reply
  on; Main Score 100 / rounds for a win; a clue that uses the target or a related word loses (Lose
  1, Main Score 0; it is no format violation, so not Aborted); turn scores Accuracy and the request
  counts per round (from 0); Repetition-Guesser / Repetition-Describer count a guess / clue equal to
  the previous round's (what clembench's scorer says they count; its code looks for "guess" / "clue"
  actions that its taboo game master no longer logs, so clembench itself always writes 0);
- wordle family: Request Count every reply of a player, Violated the rejected ones, Request
  Success Ratio Parsed / Request; Main Score for a win in n rounds: wordle 100, 100, 100, 50, 30,
  20 for n = 1..6 (beyond clembench's six guesses: round(100 / n, 2)), wordle_withcritic
  round(100 / n, 2); Guess Repetitions (NaN if aborted); turn scores (from 1) Closeness Score (5 a
  green letter, 3 a yellow one) and Strategy Score (+20 a green, +10 a yellow, -20 a red letter of
  the previous feedback reused; 0 for the first guess, 100 for a win at the first guess, 0 for an
  aborted game that scored one guess), and with a critic Change-Of-Opinion and the four
  (Non-)Repetition-Guesser-On-Critic-(Dis)Agreement ratios.

An episode that ended neither won, lost nor aborted (unfinished) has no clembench score: None.
"""

from __future__ import annotations

import math
from typing import Any

from sparring.records.record import EpisodeRecord

NAN = math.nan
SPEED_SCORES = {1: 100, 2: 100, 3: 100, 4: 50, 5: 30, 6: 20}  # clembench's wordle Main Score for a win at n


def played_scores(record: EpisodeRecord, interactions: dict[str, Any]) -> dict[str, Any] | None:
    """`scores.json` of a played episode (None: it did not end, so clembench gives it no score)."""
    metrics = record.outcome.metrics if record.outcome else {}
    if record.game == "taboo":
        episode, turn = _taboo(metrics, interactions)
    elif record.game in ("wordle", "wordle_withcritic"):
        episode, turn = _wordle(record.game, metrics, interactions)
    else:
        return None
    if episode is None:
        return None
    return {"meta": interactions.get("meta", {}), "players": interactions.get("players", {}),
            "turn scores": {str(k): v for k, v in turn.items()}, "episode scores": episode}


def _taboo(metrics: dict[str, Any], interactions: dict[str, Any]
           ) -> tuple[dict[str, Any] | None, dict[int, Any]]:
    end = metrics.get("end")
    if end not in ("success", "failure", "aborted"):
        return None, {}
    rounds = interactions["turns"]
    malformed = end == "aborted" and metrics.get("abort_kind") != "taboo_word"  # a taboo word loses instead
    invalid_from = len(rounds) - 1 if malformed else len(rounds)
    won = end == "success"
    turn: dict[int, Any] = {}
    for i in range(len(rounds)):
        violated = int(i >= invalid_from)
        turn[i] = {"Accuracy": int(won and i == len(rounds) - 1), "Violated Request Count": violated,
                   "Parsed Request Count": 1 - violated, "Request Count": 1}
    violated_total = sum(t["Violated Request Count"] for t in turn.values())
    parsed = sum(t["Parsed Request Count"] for t in turn.values())
    episode: dict[str, Any] = {"Violated Request Count": violated_total, "Parsed Request Count": parsed,
                               "Request Count": len(rounds), "Request Success Ratio": parsed / len(rounds)}
    if invalid_from < len(rounds):  # a malformed reply: clembench's "invalid format" abort
        episode.update({"Aborted": 1, "Success": 0, "Lose": 0, "Main Score": NAN})
    else:
        episode.update({"Aborted": 0, "Success": int(won), "Lose": int(not won),
                        "Main Score": 100 / len(rounds) if won else 0})
    episode["Repetition-Guesser"] = _repeats(metrics.get("guesses") or [])
    episode["Repetition-Describer"] = _repeats(metrics.get("clues") or [])
    return episode, turn


def _repeats(items: list[Any]) -> int:
    """How often an item equals the one before it."""
    return sum(1 for a, b in zip(items, items[1:], strict=False) if a == b)


def _wordle(game: str, metrics: dict[str, Any], interactions: dict[str, Any]
            ) -> tuple[dict[str, Any] | None, dict[int, Any]]:
    end = metrics.get("end")
    if end not in ("win", "loss", "aborted"):
        return None, {}
    aborted = end == "aborted"
    requests, parsed = interactions["Request Count"], interactions["Parsed Request Count"]
    episode: dict[str, Any] = {
        "Aborted": int(aborted), "Lose": int(end == "loss"), "Success": int(end == "win"),
        "Request Count": requests, "Parsed Request Count": parsed,
        "Violated Request Count": interactions["Violated Request Count"],
        "Request Success Ratio": parsed / requests if requests else NAN,
    }
    n = len(interactions["turns"])
    committed = interactions.get("Guesser Guesses Committed", interactions["Guesser Guesses"])
    if aborted:
        episode.update({"Main Score": NAN, "Guess Repetitions": NAN})
    else:
        speed = SPEED_SCORES.get(n, round(100 / n, 2)) if game == "wordle" else round(100 / n, 2)
        episode.update({"Main Score": speed if end == "win" else 0,
                        "Guess Repetitions": len(committed) - len(set(committed))})
    turn = _wordle_turns(interactions["Guesser Feedbacks"], aborted)
    if game == "wordle_withcritic":
        _critic(episode, turn, interactions["Guesser Guesses"], committed, interactions["Critic Judgements"])
    return episode, turn


def _letters(feedback: str) -> list[tuple[str, str]]:
    """("h", "red"), ("o", "yellow"), ... of clembench's "h<red> o<yellow> ..." feedback."""
    out = []
    for token in feedback.split(" "):
        letter, _, colour = token.partition("<")
        out.append((letter, colour.rstrip(">")))
    return out


def _wordle_turns(feedbacks: list[str], aborted: bool) -> dict[int, Any]:
    if not feedbacks:
        return {0: {"Closeness Score": NAN, "Strategy Score": NAN}}
    turn: dict[int, Any] = {}
    for i, fb in enumerate(feedbacks):
        colours = [c for _, c in _letters(fb)]
        turn[i + 1] = {"Closeness Score": 5 * colours.count("green") + 3 * colours.count("yellow")}
    if len(feedbacks) == 1:
        strategy = [0 if aborted else 100]
    else:
        strategy = [0]
        for before, after in zip(feedbacks, feedbacks[1:], strict=False):
            used = {letter for letter, _ in _letters(after)}
            by_colour: dict[str, set[str]] = {}
            for letter, colour in _letters(before):
                by_colour.setdefault(colour, set()).add(letter)
            kept = {c: len(by_colour.get(c, set()) & used) for c in ("green", "yellow", "red")}
            strategy.append(20 * kept["green"] + 10 * kept["yellow"] - 20 * kept["red"])
    for i, score in enumerate(strategy):
        turn.setdefault(i + 1, {})["Strategy Score"] = score
    return turn


def _critic(episode: dict[str, Any], turn: dict[int, Any], proposals: list[str], committed: list[str],
            judgements: list[str]) -> None:
    """The critic's part of clembench's WordleWithCriticScorer: did the guesser change its proposal?"""
    same = {"yes": 0, "no": 0}
    changed = {"yes": 0, "no": 0}
    rows = list(zip(proposals, committed, judgements, strict=False))
    for i, (proposal, final, judgement) in enumerate(rows):
        key = "yes" if judgement == "yes" else "no"
        (changed if proposal != final else same)[key] += 1
        turn.setdefault(i + 1, {})["Change-Of-Opinion"] = int(proposal != final)
    ratios: dict[str, Any] = {}
    for key, name in (("yes", "Agreement"), ("no", "Disagreement")):
        total = same[key] + changed[key]
        if not rows:
            ratios[name] = (NAN, NAN)
        elif total:
            ratios[name] = (round(same[key] / total, 2), round(changed[key] / total, 2))
        else:
            ratios[name] = (0, 0)
    episode["Repetition-Guesser-On-Critic-Agreement"] = ratios["Agreement"][0]
    episode["Non-Repetition-Guesser-On-Critic-Agreement"] = ratios["Agreement"][1]
    episode["Repetition-Guesser-On-Critic-Disagreement"] = ratios["Disagreement"][0]
    episode["Non-Repetition-Guesser-On-Critic-Disagreement"] = ratios["Disagreement"][1]
