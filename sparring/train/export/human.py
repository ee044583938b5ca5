"""Human data as SFT rows, rendered by our own prompts: the human games are replayed through the
game (the replay backend plays each recorded utterance in its seat), so every row shows exactly
what our negotiator or debater would be shown, with the human's move as its reply — the warm
start of lm-selfplay (Deal or No Deal `data.txt`) and of the NYU debate work (debaters' speeches).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from sparring.errors import SparringError
from sparring.train.export.filters import ExportFilters
from sparring.train.export.sft import sft_rows

HumanSource = Literal["dond", "nyu"]


def human_records(source: HumanSource, path: str | Path, *, split: str = "all", limit: int | None = None,
                  rounds: int = 2) -> list[Any]:
    """Episode records of the human games in `path`, replayed through the game (NYU debates: the
    first `rounds` speeches of each debater; a debate with fewer is left out)."""
    from sparring.engine.play import Arena
    from sparring.models.replay import ReplayModel

    path = Path(path).expanduser()
    if source == "dond":
        from sparring.games.negotiation.dialogues import load_dond_dialogues

        transcripts = load_dond_dialogues(path, split=None if split == "all" else split,  # type: ignore[arg-type]
                                          limit=limit, only_complete=True)
        replay = ReplayModel.from_records([t.record() for t in transcripts], name="human")
        config: dict[str, Any] = {
            "name": "human-dond", "game": "dond",
            "dataset": {"name": "dond_dialogues", "split": split,
                        "args": {"path": str(path), "only_complete": True, **({"limit": limit} if limit else {})}},
            "agents": {"human": {"role": "negotiator", "model": "human"}},
            "tournament": {"type": "self_play", "participants": ["human"]}}
    elif source == "nyu":
        from sparring.games.debate.datasets.nyu import nyu_transcripts
        from sparring.models.scripted import ScriptedModel

        debates = nyu_transcripts(path, split=split, formats=["debate"])[: limit or None]
        replay = ReplayModel.from_records(debates, name="human", duplicates="first")
        # The human debaters' speeches are replayed, and the judge seat gives the human judge's final
        # probabilities as its verdict: judge rows (`role: judge`) then target the human verdict,
        # with the probabilities in their meta (a debate without them gets a uniform verdict).
        config = {
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

        extra = {"human-judge": ScriptedModel("human-judge", score_mode="callable", score_function=human_judge)}
        keep = {d["instance_id"] for d in debates}
        with Arena.from_config(config, models={"human": replay, **extra}) as arena:
            records = arena.play([j for j in arena.jobs() if j.instance_id in keep])
        return [r for r in records if r.status != "failed"]
    else:
        raise SparringError(f"unknown human data source {source!r}; expected dond or nyu")
    with Arena.from_config(config, models={"human": replay}) as arena:
        records = arena.play(arena.jobs())
    return [r for r in records if r.status != "failed"]


def human_sft_rows(source: HumanSource, path: str | Path, filters: ExportFilters | None = None, *,
                   split: str = "all", limit: int | None = None, rounds: int = 2) -> list[dict[str, Any]]:
    f = filters or ExportFilters(role="negotiator" if source == "dond" else "debater")
    rows = sft_rows(human_records(source, path, split=split, limit=limit, rounds=rounds), f)
    for row in rows:
        row["meta"]["source"] = f"human:{source}"
    return rows
