"""Hand-built episode records with the real outcome keys of the debate and Deal-or-No-Deal games.

The keys mirror `sparring.games.debate.metrics.episode_metrics` and `DondGame.outcome`; one test
(`test_report.py::test_synthetic_keys_match_real_debate_game`) checks they have not drifted.
"""

from __future__ import annotations

import json
from pathlib import Path

from sparring.gameapi.game import Outcome
from sparring.records.record import EpisodeRecord, SeatRecord, episode_id
from sparring.types import Usage

QS = {"n_quotes": 0, "n_valid": 0, "n_exact": 0, "n_normalized": 0, "n_repaired": 0, "n_invalid": 0,
      "quoted_words": 0, "invalid_words": 0}


def quote_stats(n: int, valid: int, words: int, repaired: int = 0) -> dict:
    return {**QS, "n_quotes": n, "n_valid": valid, "n_exact": valid - repaired, "n_repaired": repaired,
            "n_invalid": n - valid, "quoted_words": words, "valid_frac": valid / n if n else None}


def _seats(seats: dict[str, str]) -> dict[str, SeatRecord]:
    return {p: SeatRecord(agent=a, model=f"m-{a}", role="judge" if p == "Judge" else "debater",
                          prompt_set="debate") for p, a in seats.items()}


def debate_record(instance: str, seats: dict[str, str], p_first: float, correct_player: str | None, *,
                  fmt: str = "debate", flip: bool = False, repeat: int = 0, experiment: str = "exp",
                  quotes: dict | None = None, words: dict | None = None, votes: dict | None = None,
                  status: str = "complete", correct_answer: int = 0) -> EpisodeRecord:
    """`p_first` = the judge's probability on the first option (Debater_A, or Answer_A when the
    format has no two debaters); `correct_player` = who argued the correct answer (consultancy:
    'Consultant' if it did, None otherwise; empty: the correct option 'Answer_A'/'Answer_B')."""
    debaters = [p for p in seats if p != "Judge"]
    if fmt in ("consultancy", "empty"):
        sides = ["Answer_A", "Answer_B"]
    else:
        sides = ["Debater_A", "Debater_B"]
    probs = {sides[0]: p_first, sides[1]: 1.0 - p_first}
    if fmt == "consultancy":
        c_side = "Answer_A"  # the consultant argues answer A in these records
        correct_side = c_side if correct_player == "Consultant" else "Answer_B"
        player_side = {"Consultant": c_side}
        positions = {"Consultant": "correct" if correct_player == "Consultant" else "incorrect"}
    elif fmt == "empty":
        correct_side = correct_player or "Answer_A"
        player_side, positions = {}, {}
    else:
        correct_side = correct_player
        player_side = {d: d for d in debaters}
        positions = {d: "correct" if d == correct_player else "incorrect" for d in debaters}
    pc = probs[correct_side]
    tie = abs(pc - 0.5) < 1e-9
    best = max(probs, key=lambda s: probs[s])
    winning_side = None if tie else best
    winner = None if winning_side is None else next((p for p, s in player_side.items() if s == winning_side), None)
    answers_by_player = {p: (correct_answer if pos == "correct" else 1 - correct_answer)
                         for p, pos in positions.items()}
    words = words if words is not None else {d: [60, 40] for d in debaters}
    metrics = {
        "format": fmt, "order": "sequential", "rounds": 2, "flip": flip, "variant": 0,
        "judge_questions": False, "judge_reasoning": False, "background_truncated": False,
        "answers_by_player": answers_by_player, "positions": positions,
        "correct_player": next((p for p, pos in positions.items() if pos == "correct"), None),
        "correct_side": correct_side, "invalid_actions": {},
        "correct_letter": correct_side[-1],
        "speech_words": words, "speech_words_total": {p: sum(w) for p, w in words.items()},
        "quote_stats": quotes if quotes is not None else {d: quote_stats(2, 1, 8) for d in debaters},
        "judge_reasoning_words": 0, "judge_questions_asked": 0, "player_side": player_side,
    }
    if fmt == "consultancy":
        metrics["consultant_correct"] = correct_player == "Consultant"
    outcome = None
    if status != "failed":
        metrics.update(probs=probs, p_correct=pc, judge_correct=pc > 0.5 and not tie, tie=tie,
                       winning_side=winning_side, winner=winner, judge="Judge")
        if votes is not None:
            metrics["votes"] = votes
        rewards = {p: probs[s] for p, s in player_side.items()}
        rewards["Judge"] = pc
        outcome = Outcome(rewards=rewards, winner=winner, metrics=metrics)
    eid = episode_id(experiment, instance, seats, 0, repeat, flip)
    return EpisodeRecord(id=eid, experiment=experiment, game="debate", instance_id=instance,
                         seats=_seats(seats), seed=0, repeat=repeat, flip=flip,
                         matchup=" vs ".join(a for p, a in sorted(seats.items()) if p != "Judge"),
                         status=status, outcome=outcome, state={"format": fmt},
                         error="BackendError: server said 'no' (503)" if status == "failed" else None,
                         duration_s=1.5, usage={f"m-{a}": Usage(prompt_tokens=100, completion_tokens=20)
                                                for a in set(seats.values())})


FRONTIER = {(0, 10), (2, 9), (4, 8), (6, 6), (8, 4), (9, 2), (10, 0)}  # of the pool below (exact)


def dond_record(instance: str, a: str, b: str, take: tuple[int, int, int] = (1, 1, 1), *, deal: bool = True,
                first: str = "Player_1", end: str | None = None, flip: bool = False,
                experiment: str = "dond-exp") -> EpisodeRecord:
    """A Deal-or-No-Deal episode (objective `self`) on pool (2, 2, 2) with values (1, 2, 2) / (2, 2, 1):
    Player_1 (agent `a`) takes `take`, Player_2 (agent `b`) the rest."""
    counts, va, vb = [2, 2, 2], [1, 2, 2], [2, 2, 1]
    end = end or ("deal" if deal else "mismatch")
    deal = deal and end == "deal"
    rest = [c - t for c, t in zip(counts, take, strict=True)]
    x, y = sum(v * n for v, n in zip(va, take, strict=True)), sum(v * n for v, n in zip(vb, rest, strict=True))
    raw = {"Player_1": x if deal else 0, "Player_2": y if deal else 0}
    rew = {p: float(v) for p, v in raw.items()}
    metrics = {"objective": "self", "lam": 0.0, "deal": deal, "aborted": end == "aborted", "end": end,
               "points": raw, "rewards": rew, "first_mover": first,
               "second_mover": "Player_2" if first == "Player_1" else "Player_1", "flip": flip, "turns": 4,
               "n_messages": 2, "n_invalid": {"Player_1": 1}, "n_invalid_total": 1,
               "proposals": {"Player_1": list(take), "Player_2": rest},
               "proposal_order": ["Player_1", "Player_2"], "counts": counts,
               "values": {"Player_1": va, "Player_2": vb},
               "ceilings": {"max_points": {"Player_1": 10, "Player_2": 10}, "max_welfare": 12, "max_nash": 36,
                            "pareto_frontier": [list(p) for p in FRONTIER]},
               "pareto_optimal": deal and (x, y) in FRONTIER,
               "welfare_optimal": deal and x + y == 12, "nash_ratio": x * y / 36 if deal else 0.0,
               "messages": [{"player": "Player_1", "text": f"I want {take[1]} hats and {take[2]} balls"},
                            {"player": "Player_2", "text": "ok deal"}]}
    winner = "Player_1" if rew["Player_1"] > rew["Player_2"] else "Player_2" if rew["Player_2"] > rew["Player_1"] else None
    status = "aborted" if end == "aborted" else "complete"
    outcome = Outcome(rewards=rew, winner=None if status == "aborted" else winner, status=status,
                      reason=end, metrics=metrics)
    seats = {"Player_1": a, "Player_2": b}
    return EpisodeRecord(id=episode_id(experiment, instance, seats, 0, 0, flip), experiment=experiment,
                         game="dond", instance_id=instance,
                         seats={p: SeatRecord(agent=ag, model="m", role="negotiator") for p, ag in seats.items()},
                         seed=0, flip=flip, matchup=f"{a} vs {b}", status=status, outcome=outcome)


def write_run(run_dir: Path, episodes: list[EpisodeRecord], failures: list[EpisodeRecord] = ()) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    with (run_dir / "episodes.jsonl").open("w") as f:
        for r in episodes:
            f.write(r.model_dump_json() + "\n")
    with (run_dir / "failures.jsonl").open("w") as f:
        for r in failures:
            f.write(r.model_dump_json() + "\n")
    (run_dir / "config.yaml").write_text("name: exp\ngame: debate\n")
    (run_dir / "manifest.json").write_text(json.dumps({"experiment": "exp", "total": len(episodes)}))
    return run_dir
