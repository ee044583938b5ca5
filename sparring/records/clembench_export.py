"""sparring runs out in clembench's layout (`sparring export clembench`): imported episodes exactly as
they were read, episodes sparring played rebuilt from what each player was shown and answered (a
clembench player keeps one growing history, so a record whose calls do not extend it is refused)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sparring.errors import SparringError
from sparring.records.clembench import EXPORTABLE, GM, MAPPED, ROLES
from sparring.records.record import EpisodeRecord
from sparring.types import Message


def _clem_game(record: EpisodeRecord) -> tuple[str, dict[str, str]]:
    """The clembench game name and sparring seat -> clembench player name of a record."""
    source = record.instance.get("source") if isinstance(record.instance, dict) else None
    origin = (record.state.get("clembench") or {}).get("players") if isinstance(record.state, dict) else None
    if origin:
        names = {seat: str(info["name"]) for seat, info in origin.items()}
    else:
        mapped = {s: p for _, (g, m) in MAPPED.items() if g == record.game for p, s in m.items()}
        names = mapped or {seat: f"Player {i + 1}" for i, seat in enumerate(record.seats)}
    return (str(source["game"]) if source else record.game), names


def interactions_of(record: EpisodeRecord) -> dict[str, Any]:
    """A record as clembench's interactions.json: imported records exactly as they were read;
    records sparring played, from what each player was shown and answered."""
    game, names = _clem_game(record)
    origin = record.state.get("clembench") if isinstance(record.state, dict) else None
    players_info = {seat: (((origin or {}).get("players") or {}).get(seat, {}).get("role")
                           or ROLES.get(seat, seat), record.seats[seat].model) for seat in record.seats}
    if origin and origin.get("players_form") == "text":
        players: dict[str, Any] = {GM: f"Game master for {game}",
                                   **{names[s]: f"{role}, {model}" for s, (role, model) in players_info.items()}}
    else:
        players = {GM: {"game_role": "Game Master", "model_name": "programmatic"},
                   **{names[s]: {"game_role": role, "model_name": model} for s, (role, model) in players_info.items()}}
    turns: list[list[dict[str, Any]]] = []
    if origin:  # imported: the events are clembench's actions
        for e in record.events:
            r = e.round or 0
            while len(turns) <= r:
                turns.append([])
            action = {"type": e.tag, "content": e.meta.get("raw_content", e.content), **(e.meta.get("action") or {})}
            entry = {"from": e.meta.get("from", e.player), "to": e.meta.get("to", GM)}
            if e.meta.get("timestamp") is not None:
                entry["timestamp"] = e.meta["timestamp"]
            turns[r].append({**entry, "action": action})
        extra = {k: v for k, v in origin.items() if k not in ("turn_scores", "players", "meta", "players_form")}
        return {**({"meta": origin["meta"]} if origin.get("meta") else {}), "players": players, "turns": turns,
                **extra}
    turns.append([])
    history: dict[str, list[Message]] = {}
    for call in record.calls:
        if call.op != "generate" or not call.completions or call.player not in names:
            continue
        before = history.get(call.player, [])
        if call.messages[: len(before)] != before:
            raise SparringError(f"episode {record.id}: {call.player}'s call {call.turn} does not extend what it was "
                                "shown before; clembench players keep one growing history, so it cannot be written")
        for m in call.messages[len(before):]:
            if m.role == "assistant":
                raise SparringError(f"episode {record.id}: {call.player} was shown a reply it did not give")
            label = {"label": "system"} if m.role == "system" else {}
            turns[-1].append({"from": GM, "to": names[call.player],
                              "action": {"type": "send message", "content": m.content, **label}})
        reply = call.completions[call.chosen or 0].text
        turns[-1].append({"from": names[call.player], "to": GM, "action": {
            "type": "get message", "content": reply, "label": "rejected" if call.rejected else "response"}})
        history[call.player] = [*call.messages, Message(role="assistant", content=reply)]
    meta = {"game_name": game, "experiment_name": record.experiment, "game_id": record.instance_id,
            "round_count": len(turns), "completed": record.status != "failed"}
    return {"meta": meta, "players": players, "turns": turns}


def scores_of(record: EpisodeRecord) -> dict[str, Any]:
    origin = record.state.get("clembench") if isinstance(record.state, dict) else None
    metrics = record.outcome.metrics if record.outcome else {}
    if isinstance(metrics.get("clembench"), dict):
        episode = dict(metrics["clembench"])
    else:
        aborted = record.status == "aborted"
        success = bool(metrics.get("success"))
        quality = metrics.get("quality_score")
        episode = {"Main Score": float("nan") if aborted or quality is None else float(quality),
                   "Success": int(success), "Lose": int(not success and not aborted), "Aborted": int(aborted)}
    return {"turn scores": (origin or {}).get("turn_scores", {}), "episode scores": episode}


def export_run(run_dir: str | Path, out: str | Path) -> dict[str, int]:
    """A run's episodes in clembench's layout under `out`: `<model pair>/<game>/<experiment>/
    episode_N/{interactions,scores}.json` (+ `instance.json` when the import kept one)."""
    from sparring.records.reader import iter_records

    out = Path(out)
    counts: dict[str, int] = {}
    numbers: dict[Path, int] = {}
    for record in iter_records(run_dir):
        if record.game not in EXPORTABLE:
            raise SparringError(f"{run_dir}: episode {record.id} is a {record.game!r} game; clembench's layout holds "
                                f"clembench games ({', '.join(sorted(EXPORTABLE))})")
        game, _ = _clem_game(record)
        source = record.instance.get("source") if isinstance(record.instance, dict) else None
        if source:
            folder = out / (source.get("model_pair") or "models") / source["game"] / source["experiment_folder"] / \
                source["episode"]
        else:
            models = sorted({s.model for s in record.seats.values()})
            pair = "--".join(models if len(models) > 1 else models * 2)
            experiment = out / pair / game / f"0_{record.experiment}"
            n = numbers.setdefault(experiment, 0)
            numbers[experiment] = n + 1
            folder = experiment / f"episode_{n}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "interactions.json").write_text(json.dumps(interactions_of(record), ensure_ascii=False, indent=1),
                                                  encoding="utf-8")
        (folder / "scores.json").write_text(json.dumps(scores_of(record), ensure_ascii=False, indent=1),
                                            encoding="utf-8")
        kept = record.instance.get("clembench_instance") if isinstance(record.instance, dict) else None
        if kept is not None:
            (folder / "instance.json").write_text(json.dumps(kept, ensure_ascii=False, indent=1), encoding="utf-8")
        counts[game] = counts.get(game, 0) + 1
    return counts
