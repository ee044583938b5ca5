"""What every experiment of the suite shares: the output folder, the model under training (the
bundled model, or a tiny random one for `--suite quick`), the suite's models file where trained
adapters are registered as `MODEL@STAGE` specs, and a `play` helper that runs an ordinary
experiment config through the engine and returns its records and wall time."""

from __future__ import annotations

import copy
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from sparring.errors import SparringError

# from the shipped scripted models file, as users get them: the deterministic debate judges
# (sparring/games/debate/scripted_judge.py), the quoting debater of the debate warm start and the
# Deal or No Deal partner GRPO trains against (sparring/games/negotiation/partner.py)
SHIPPED_SCRIPTED = ("quote-judge", "evidence-judge", "proof-judge", "debate-demonstrator", "fair-negotiator")
TEXTWORLD_GOLD = {"backend": "scripted", "args": {
    "record_requests": False, "mode": "callable", "function": "sparring.games.textworld_cooking.gold:gold_command"},
    "sampling": {"max_new_tokens": 16}}


def shipped_scripted() -> dict[str, Any]:
    """The `SHIPPED_SCRIPTED` entries of `configs/experiments/models/scripted.yaml`."""
    from importlib import resources

    text = (resources.files("sparring") / "configs" / "experiments" / "models" / "scripted.yaml").read_text("utf-8")
    models = yaml.safe_load(text)["models"]
    return {name: models[name] for name in SHIPPED_SCRIPTED}


class Played(NamedTuple):
    """One run of an experiment config: its records and where its wall time went."""

    records: list[Any]
    seconds: float   # the whole call: loading the models, playing, storing
    run_dir: Path
    load_s: float    # loading the models (and resolving the experiment)
    play_s: float    # playing the games, after loading
    stored: int = 0  # episodes an earlier session had played and stored (a resumed run skips them)

    def walls(self, stage: str = "heldout") -> dict[str, float]:
        """`load_<stage>` and `play_<stage>` (everything after loading) seconds, for a Stage."""
        return {f"load_{stage}": self.load_s, f"play_{stage}": self.seconds - self.load_s}


@dataclass
class Context:
    out: Path
    size: str                    # quick | full
    model: str                   # training base: a registry name or a model directory
    label: str                   # its name in the suite's models file (adapters: LABEL@STAGE)
    flops: float = 0.0           # this machine's fp32 matmul FLOP/s (the training ceiling)
    console: Any = None
    adapters: dict[str, str] = field(default_factory=dict)  # stage alias -> adapter dir
    data: dict[str, str] = field(default_factory=dict)  # data file name (datafiles.CATALOG) -> path given
    on_progress: Any = None      # called with an unfinished Experiment after each stage

    def progress(self, exp: Any) -> None:
        """Write what an experiment has measured so far (a killed suite keeps finished stages)."""
        if self.on_progress is not None:
            self.on_progress(exp)

    @property
    def models_file(self) -> Path:
        return self.out / "models.yaml"

    def base_entry(self) -> dict[str, Any]:
        from sparring.models.registry import load_model_specs, resolve_name

        if Path(self.model).expanduser().is_dir():
            return {"backend": "hf", "args": {"model": str(Path(self.model).expanduser().resolve())}}
        specs = load_model_specs()
        spec = specs[resolve_name(self.model, specs)]
        args = dict(spec.args)
        if spec.backend == "hf":
            # TextWorld's 40 live games keep histories of up to ~5k tokens: ~9.6 GB of fp32 states for
            # the bundled model (46 KB a token). A cache smaller than the live set thrashes: LRU evicts
            # each game's prefix before its next turn, and every turn re-reads whole histories
            args.setdefault("prefix_cache_mb", 11264)
        return {"backend": spec.backend, "args": args, "sampling": dict(spec.sampling)}

    def write_models(self) -> None:
        """The suite's models file: the base model, the scripted helpers, every registered adapter."""
        models: dict[str, Any] = {self.label: self.base_entry(), **shipped_scripted(),
                                  "textworld-gold": TEXTWORLD_GOLD}
        for alias, adapter in self.adapters.items():
            entry = copy.deepcopy(models[self.label])
            entry["args"].update(adapters={"trained": adapter}, default_adapter="trained")
            models[alias] = entry
        self.out.mkdir(parents=True, exist_ok=True)
        tmp = self.models_file.with_suffix(".tmp")
        tmp.write_text(yaml.safe_dump({"models": models}, sort_keys=False), encoding="utf-8")
        os.replace(tmp, self.models_file)

    def load_adapters(self) -> None:
        """The `LABEL@STAGE` adapters an earlier run of the suite registered in OUT/models.yaml."""
        from sparring.config_io import read_yaml

        if not self.models_file.is_file():
            return
        for alias, entry in ((read_yaml(self.models_file) or {}).get("models") or {}).items():
            adapter = ((entry or {}).get("args") or {}).get("adapters", {}).get("trained")
            if alias.startswith(f"{self.label}@") and adapter and Path(adapter).is_dir():
                self.adapters[alias] = adapter

    def registered(self, stage: str, by: str, needed_by: str, role: str = "starts from") -> tuple[str, str]:
        """(`LABEL@STAGE`, its adapter), registered by the experiment `by` in this output; else a
        clear error naming the run to make first (`needed_by` is the experiment asking)."""
        from sparring.errors import SparringError

        alias = f"{self.label}@{stage}"
        if alias not in self.adapters:
            raise SparringError(f"{needed_by} {role} {alias}, the adapter {by} registers: run {by} first into the "
                                f"same --output (e.g. --only {by},{needed_by})")
        return alias, self.adapters[alias]

    def register(self, stage: str, adapter: Path | str) -> str:
        """`LABEL@STAGE` in the suite's models file: the base model with this adapter as default."""
        alias = f"{self.label}@{stage}"
        self.adapters[alias] = str(Path(adapter).resolve())
        self.write_models()
        return alias

    def batch_size(self, max_live: int) -> int:
        """The batch the engine can give the base model: its `max_batch_size` (the hf backend's
        default 16), at most the games in flight."""
        return min(int(self.base_entry()["args"].get("max_batch_size") or 16), max_live)

    def play(self, config: dict[str, Any], name: str) -> Played:
        """Run one experiment config (its `models_file` = the suite's)."""
        from sparring.engine.run import RunOptions, run_experiment
        from sparring.records.reader import iter_records

        data = {**copy.deepcopy(config), "name": name, "models_file": str(self.models_file.resolve())}
        path = self.out / "configs" / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        start = time.perf_counter()
        result = run_experiment(RunOptions(configuration=str(path), output_dir=str(self.out / "runs"),
                                           run_name=name, quiet=self.size == "quick"),
                                  console=self.console)  # full: a progress line every 30 s in the log
        seconds = time.perf_counter() - start
        if result.status != "complete":
            raise SparringError(f"{name}: the run ended {result.status} (see {result.run_dir})")
        run_dir = Path(result.run_dir or "")
        load_s = float(result.summary.get("load_s") or 0.0)
        stored = int(result.summary.get("skipped") or 0)
        if stored and self.console is not None:
            self.console.print(f"{name}: {stored} episode(s) were stored by an earlier session and not played again; "
                               "this stage's wall time covers the others only")
        return Played(list(iter_records(run_dir)), seconds, run_dir, load_s,
                      float(result.summary.get("wall_s") or seconds - load_s), stored)
