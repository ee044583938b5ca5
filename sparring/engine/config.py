"""Experiment config schema (one YAML file per experiment under `configs/experiments/`).

Only the shape is checked here; cross-references (the game's own `game_args`, each agent against
its role's `Config`, agent names used by the tournament, models and prompt sets) are resolved by
`sparring.engine.loader`, which knows the registries and names the offending key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from sparring.errors import ConfigError
from sparring.gameapi.game import DatasetConfig
from sparring.records import store
from sparring.records.files import CONFIG
from sparring.types import Strict

TournamentType = Literal["self_play", "round_robin", "custom", "capped", "swiss", "replicate"]


class TournamentConfig(Strict):
    """Who plays whom. `participants` fill the non-judge seats; `judges` the judge seat."""

    type: TournamentType = Field("self_play", description="how participants are paired (see Tournament types)")
    participants: list[str] = Field(default_factory=list, description="agents that fill the competing seats")
    judges: list[str] = Field(default_factory=list, description="several judges form one panel seat")
    matchups: list[list[str]] = Field(default_factory=list, description="custom: [[a, b], ...]")
    self_pairs: bool = Field(False, description="round_robin/capped/swiss: also play a vs a")
    flip: bool = Field(False, description="also play every episode mirrored (sides / seat order swapped)")
    repeats: int = Field(1, ge=1, description="play every pairing on every instance this many times")
    rounds: int = Field(3, ge=1, description="swiss: number of rounds")
    source_run: str | None = Field(None, description="replicate: run directory whose transcripts are re-judged")

    @model_validator(mode="after")
    def _check(self) -> TournamentConfig:
        if self.type == "custom" and not self.matchups:
            raise ValueError("type 'custom' needs 'matchups' (e.g. [[alice, bob]])")
        if self.type != "custom" and self.matchups:
            raise ValueError(f"'matchups' is only used by type 'custom' (type is {self.type!r})")
        if self.type == "replicate" and not self.source_run:
            raise ValueError("type 'replicate' needs 'source_run' (a run directory)")
        if self.type != "replicate" and self.source_run:
            raise ValueError(f"'source_run' is only used by type 'replicate' (type is {self.type!r})")
        return self


class RunSettings(Strict):
    """Run values given by the caller (the command line, a loop, the bench) that replace the
    config's own: typed fields, not dotted strings. Set before validation, so a bad value is
    reported like the same key in the YAML file."""

    num_iters: int | None = None
    seed: int | None = None
    max_live: int | None = None
    workers: int | str | None = None
    output_dir: str | None = None
    name: str | None = None
    models_file: str | None = None

    def apply(self, raw: dict[str, Any]) -> dict[str, Any]:
        """`raw` (a config mapping, changed in place) with these values set where given."""
        run = {k: v for k, v in self.model_dump(exclude={"models_file"}).items() if v is not None}
        if run:
            raw["run"] = {**(raw["run"] if isinstance(raw.get("run"), dict) else {}), **run}
        if self.models_file is not None:
            raw["models_file"] = self.models_file
        return raw


class RunConfig(Strict):
    seed: int = Field(0, description="the run's seed: every episode's sampling seed derives from it")
    max_live: int = Field(64, ge=1, description="episodes advanced side by side (batch width)")
    output_dir: str | None = Field(None, description="parent of run directories (default $SPARRING_RUNS_DIR or runs/)")
    name: str | None = Field(None, description="fixed run directory name: rerunning resumes it")
    num_iters: int | None = Field(None, ge=1, description="use at most this many instances")
    workers: int | Literal["auto"] = Field(
        1, description="engine processes (auto = one per CPU); for scripted/replay/API models, "
                       "when the engine, not the model, is the bottleneck")
    worker_start: Literal["auto", "fork", "spawn"] = Field(
        "auto", description="how workers start: auto = fork where safe (Linux, no threads, no torch "
                            "imported), else spawn")

    @field_validator("workers")
    @classmethod
    def _workers(cls, v: int | str) -> int | str:
        if isinstance(v, int) and v < 1:
            raise ValueError("workers must be >= 1 or 'auto'")
        return v


class BranchConfig(Strict):
    """Branched rollouts (DPO pairs from continuations): at the target agent's turns, sample `k`
    alternatives and play every continuation to the end, up to `depth` branch points per tree."""

    target: str = Field(description="the agent whose turns branch")
    k: int = Field(2, ge=2, description="alternatives per branch point")
    mode: Literal["half", "full"] = Field("half", description="half: only the target's turns branch; "
                                                              "full: every competing seat's turns branch")
    depth: int = Field(1, ge=1, description="branch points per tree (k**depth leaves)")


class ExperimentConfig(Strict):
    name: str = Field("", description="default: the file stem")
    description: str = Field("", description="one line shown in listings and reports")
    game: str = Field("", description="a registered game (debate, dond, taboo, wordle, textworld_cooking, textarena, ...)")
    game_args: dict[str, Any] = Field(default_factory=dict, description="the game's own settings, checked by the game")
    dataset: DatasetConfig | None = Field(None, description="where the instances come from")
    models_file: str | None = Field(None, description="a models file adding or overriding model names (relative: "
                                                      "beside this file)")
    prompt_files: list[str] = Field(default_factory=list, description="extra prompt-set YAML files")
    agents: dict[str, dict[str, Any]] = Field(default_factory=dict, description="name -> agent settings "
                                              "(AgentConfig, plus the agent kind's own keys)")
    tournament: TournamentConfig = Field(default_factory=TournamentConfig, description="who plays whom")
    run: RunConfig = Field(default_factory=RunConfig, description="seed, batch width, output, workers")
    branch: BranchConfig | None = Field(None, description="branched rollouts for DPO pairs")
    view: Literal["conversation", "rendered"] | None = Field(
        None, description="what a player is shown each turn: conversation = a chat that only grows (each new "
        "event appended; a player's turns extend one another, so training reads the game once), for games that "
        "offer it (every shipped game); rendered = the game's own observation, re-rendered every turn. Default: "
        "conversation where the game offers it and no game_args ask for a re-rendered view (TextWorld's history "
        "window), else rendered")


# Keys that may differ between runs of the same experiment (shards, resumes, merges).
_VOLATILE_RUN_KEYS = ("max_live", "output_dir", "name", "num_iters", "workers", "worker_start")


def identity(config: ExperimentConfig) -> dict[str, Any]:
    """The part of a config that decides what is played (and so what episode ids mean)."""
    data = config.model_dump(mode="json")
    for key in _VOLATILE_RUN_KEYS:
        data["run"].pop(key, None)
    # Paths are machine-specific (shards run on different machines); what they point at is not hashed.
    for key in ("description", "models_file", "prompt_files"):
        data.pop(key, None)
    # A resolved config names its view; a run stored before the conversation became the default names
    # none and was played rendered: both say "rendered" the same way (no key), so such runs still resume
    # and merge, and a conversation-view run never resumes into one.
    if data.get("view") in (None, "rendered"):
        data.pop("view", None)
    return data


def config_hash(config: ExperimentConfig) -> str:
    """Equal hashes => the same experiment: runs can be resumed into each other and merged."""
    return store.config_hash(config, identity)


def open_store(run_dir: str | Path, config: ExperimentConfig, *, create: bool = True,
               redact: store.Redactor | None = None) -> store.RunStore:
    """The run directory of `config`, opened for appending (resume = the same experiment);
    `redact` cleans every line written (e.g. `ModelPool.redact`: the models' API keys)."""
    return store.RunStore(run_dir, config, identity, create=create, redact=redact)


def read_config(run_dir: str | Path) -> ExperimentConfig:
    """The resolved configuration stored in a run directory."""
    from sparring.config_io import load_yaml_model

    path = Path(run_dir) / CONFIG
    if not path.is_file():
        raise ConfigError("not a run directory (no config.yaml)", file=str(path))
    return load_yaml_model(ExperimentConfig, path)
