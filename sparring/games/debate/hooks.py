"""Debate's hooks: its clemscore quality, headline metrics, web play panel (judge or debater),
the replay of the NYU human debates for SFT export and the debater's speech as a tool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sparring.gameapi.hooks import (
    GameHooks,
    HumanReplay,
    Metric,
    Metrics,
    MoveTool,
    PlayPanel,
    ReplayPlan,
    ToolArg,
)


def quality(m: Metrics) -> float | None:
    """Debate (and its consultancy formats): 100 x the probability the judge puts on the correct
    answer. Self-play debate argues both sides, so this measures how well the debate lets the
    truth win with this judge (the model itself, or the partner); 50 is a coin flip."""
    p = m.get("p_correct")
    return None if p is None else 100.0 * float(p)


def hit(p: float) -> float:
    """A probability read as a pick: 1 above one half, 0 below, a 50/50 verdict half a hit."""
    return 1.0 if p > 0.5 + 1e-9 else 0.0 if p < 0.5 - 1e-9 else 0.5


def judge_hit(m: Metrics) -> float | None:
    """Did the verdict pick the correct answer (None without a verdict)? The report's judge
    accuracy tables count the same way (`report_stats`)."""
    p = m.get("p_correct")
    return None if p is None else hit(float(p))


def behaviour(m: Metrics, player: str) -> dict[str, float | None]:
    """A debater's quoting in one debate: valid quotes and quotes per speech, words per speech."""
    words = (m.get("speech_words") or {}).get(player) or []
    stats = (m.get("quote_stats") or {}).get(player) or {}
    if not words:
        return {}
    return {"valid_quotes": float(stats.get("n_valid") or 0) / len(words),
            "quotes": float(stats.get("n_quotes") or 0) / len(words), "words": sum(words) / len(words)}


METRICS = (
    Metric("judge_accuracy", "higher", "wilson", "the judge's verdict picks the correct answer (a 50/50 "
           "verdict counts half)", value=judge_hit),
    Metric("p_correct", "higher", "bootstrap", "the judge's probability of the correct answer"),
)


def replay_nyu(path: Path, split: str, limit: int | None, rounds: int) -> ReplayPlan:
    """The NYU human debates: the human debaters' speeches replayed (the first `rounds` of each),
    and the judge seat giving the human judge's final probabilities as its verdict, so judge rows
    (`role: judge`) target the human verdict (a debate without them gets a uniform verdict)."""
    from sparring.games.debate.datasets.nyu import nyu_transcripts
    from sparring.models.replay import ReplayModel
    from sparring.models.scripted import ScriptedModel

    debates = nyu_transcripts(path, split=split, formats=["debate"])[: limit or None]
    replay = ReplayModel.from_records(debates, name="human", duplicates="first")
    config: dict[str, Any] = {
        "name": "human-nyu", "game": "debate",
        "game_args": {"format": "debate", "rounds": rounds, "assignment": "fixed"},
        "dataset": {"name": "nyu_human_debates", "split": split, "args": {"path": str(path), "formats": ["debate"]}},
        "agents": {"human": {"role": "debater", "model": "human"},
                   "judge": {"role": "judge", "model": "human-judge"}},
        "tournament": {"type": "self_play", "participants": ["human"], "judges": ["judge"]}}
    verdicts = {d["instance_id"]: ev["probs"] for d in debates for ev in d["events"]
                if ev["tag"] == "verdict" and ev.get("probs")}

    def human_judge(request: Any) -> list[float]:
        probs = verdicts.get(request.context.get("instance_id"))
        if not probs or len(request.options) != 2:
            return [1.0] * len(request.options)
        return [max(probs.get(side, 0.0), 1e-6) for side in ("Debater_A", "Debater_B")]

    judge = ScriptedModel("human-judge", score_mode="callable", score_function=human_judge)
    return ReplayPlan(config=config, models={"human": replay, "human-judge": judge},
                      keep={d["instance_id"] for d in debates})


HOOKS = GameHooks(
    quality=quality,
    metrics=METRICS,
    behaviour=behaviour,
    play=PlayPanel(roles=("judge", "debater"), rules_first=True,
                   hints={"speech": "quote the story as <quote>exact words</quote>"}),
    human_data=(HumanReplay("nyu", "debater", replay_nyu, "NYU human debates (readable JSONL)"),),
    tools=(MoveTool("argue", "Give your speech for your side; quote the story as <quote>exact words</quote>.",
                    (ToolArg("speech", str, "your speech"),), lambda a, ctx: str(a["speech"]).strip(),
                    roles=frozenset({"debater"})),),
)
