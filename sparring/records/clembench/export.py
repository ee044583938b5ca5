"""sparring runs out in clembench's layout (`sparring export clembench`): `<model pair>/<game>/
<experiment>/episode_N/` with `interactions.json`, `scores.json` and `instance.json`, the layout
clemcore's `clem eval` (and `clem score`, `clem transcribe`) reads.

An imported episode is written exactly as it was read: the same `players` entry and actions, its
`scores.json` only if it had one (so `clem eval` on the export gives the original's results.csv),
its `instance.json` if it had one. An episode sparring played is written the way clembench's game
master would have logged it (`clembench_played`) with the scores clembench's own scorers give it
(`clembench_scores`).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from sparring.errors import SparringError
from sparring.records.clembench.played import played_interactions, player_names
from sparring.records.clembench.reader import EXPORTABLE, GM, MAPPED, ROLES, restore_nonfinite
from sparring.records.clembench.scores import played_scores
from sparring.records.record import EpisodeRecord

_STATE_KEYS = ("turn_scores", "players", "meta", "players_form", "players_raw", "has_scores", "scores_extra",
               "nonfinite")


def _origin(record: EpisodeRecord) -> dict[str, Any] | None:
    """What the import kept of a clembench episode (None: sparring played it)."""
    origin = record.state.get("clembench") if isinstance(record.state, dict) else None
    return origin if isinstance(origin, dict) else None


def _clem_game(record: EpisodeRecord) -> tuple[str, dict[str, str]]:
    """The clembench game name and sparring seat -> clembench player name of a record."""
    source = record.instance.get("source") if isinstance(record.instance, dict) else None
    origin = (_origin(record) or {}).get("players")
    if origin:
        names = {seat: str(info["name"]) for seat, info in origin.items()}
    else:
        names = player_names(record.game, list(record.seats))
    return (str(source["game"]) if source else record.game), names


def interactions_of(record: EpisodeRecord, pair: str = "", game_id: int = 0) -> dict[str, Any]:
    """A record as clembench's interactions.json: imported records exactly as they were read;
    records sparring played, as clembench's game master would have logged them."""
    origin = _origin(record)
    if origin is None:
        if record.game not in {g for g, _ in MAPPED.values()}:
            raise SparringError(f"episode {record.id}: a {record.game!r} episode that was not imported from "
                                "clembench has no clembench form")
        return played_interactions(record, pair, game_id)
    game, names = _clem_game(record)
    players: dict[str, Any] | None = origin.get("players_raw")
    if not isinstance(players, dict):  # a run imported before the `players` entry was kept as read
        roles = origin.get("players") or {}
        info = {names[seat]: (roles.get(seat, {}).get("role") or ROLES.get(seat, seat),
                              record.seats[seat].model) for seat in record.seats}
        if origin.get("players_form") == "text":
            players = {GM: f"Game master for {game}",
                       **{p: f"{role}, {model}" for p, (role, model) in info.items()}}
        else:
            players = {GM: {"game_role": "Game Master", "model_name": "programmatic"},
                       **{p: {"game_role": role, "model_name": model} for p, (role, model) in info.items()}}
    turns: list[list[dict[str, Any]]] = []
    for e in record.events:
        r = e.round or 0
        while len(turns) <= r:
            turns.append([])
        content = e.meta.get("raw_content", e.content)
        action = {"type": e.tag, "content": content, **(e.meta.get("action") or {})}
        entry = {"from": e.meta.get("from", e.player), "to": e.meta.get("to", GM)}
        if e.meta.get("timestamp") is not None:
            entry["timestamp"] = e.meta["timestamp"]
        turns[r].append({**entry, "action": action})
    extra = {k: v for k, v in origin.items() if k not in _STATE_KEYS}
    meta = {"meta": origin["meta"]} if origin.get("meta") else {}
    out = {**meta, "players": players, "turns": turns, **extra}
    numbers = (origin.get("nonfinite") or {}).get("interactions", [])
    return restore_nonfinite(copy.deepcopy(out), numbers) if numbers else out


def scores_of(record: EpisodeRecord, interactions: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The episode's scores.json: an imported episode's as it was read (None if it had none); a
    played episode's as clembench's scorer gives it (None if clembench gives it none)."""
    origin = _origin(record)
    if origin is None:
        return played_scores(record, interactions if interactions is not None else interactions_of(record))
    metrics = record.outcome.metrics if record.outcome else {}
    had = origin.get("has_scores")
    if had is None:  # a run imported before the flag was kept: the importer's note says it
        had = not (record.outcome is not None and record.outcome.reason == "no scores.json")
    if not had or not isinstance(metrics.get("clembench"), dict):
        return None
    extra = origin.get("scores_extra") or {}
    scores = {**extra, "turn scores": origin.get("turn_scores", {}), "episode scores": metrics["clembench"]}
    numbers = (origin.get("nonfinite") or {}).get("scores", [])
    return restore_nonfinite(json.loads(json.dumps(scores)), numbers)  # a copy: the record stays as it is


def _instance(record: EpisodeRecord, game_id: int) -> dict[str, Any]:
    """instance.json of a played episode: the instance in clembench's keys (game_id, target_word,
    related_word for taboo) and sparring's instance id."""
    inst = record.instance if isinstance(record.instance, dict) else {}
    out: dict[str, Any] = {"game_id": game_id}
    if "target" in inst:
        out["target_word"] = inst["target"]
    if record.game == "taboo" and "taboo" in inst:
        out["related_word"] = list(inst["taboo"])
    out["sparring_instance"] = record.instance_id
    return out


def _write(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")


def export_run(run_dir: str | Path, out: str | Path) -> dict[str, int]:
    """A run's episodes in clembench's layout under `out`: `<model pair>/<game>/<experiment>/
    episode_N/{interactions,scores,instance}.json` (+ `experiment.json` per experiment of a played
    run). Returns episodes written per clembench game."""
    from sparring.records.reader import iter_records

    out = Path(out)
    counts: dict[str, int] = {}
    numbers: dict[Path, int] = {}
    for record in iter_records(run_dir):
        if record.game not in EXPORTABLE:
            raise SparringError(f"{run_dir}: episode {record.id} is a {record.game!r} game; clembench's "
                                f"layout holds clembench games ({', '.join(sorted(EXPORTABLE))})")
        game, names = _clem_game(record)
        source = record.instance.get("source") if isinstance(record.instance, dict) else None
        if source and _origin(record) is not None:
            pair_folder = out / (source.get("model_pair") or "models")
            folder = pair_folder / source["game"] / source["experiment_folder"] / source["episode"]
            interactions = interactions_of(record)
            instance = record.instance.get("clembench_instance")
        else:
            models = [record.seats[s].model for s in sorted(record.seats, key=lambda s: names[s])]
            pair = "--".join(models if len(models) > 1 else models * 2)
            experiment = out / pair / game / f"0_{record.experiment}"
            n = numbers.setdefault(experiment, 0)
            numbers[experiment] = n + 1
            folder = experiment / f"episode_{n}"
            interactions = interactions_of(record, pair, n)
            instance = _instance(record, n)
            experiment.mkdir(parents=True, exist_ok=True)
            if not (experiment / "experiment.json").is_file():
                _write(experiment / "experiment.json", {"name": record.experiment, "game_name": game})
        folder.mkdir(parents=True, exist_ok=True)
        _write(folder / "interactions.json", interactions)
        scores = scores_of(record, interactions)
        if scores is not None:
            _write(folder / "scores.json", scores)
        if instance is not None:
            _write(folder / "instance.json", instance)
        counts[game] = counts.get(game, 0) + 1
    return counts
