"""Benchmark suites: a versioned YAML of game entries, each a template of an ordinary experiment.

A suite (`sparring/configs/bench/*.yaml`, or any path) names a `version` and one entry per
benchmark game. An entry is an experiment config (game, game_args, dataset, agents, tournament,
run, prompt_files) whose agents' `model` is a placeholder:

- `$model`: the model under test;
- `$partner`: `--partner` if given, else the model itself (self-play).

`instances` is how many instances (dataset items) the entry plays; `--instances N` trims it.
`with_partner` (optional) replaces top-level keys of the entry when `--partner` is given, except
`agents`, which is merged by agent name (e.g. add a partner agent and make the tournament a
custom model-vs-partner matchup played in both seat orders).

`experiment_config(...)` turns an entry into the experiment dict that `sparring run` would read;
the bench writes it into its output directory, so every (model, game) run is an ordinary,
resumable run directory with its own config.yaml and report.
"""

from __future__ import annotations

import copy
import re
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from sparring.config_io import read_yaml, validate
from sparring.errors import ConfigError, UnknownNameError
from sparring.evaluation.static_tasks import Statscore
from sparring.types import Strict

MODEL, PARTNER = "$model", "$partner"
_EXPERIMENT_KEYS = ("game_args", "dataset", "prompt_files", "agents", "tournament", "run")


class SuiteEntry(Strict):
    """One benchmark game: an experiment template and its instance count."""

    game: str = Field(description="registered game name (taboo, wordle, dond, ...)")
    description: str = ""
    instances: int = Field(ge=1, description="instances played per model (trimmed by --instances)")
    game_args: dict[str, Any] = Field(default_factory=dict)
    dataset: dict[str, Any]
    prompt_files: list[str] = Field(default_factory=list)
    agents: dict[str, dict[str, Any]]
    tournament: dict[str, Any] = Field(default_factory=lambda: {"type": "self_play"})
    run: dict[str, Any] = Field(default_factory=dict)
    with_partner: dict[str, Any] | None = Field(None, description="replaces keys when --partner is given")
    requires: list[str] = Field(default_factory=list, description="Python packages the game needs (an optional "
                                "extra): the entry is skipped, saying so, where one is not installed")

    @model_validator(mode="after")
    def _check(self) -> SuiteEntry:
        models = [a.get("model") for a in self.agents.values()]
        if MODEL not in models:
            raise ValueError(f"no agent plays the model under test (model: {MODEL!r})")
        extra = set(self.with_partner or {}) - set(_EXPERIMENT_KEYS)
        if extra:
            raise ValueError(f"with_partner may only replace {', '.join(_EXPERIMENT_KEYS)}; got {', '.join(sorted(extra))}")
        return self


class Suite(Strict):
    """A fixed, versioned benchmark: what every model plays."""

    version: str
    name: str = ""
    description: str = ""
    run: dict[str, Any] = Field(default_factory=dict, description="run defaults of every entry (seed, max_live)")
    games: dict[str, SuiteEntry]
    statscore: Statscore | None = Field(None, description="static tasks (lm-eval) whose mean is the statscore")

    @model_validator(mode="before")
    @classmethod
    def _version_text(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("version"), (int, float)):
            data = {**data, "version": str(data["version"])}
        return data


def suite_dirs() -> list[Path]:
    """Where suites are looked up by name: ./configs/bench, then the packaged ones."""
    packaged = Path(str(resources.files("sparring") / "configs" / "bench"))
    local = Path.cwd() / "configs" / "bench"
    return [local] if local.resolve() == packaged.resolve() else [local, packaged]


def find_suite(name_or_path: str) -> Path:
    """A suite by name (`suite`, `bench-quickstart`) or by path."""
    p = Path(name_or_path).expanduser()
    if p.suffix in (".yaml", ".yml") or len(p.parts) > 1 or p.is_file():
        if p.is_file():
            return p
        raise ConfigError("benchmark suite file not found", file=str(p))
    known: dict[str, Path] = {}
    for d in suite_dirs():
        for f in sorted(d.glob("*.yaml")) if d.is_dir() else []:
            known.setdefault(f.stem, f)
    if name_or_path in known:
        return known[name_or_path]
    raise UnknownNameError("benchmark suite", name_or_path, list(known))


def load_suite(name_or_path: str) -> tuple[Suite, Path]:
    path = find_suite(name_or_path)
    suite = validate(Suite, read_yaml(path) or {}, file=str(path))
    if not suite.name:
        suite = suite.model_copy(update={"name": path.stem})
    return suite, path


def select_games(suite: Suite, games: list[str] | None) -> list[str]:
    """The suite's entries named by `--games` (all when None), in the order given."""
    if not games:
        return list(suite.games)
    for g in games:
        if g not in suite.games:
            raise UnknownNameError(f"game of suite {suite.name!r}", g, list(suite.games))
    return list(dict.fromkeys(games))


def slug(name: str) -> str:
    """A model name as a directory name (`org/model` -> `org_model`)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "model"


def _fill(agents: dict[str, dict[str, Any]], model: str, partner: str) -> dict[str, dict[str, Any]]:
    out = copy.deepcopy(agents)
    fill = {MODEL: model, PARTNER: partner}
    for agent in out.values():
        name = agent.get("model")
        if isinstance(name, str) and name in fill:
            agent["model"] = fill[name]
    return out


def _path(value: str, base: Path) -> str:
    """Relative prompt files are read next to the suite file."""
    p = Path(value).expanduser()
    return str(p if p.is_absolute() else (base / p).resolve())


def experiment_config(suite: Suite, suite_path: Path, key: str, model: str, partner: str | None, *,
                      instances: int | None = None, models_file: str | None = None) -> dict[str, Any]:
    """The experiment config (as data) of suite entry `key` played by `model` (and `partner`)."""
    entry = suite.games[key]
    data = entry.model_dump()
    if partner is not None and entry.with_partner:
        for k, v in entry.with_partner.items():
            data[k] = {**data["agents"], **v} if k == "agents" else v
    n = min(entry.instances, instances) if instances else entry.instances
    cfg: dict[str, Any] = {
        "name": f"bench-{key}",
        "description": f"{suite.name} v{suite.version}: {key} ({entry.description or entry.game})",
        "game": entry.game, "game_args": data["game_args"], "dataset": data["dataset"],
        "agents": _fill(data["agents"], model, partner or model), "tournament": data["tournament"],
        "run": {**suite.run, **data["run"], "num_iters": n},
    }
    if data["prompt_files"]:
        cfg["prompt_files"] = [_path(p, suite_path.parent) for p in data["prompt_files"]]
    if models_file:
        cfg["models_file"] = str(Path(models_file).expanduser().resolve())
    return cfg
