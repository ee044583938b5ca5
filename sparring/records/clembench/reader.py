"""clembench's recorded games in: `sparring import clembench` (out again, `sparring export clembench`,
is `clembench_export.py`).

clembench stores one folder per episode, `<model pair>/<game>/<experiment>/episode_N/` (newer
versions `instance_N/`), holding `interactions.json` (the players, and every action in rounds:
the game master's message to a player, `send message`; a player's reply, `get message`; the game
master's own notes, GM -> GM), `scores.json` (`turn scores`, `episode scores`: Main Score,
Success, Lose, Aborted, ...) and `requests.json`. Every `players` form is read: the older texts
("Role, model" and v2.0's "Role (model)") and the newer mapping (`{game_role, model_name}`, with
`meta`).

An imported episode is one sparring record:
- seats: the players who play (taboo and the wordle family map to sparring's own games and seat
  names; every other game becomes the transcript-only game `clembench`), each with its model. A
  programmatic player (model "programmatic", as v2.0's wordle names "Player B: ObjectID Evaluator
  (Programmatic)") is the game master's helper, not a seat; so is, in a mapped game, a player
  outside its seats who never sends or receives a message (v2.0's wordle_withclue names an idle
  critic). The `players` entry is kept as read, so the export writes it back unchanged;
- calls: for each reply, what that player had been shown so far — the game master's messages to
  it (user) and its own replies (assistant), in order, as a clembench player keeps its history —
  and the reply; so `sparring export sft` gives Playpen's conversations, both perspectives;
- events: every action in order with its round, sender, receiver, type and timestamp, so the
  export writes `interactions.json` back exactly;
- outcome: the episode scores (quality_score = Main Score, success, lose, aborted; all of them kept
  under `clembench`), the turn scores in `state`; an episode without `scores.json` has no scores
  (and the export writes none).

A folder that cannot be read (malformed or truncated JSON, no turns, unknown structure) is kept as
a failed record naming the file and the reason; the run is built in a temporary folder and moved
into place when complete, so nothing is ever half-written.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparring.errors import SparringError
from sparring.gameapi.game import Event, Outcome
from sparring.records.record import CallRecord, EpisodeRecord, SeatRecord
from sparring.types import Completion, Message, Strict, Usage

GM = "GM"
# clembench game -> (sparring game, clembench player -> sparring seat); others: the `clembench` game
MAPPED: dict[str, tuple[str, dict[str, str]]] = {
    "taboo": ("taboo", {"Player 1": "Describer", "Player 2": "Guesser"}),
    "wordle": ("wordle", {"Player 1": "Guesser"}),
    "wordle_withclue": ("wordle", {"Player 1": "Guesser"}),
    "wordle_withcritic": ("wordle_withcritic", {"Player 1": "Guesser", "Player 2": "Critic"}),
}
ROLES = {"Describer": "WordDescriber", "Guesser": "WordGuesser", "Critic": "WordCritic"}
EXPORTABLE = {"clembench", *(game for game, _ in MAPPED.values())}
PROGRAMMATIC = "programmatic"  # clembench's model name of a player the game master plays itself
_EPISODE = re.compile(r"^(episode|instance)_(\d+)$")
_ROLE_MODEL = re.compile(r"^(?P<role>.*?)\s*\((?P<model>[^()]*)\)\s*$")  # v2.0: "Word Guesser (model)"


class ClembenchFormatError(SparringError):
    """A clembench episode folder that cannot be read."""


class ImportConfig(Strict):
    """The config.yaml of an imported run: where it came from."""

    name: str
    source: str
    format: str = "clembench"


def _identity(config: Any) -> dict[str, Any]:
    return {"name": config.name, "source": config.source, "format": config.format}


@dataclass
class ImportResult:
    run_dir: Path
    imported: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (file, reason)
    games: dict[str, int] = field(default_factory=dict)


def episode_dirs(root: Path) -> list[Path]:
    """Every folder under `root` (at any depth) holding an interactions file, in a stable order."""
    found = {p.parent for name in ("interactions.json", "interaction.json") for p in root.rglob(name)}

    def key(p: Path) -> list[Any]:
        return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(p.relative_to(root)))]

    return sorted(found, key=key)


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ClembenchFormatError(f"{path.name}: not UTF-8 text") from None
    except ValueError as e:
        raise ClembenchFormatError(f"{path.name}: not valid JSON ({e})") from None


def _players(interactions: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """clembench player name -> (game role, model), from either `players` form."""
    raw = interactions.get("players")
    if not isinstance(raw, dict):
        raise ClembenchFormatError("interactions.json: no `players` mapping")
    models: dict[str, Any] = interactions.get("player_models") or {}
    if not isinstance(models, dict):
        models = {}
    out = {}
    for name, info in raw.items():
        if name == GM:
            continue
        if isinstance(info, dict):
            role, model = str(info.get("game_role", "")), str(info.get("model_name", ""))
        elif isinstance(info, str):
            role, comma, model = info.partition(", ")
            paren = None if comma else _ROLE_MODEL.match(info)
            if paren:
                role, model = paren["role"], paren["model"]
        else:
            raise ClembenchFormatError(f"interactions.json: player {name!r} is neither text nor a mapping")
        out[str(name)] = (role.strip(), (model or str(models.get(name, "")) or "unknown").strip())
    if not out:
        raise ClembenchFormatError("interactions.json: no players besides the game master")
    return out


def _seating(game: str, players: dict[str, tuple[str, str]],
             turns: list[list[dict[str, Any]]]) -> tuple[str, dict[str, str]]:
    """(sparring game, clembench player -> seat) of an episode: programmatic players are the game
    master's helpers, never seats; a mapped game keeps its own game unless a player outside its
    seats takes part (then the episode is kept as the transcript-only `clembench` game)."""
    helpers = {p for p, (_, model) in players.items() if model.lower() == PROGRAMMATIC}
    acting = {str(a[k]) for actions in turns for a in actions for k in ("from", "to")}
    if game in MAPPED:
        mapped, seat_of = MAPPED[game]
        others = {p for p in players if p not in seat_of and p not in helpers and p in acting}
        if not others:
            return mapped, {p: s for p, s in seat_of.items() if p in players and p not in helpers}
    seats = {p: p for p in players if p not in helpers}
    if not seats:
        raise ClembenchFormatError("interactions.json: every player is programmatic (no model plays)")
    return "clembench", seats


def _turns(interactions: dict[str, Any]) -> list[list[dict[str, Any]]]:
    turns = interactions.get("turns")
    if not isinstance(turns, list) or not all(isinstance(t, list) for t in turns):
        raise ClembenchFormatError("interactions.json: `turns` is not a list of rounds")
    for r, actions in enumerate(turns):
        for a in actions:
            if not (isinstance(a, dict) and isinstance(a.get("action"), dict) and "from" in a and "to" in a
                    and "type" in a["action"]):
                raise ClembenchFormatError(f"interactions.json: round {r} holds an entry that is not "
                                           "{from, to, action: {type, content}}")
    if not any(turns):
        raise ClembenchFormatError("interactions.json: no actions")
    return turns


def _where(folder: Path, root: Path, interactions: dict[str, Any]) -> dict[str, str]:
    """Model pair, game, experiment, episode: from `meta` where present, else from the path."""
    parts = folder.relative_to(root).parts if folder != root else (folder.name,)
    padded = ("", "", "", *parts)
    meta: dict[str, Any] = interactions.get("meta") or {}
    if not isinstance(meta, dict):
        meta = {}
    experiment = str(meta.get("experiment_name") or re.sub(r"^\d+_", "", padded[-2]) or "experiment")
    return {"model_pair": padded[-4], "game": str(meta.get("game_name") or padded[-3] or "unknown"),
            "experiment": experiment, "experiment_folder": padded[-2], "episode": parts[-1],
            "path": str(folder.relative_to(root))}


def nonfinite(value: Any, path: tuple[Any, ...] = ()) -> list[list[Any]]:
    """Where a JSON value holds NaN or an infinity (clembench's Main Score of an aborted game):
    [key, ..., "NaN"] per number. Records store them as null, so the export puts them back."""
    if isinstance(value, float) and not math.isfinite(value):
        return [[*path, json.dumps(value)]]
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    return [found for k, v in items for found in nonfinite(v, (*path, k))]


def restore_nonfinite(value: Any, paths: list[list[Any]]) -> Any:
    """`value` with the numbers `nonfinite` found put back where they were (a path that no longer
    leads anywhere is skipped)."""
    for *keys, spelling in paths:
        node = value
        try:
            for k in keys[:-1]:
                node = node[k]
            if keys and node[keys[-1]] is None:
                node[keys[-1]] = float(json.loads(spelling))
        except (KeyError, IndexError, TypeError, ValueError):
            continue
    return value


def _content(action: dict[str, Any]) -> str:
    content = action.get("content", "")
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def episode_record(folder: Path, root: Path, run: str) -> EpisodeRecord:
    """One episode folder as a sparring record (ClembenchFormatError if it cannot be read)."""
    file = folder / "interactions.json" if (folder / "interactions.json").is_file() else folder / "interaction.json"
    interactions = _load(file)
    if not isinstance(interactions, dict):
        raise ClembenchFormatError(f"{file.name}: not a JSON object")
    players = _players(interactions)
    turns = _turns(interactions)
    where = _where(folder, root, interactions)
    game, seat_of = _seating(where["game"], players, turns)
    seats = {seat_of[p]: SeatRecord(agent=model, model=model, role=(role or seat_of[p]).lower() if game == "clembench"
                                    else _sparring_role(seat_of[p]), prompt_set=None)
             for p, (role, model) in players.items() if p in seat_of}
    events: list[Event] = []
    calls: list[CallRecord] = []
    history: dict[str, list[Message]] = {p: [] for p in seat_of}
    for r, actions in enumerate(turns):
        for a in actions:
            action = a["action"]
            sender, receiver, kind = str(a["from"]), str(a["to"]), str(action["type"])
            text = _content(action)
            extra = {k: v for k, v in action.items() if k not in ("type", "content")}
            seen_by = [seat_of[receiver]] if receiver in seat_of else ([seat_of[sender]] if sender in seat_of else [])
            events.append(Event(index=len(events), player=seat_of.get(sender, sender), tag=kind, content=text,
                                visible_to=seen_by, round=r,
                                meta={"from": sender, "to": receiver, "timestamp": a.get("timestamp"),
                                      **({"action": extra} if extra else {}),
                                      **({"raw_content": action["content"]} if not isinstance(action.get("content", ""), str)
                                         else {})}))
            if sender == GM and receiver in seat_of and kind == "send message":
                role = "system" if action.get("label") == "system" else "user"  # sparring's export labels rules
                history[receiver].append(Message(role=role, content=text))
            elif sender in seat_of and kind == "get message":
                calls.append(CallRecord(player=seat_of[sender], tag="turn", model=players[sender][1], op="generate",
                                        messages=list(history[sender]), turn=len(calls),
                                        rejected=action.get("label") == "rejected",
                                        completions=[Completion(text=text, finish_reason="stop", usage=Usage())],
                                        meta={"round": r}))
                history[sender].append(Message(role="assistant", content=text))
    outcome, turn_scores, status, scores = _outcome(folder, seats)
    scores_extra = None if scores is None else {k: v for k, v in scores.items()
                                                 if k not in ("turn scores", "episode scores")}
    numbers = {k: found for k, found in (("interactions", nonfinite(interactions)),
                                         ("scores", nonfinite(scores) if scores is not None else []))
               if found}
    instance_id = f"{where['game']}/{where['experiment_folder']}/{where['episode']}"
    digest = hashlib.sha256(f"{run}/{where['path']}".encode()).hexdigest()[:16]
    meta = interactions.get("meta") if isinstance(interactions.get("meta"), dict) else None
    instance = {"id": instance_id, "source": {"format": "clembench", **where}}
    if (folder / "instance.json").is_file():
        try:
            instance["clembench_instance"] = _load(folder / "instance.json")
        except ClembenchFormatError:
            pass
    named = {seat_of[p]: {"name": p, "role": role} for p, (role, _) in players.items() if p in seat_of}
    state = {"clembench": {"turn_scores": turn_scores, "players": named,
                           **({"meta": meta} if meta else {}),
                           **({k: interactions[k] for k in interactions if k not in ("players", "turns", "meta")}),
                           "players_form": "mapping" if isinstance(next(iter(
                               v for k, v in interactions["players"].items() if k != GM)), dict) else "text",
                           "players_raw": interactions["players"], "has_scores": scores_extra is not None,
                           **({"scores_extra": scores_extra} if scores_extra else {}),
                           **({"nonfinite": numbers} if numbers else {})}}
    return EpisodeRecord(id=digest, experiment=run, game=game, instance_id=instance_id, instance=instance,
                         seats=seats, seed=0, status=status, outcome=outcome, events=events, calls=calls, state=state,
                         matchup=" & ".join(sorted({s.agent for s in seats.values()})))


def _sparring_role(seat: str) -> str:
    return seat.lower()


def _outcome(folder: Path, seats: dict[str, SeatRecord]
             ) -> tuple[Outcome | None, dict[str, Any], str, dict[str, Any] | None]:
    """The outcome, turn scores, status and `scores.json` as read (None: there is none)."""
    path = folder / "scores.json"
    if not path.is_file():
        return Outcome(status="complete", reason="no scores.json", metrics={}), {}, "complete", None
    scores = _load(path)
    if not isinstance(scores, dict) or not isinstance(scores.get("episode scores", {}), dict):
        raise ClembenchFormatError("scores.json: no `episode scores` mapping")
    episode = scores.get("episode scores") or {}
    main = episode.get("Main Score")
    aborted = bool(episode.get("Aborted"))
    quality = None if main is None or (isinstance(main, float) and main != main) else float(main)
    metrics = {"quality_score": quality, "success": bool(episode.get("Success")), "lose": bool(episode.get("Lose")),
               "aborted": aborted, "clembench": episode}
    rewards = {seat: (quality or 0.0) / 100.0 for seat in seats}
    outcome = Outcome(rewards=rewards, status="aborted" if aborted else "complete", metrics=metrics,
                      reason="Aborted" if aborted else None)
    turn: dict[str, Any] = scores.get("turn scores") or {}
    return outcome, turn if isinstance(turn, dict) else {}, "aborted" if aborted else "complete", scores


def failed_record(folder: Path, root: Path, run: str, reason: str) -> EpisodeRecord:
    rel = str(folder.relative_to(root)) if folder != root else folder.name
    return EpisodeRecord(id=hashlib.sha256(f"{run}/{rel}".encode()).hexdigest()[:16], experiment=run,
                         game="clembench", instance_id=rel, instance={"id": rel}, seats={}, seed=0, status="failed",
                         error=f"{rel}: {reason}")


def import_tree(root: str | Path, out: str | Path, name: str | None = None) -> ImportResult:
    """Every episode under `root` into a new run directory `out` (refused if it exists)."""
    from sparring.records.store import RunStore

    root, out = Path(root).expanduser(), Path(out).expanduser()
    if not root.is_dir():
        raise SparringError(f"{root}: not a folder (give a clembench results folder)")
    if out.exists() and any(out.iterdir()):
        raise SparringError(f"{out} exists and is not empty; give a new run directory")
    folders = episode_dirs(root)
    if not folders:
        raise SparringError(f"{root}: no clembench episodes (no interactions.json below it)")
    run = name or out.name
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.import-"))
    result = ImportResult(run_dir=out)
    try:
        store = RunStore(work, ImportConfig(name=run, source=str(root.resolve())), _identity)
        try:
            for folder in folders:
                try:
                    record = episode_record(folder, root, run)
                except ClembenchFormatError as e:
                    store.add_failed(failed_record(folder, root, run, str(e)))
                    result.skipped.append((str(folder.relative_to(root)), str(e)))
                    continue
                store.add_done(record)
                result.imported += 1
                result.games[record.game] = result.games.get(record.game, 0) + 1
            store.commit()
        finally:
            store.close(status="complete", imported_from=str(root.resolve()), skipped=len(result.skipped))
        if out.exists():
            out.rmdir()
        os.replace(work, out)
        (out / ".lock").unlink(missing_ok=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return result
