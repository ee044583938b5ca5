"""Seats held from outside the engine: a Model whose requests are answered by whoever holds the seat.

Why a model: the engine plays the episode exactly as `sparring run` does (turn order, visibility,
re-prompts, the judge's verdict parsing, the outcome); a seat held by another training engine (a
verifiers agent, a TRL rollout's tool calls) is just a model whose replies come from there, as the
web app's human is. One router serves every live episode of an arena: each request names its
episode and player (`GenerateRequest.context`), and the holder of that seat answers it with the
whole reply text (an echoed assistant prefix is stripped here, as the API backends do).

An experiment marks the seats it lets others hold by naming the model `SEAT_MODEL` for their
agents (`hold_seats` does that to a copy of any experiment).
"""

from __future__ import annotations

import copy
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from sparring.errors import ConfigError, SparringError
from sparring.models.base import Model
from sparring.models.remote import strip_echoed_prefix
from sparring.types import Completion, GenerateRequest, Usage

SEAT_MODEL = "held-seat"  # the model name of the agents whose seats are answered from outside

Answer = Callable[[GenerateRequest], str]  # a seat's holder: the request -> the whole reply text


class SeatRouter(Model):
    """Answers each request with the holder of its (episode, player) seat, registered by `hold`
    before the episode is played and dropped by `release` after. Requests of one call (simultaneous
    moves) are answered side by side. It cannot score: a judge seat held here gives its verdict in
    text (the judge's fallback instruction)."""

    can_score = False
    # Called in the episode's own thread, not the runner's worker pool: a holder waits as long as its
    # seat takes (a person-paced trainer), and a thread blocked there must not keep the process alive.
    concurrent = False

    def __init__(self, name: str = SEAT_MODEL, **kwargs: Any):
        super().__init__(name, **kwargs)
        self._holders: dict[tuple[str, str], Answer] = {}
        self._lock = threading.Lock()

    def hold(self, episode_id: str, holders: Mapping[str, Answer]) -> None:
        """Register the holders (player -> answer) of one episode's held seats."""
        with self._lock:
            for player, answer in holders.items():
                self._holders[(episode_id, player)] = answer

    def release(self, episode_id: str) -> None:
        with self._lock:
            for key in [k for k in self._holders if k[0] == episode_id]:
                del self._holders[key]

    def _answer(self, request: GenerateRequest) -> Completion | BaseException:
        key = (str(request.context.get("episode_id", "")), str(request.context.get("player", "")))
        with self._lock:
            answer = self._holders.get(key)
        if answer is None:
            return SparringError(f"no holder for seat {key[1]!r} of episode {key[0]!r}")
        try:
            text = answer(request)
        except Exception as e:  # noqa: BLE001 — returned in the request's place (EpisodeAbandoned ends the game)
            return e
        if request.assistant_prefix:
            text = strip_echoed_prefix(text, request.assistant_prefix)
        return Completion(text=text, finish_reason="stop", usage=Usage())

    def _generate(self, requests: list[GenerateRequest]) -> list[Completion]:
        if len(requests) == 1:
            return [self._answer(requests[0])]  # type: ignore[list-item]
        out: list[Any] = [None] * len(requests)

        def answer(i: int) -> None:
            out[i] = self._answer(requests[i])

        threads = [threading.Thread(target=answer, args=(i,), daemon=True, name="held-seat")
                   for i in range(len(requests))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return out


def experiment_data(source: str | Path | Mapping[str, Any]) -> tuple[dict[str, Any], Path]:
    """An experiment as data and the path that anchors its relative paths: a shipped name
    (`dond-quickstart`), a YAML file, or a dict (anchored in the working directory)."""
    from sparring.config_io import read_yaml
    from sparring.engine.loader import find_config

    if isinstance(source, Mapping):
        data = copy.deepcopy(dict(source))
        return data, Path.cwd() / f"{data.get('name') or 'inline'}.yaml"
    path = find_config(source)
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError("expected a mapping at the top level", file=str(path))
    data.setdefault("name", path.stem)
    models_file = data.get("models_file")
    if isinstance(models_file, str) and not Path(models_file).expanduser().is_absolute():
        if (path.parent / models_file).is_file():  # relative to the experiment, wherever it is read from
            data["models_file"] = str((path.parent / models_file).resolve())
    return data, path


def hold_seats(data: Mapping[str, Any], agents: Iterable[str] | None, where: str = "") -> dict[str, Any]:
    """A copy of experiment `data` whose `agents` (default: every agent) play through `SEAT_MODEL`."""
    out = copy.deepcopy(dict(data))
    known = out.get("agents") or {}
    if not isinstance(known, dict) or not known:
        raise ConfigError(f"experiment {out.get('name')!r} has no agents", file=where or None, key="agents")
    names = list(known) if agents is None else list(agents)
    unknown = [a for a in names if a not in known]
    if unknown:
        raise ConfigError(f"unknown agent(s) {', '.join(map(repr, unknown))}; the experiment's agents: "
                          f"{', '.join(known)}", file=where or None, key="agents")
    for name in names:
        agent = dict(known[name] or {})
        agent["model"] = SEAT_MODEL
        agent.pop("adapter", None)  # a LoRA adapter of the replaced model means nothing to the holder
        known[name] = agent
    return out


def camel(name: str) -> str:
    """`sparring-dond` -> `SparringDond`: the stem of a package's class names."""
    return "".join(part.capitalize() for part in re.split(r"[^0-9a-zA-Z]+", name) if part) or "Game"


def resolve_experiment(data: Mapping[str, Any], path: Path, injected: Iterable[str] = ()) -> Any:
    """The experiment resolved (game, roles, agents), nothing loaded; the held seats' model and the
    `injected` model names (ready-made models the caller brings) are known to the resolver."""
    from sparring.engine.loader import config_from_data, resolve
    from sparring.models.spec import ModelSpec

    cfg, path = config_from_data(dict(data), path)
    names = {SEAT_MODEL, *injected}
    return resolve(cfg, path, extra_specs={n: ModelSpec(name=n, backend="injected") for n in names})


def with_split(data: Mapping[str, Any], split: str | None, limit: int | None) -> dict[str, Any]:
    """`data` with its dataset's split and limit replaced where given (the train / held-out split)."""
    out = dict(data)
    dataset = dict(out.get("dataset") or {})
    if split is not None:
        dataset["split"] = split
    if limit is not None:
        dataset["limit"] = limit
    if dataset:
        out["dataset"] = dataset
    return out
