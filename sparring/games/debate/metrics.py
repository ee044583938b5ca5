"""Per-episode metrics of a debate: who argued what, what the judge concluded, quote statistics.

These land in `Outcome.metrics` and feed the experiment-level report (judge accuracy per format,
position bias, calibration, quote use, speech lengths).
"""

from __future__ import annotations

from typing import Any

from sparring.games.debate.config import DebateConfig
from sparring.games.debate.state import LETTERS, DebateState

TIE_EPS = 1e-9
_QUOTE_KEYS = ("n_quotes", "n_valid", "n_exact", "n_normalized", "n_repaired", "n_invalid",
               "quoted_words", "invalid_words")


def _quote_totals(st: DebateState, player: str) -> dict[str, Any]:
    tot: dict[str, int] = dict.fromkeys(_QUOTE_KEYS, 0)
    for ev in st.events:
        if ev.player == player and ev.tag == "speech":
            for k in _QUOTE_KEYS:
                tot[k] += ev.meta["quotes"][k]
    valid = tot["n_valid"] / tot["n_quotes"] if tot["n_quotes"] else None
    return {**tot, "valid_frac": valid}


def episode_metrics(cfg: DebateConfig, st: DebateState) -> dict[str, Any]:
    inst = st.instance
    m: dict[str, Any] = {
        "format": cfg.format, "order": cfg.order, "rounds": cfg.rounds, "flip": st.flip,
        "variant": st.variant, "judge_questions": cfg.judge_questions, "judge_reasoning": cfg.judge_reasoning,
        "background_truncated": st.background_info.get("truncated", False),
        "answers_by_player": dict(st.player_answer),
        "positions": {p: ("correct" if a == inst.correct else "incorrect") for p, a in st.player_answer.items()},
        "correct_player": next((p for p, a in st.player_answer.items() if a == inst.correct), None),
        "correct_side": next((s for s, a in st.side_answer.items() if a == inst.correct), None),
        "invalid_actions": dict(st.invalid),
    }
    if st.judge_display is not None:
        m["correct_letter"] = LETTERS[st.judge_display.index(inst.correct)]
    if cfg.format == "consultancy":
        m["consultant_correct"] = st.consultant_correct
    if cfg.format == "open_debate":
        m["chose_correct"] = None if st.chosen is None else st.chosen == inst.correct
    speeches = {p: [ev.meta["words"] for ev in st.events if ev.player == p and ev.tag == "speech"]
                for p in cfg.debaters}
    m["speech_words"] = speeches
    m["speech_words_total"] = {p: sum(w) for p, w in speeches.items()}
    m["quote_stats"] = {p: _quote_totals(st, p) for p in cfg.debaters}
    m["judge_reasoning_words"] = sum(ev.meta.get("words", 0) for ev in st.events if ev.tag == "reasoning")
    m["judge_questions_asked"] = sum(ev.tag == "question" for ev in st.events)
    # which judge option each debater stands for (consultancy: the answer label it argued)
    m["player_side"] = {p: next(s for s, a in st.side_answer.items() if a == ans)
                        for p, ans in st.player_answer.items() if st.side_answer}
    if st.verdict is None:
        return m
    probs = dict(st.verdict)
    p_correct = sum(p for s, p in probs.items() if st.side_answer[s] == inst.correct)
    tie = abs(p_correct - 0.5) <= TIE_EPS
    best = max(probs, key=lambda s: probs[s])
    winning_side = None if tie or probs[best] <= 0.5 else best
    if winning_side is None:
        winner = None
    elif winning_side in cfg.debaters:
        winner = winning_side
    else:  # consultancy: the consultant wins when the judge backs its answer
        winner = next((p for p, s in m["player_side"].items() if s == winning_side), None)
    votes = st.verdict_meta.get("votes")
    m.update(probs=probs, p_correct=p_correct, judge_correct=(p_correct > 0.5 and not tie), tie=tie,
             winning_side=winning_side, winner=winner)
    if votes is not None:
        m["votes"] = votes
    extra = {k: v for k, v in st.verdict_meta.items() if k != "votes"}
    if extra:
        m["verdict_meta"] = extra
    return m
