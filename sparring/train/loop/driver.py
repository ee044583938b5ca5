"""Training loops: play → rows → train → register → evaluate, K times.

`method: dpo` (`scripts/run_iterative_dpo.py`): the current policy (the base model, then adapter
k−1) plays the configured self-play games as branched rollouts (`selfplay.branch`) or with
best-of-N, judged by the configured judge; sibling continuations (values: the mean outcome of each
subtree) or scored candidates become DPO pairs; DPO trains adapter k with the previous policy as
the reference.
`method: sft` (`scripts/run_selfplay_sft.py`, lm-selfplay): the policy plays (self-play or against
a fixed partner); the games that pass the `keep` filter (above average reward, as the paper)
become SFT rows for the policy's seats; SFT trains adapter k (optionally on every iteration's
rows so far, and after a warm start on human games). Either way `ALIAS@k` is registered in the
loop's models file and held-out cross-play of `ALIAS@k` against the base, against `ALIAS@k−1`
and (SFT) against itself gives win rates, Bradley–Terry ratings and the game's own metrics
(judge accuracy; agreement, reward, Pareto-optimal, abort and valid-action rates, dialogue length),
read as typed results from the run's records (in a one-player game each model plays alone and
the game's metrics compare them). Every stage records its completion in `state.json`, so a
killed loop rerun with the same command continues at the stage where it stopped and never trains a
finished iteration again (the games themselves resume inside their run directories). Each stage
also records the part of the config it depends on (`loop_state.py`): after an edit to the config
the rerun stops (exit 2) naming the changed keys, and `--restart-from STAGE` starts over from a
stage on purpose, moving that stage's and every later stage's outputs aside.
The held-out cross-play each iteration plays, and what is kept of it, are `loop_eval.py`.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import yaml

from sparring.config_io import read_yaml
from sparring.errors import SparringError
from sparring.train import distributed
from sparring.train.loop.config import LoopConfig
from sparring.train.loop.evaluation import eval_plan, evaluation_summary, game_seats
from sparring.train.loop.state import STAGES, LoopState


class Loop:
    def __init__(self, config: LoopConfig, file: str, *, console: Any = None):
        from rich.console import Console

        self.config, self.file = config, file
        self.dir = Path(config.output_dir or Path(os.environ.get("SPARRING_RUNS_DIR") or "runs") / config.name)
        self.console = console or Console()
        self.state_path = self.dir / "state.json"
        self.tracker = LoopState(self.state_path, config, file)
        self.state: dict[str, Any] = self.tracker.state

    # -- bookkeeping ---------------------------------------------------------------------------
    def _save(self) -> None:
        self.tracker.save()  # the main process only, under `accelerate launch`

    def _it(self, k: int) -> dict[str, Any]:
        return self.state["iterations"].setdefault(str(k), {"done": []})

    def _stage(self, k: int, stage: str, fn) -> Any:
        it = self._it(k)
        if stage in it["done"]:
            return it.get(stage)
        self.console.print(f"[bold]iteration {k}: {stage}[/bold]")
        self.tracker.start(f"{k}:{stage}")
        it[stage] = distributed.stage(lambda: fn(k), all_ranks=stage == "train", what=f"iteration {k}: {stage}")
        it["done"].append(stage)
        self._save()
        if stage == STAGES[-1] and distributed.is_main():
            self._track(k)
        return it[stage]

    def _track(self, k: int) -> None:
        """Iteration k's held-out and training numbers to the trackers of `train.report_to`
        (step = iteration), beside the trainers' own curves."""
        from sparring.train.loop.report import iteration_metrics
        from sparring.train.tracking import MetricLog

        log = MetricLog(self.config.train.report_to, self.dir, self.config.train.run_name or self.config.name)
        try:
            log.log(iteration_metrics(self._it(k)), step=k)
        finally:
            log.close()

    def stage(self, k: int, stage: str) -> Any:
        """Run one stage of iteration k (once: a finished stage returns its recorded result), for
        callers that drive the stages themselves (the learning suite evaluates on its own)."""
        if stage not in STAGES:
            raise SparringError(f"unknown loop stage {stage!r}; one of {', '.join(STAGES)}")
        return self._stage(k, stage, getattr(self, stage))

    def start(self) -> None:
        """The models file, the warm start (if configured) and ALIAS@0: what `run` does first.
        Under `accelerate launch` the main process writes; every process trains the warm start."""
        self.state = self.tracker.state = distributed.from_main(self.state)
        if distributed.is_main():
            self.dir.mkdir(parents=True, exist_ok=True)
        if distributed.is_main() and not self.models_file.is_file():
            user = read_yaml(self.config.models_file) if self.config.models_file else None
            models = dict((user or {}).get("models") or {})
            models[f"{self.config.alias}@base"] = self._base_entry()
            self._write_models({"models": models})
        if self.config.warm_start and "warm" not in self.state:
            w = self.config.warm_start
            what = ("adapter " + w.adapter if w.adapter else f"SFT on {w.demonstrator}'s games" if w.demonstrator
                    else "SFT on human games")
            self.console.print(f"[bold]warm start: {what}[/bold]")
            self.tracker.start("warm")
            self.state["warm"] = distributed.stage(self.warm, all_ranks=True, what="warm start")
            self._save()
        if "registered0" not in self.state:
            distributed.on_main(lambda: self.register(0), "register ALIAS@0")
            self.state["registered0"] = True
            self._save()

    def policy(self, k: int) -> str:
        """The model alias playing in iteration k: ALIAS@0 is the base model (after its warm
        start, if any); ALIAS@base is the base model itself."""
        return f"{self.config.alias}@{k - 1}"

    def _adapter(self, k: int) -> str | None:
        """The adapter of ALIAS@k (None: the plain base model)."""
        if k == 0:
            return (self.state.get("warm") or {}).get("adapter")
        return self._it(k)["train"]["adapter"]

    @property
    def models_file(self) -> Path:
        return self.dir / "models.yaml"

    # -- stages --------------------------------------------------------------------------------
    def _run(self, data: dict[str, Any], run_name: str) -> Path:
        from sparring.engine.run import RunOptions, run_experiment

        path = self.dir / "configs" / f"{run_name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        result = run_experiment(RunOptions(configuration=str(path), output_dir=str(self.dir / "runs"),
                                           run_name=run_name, quiet=False),
                                console=self.console)
        if result.status != "complete":
            raise SparringError(f"{run_name}: the run ended {result.status}; rerun the loop to resume it")
        from sparring.analysis.report import report_run  # the engine writes no report itself

        report_run(Path(result.run_dir or ""), self.console)
        return Path(result.run_dir or "")

    def _experiment(self, data: dict[str, Any], name: str) -> dict[str, Any]:
        data = copy.deepcopy(data)
        data["name"] = name
        data["models_file"] = str(self.models_file.resolve())
        return data

    def selfplay_with(self, model: str, name: str) -> dict[str, Any]:
        """The self-play experiment (named `name`) with `model` in the policy agent's seat."""
        cfg = self._experiment(self.config.selfplay, name)
        agents = cfg.get("agents") or {}
        if self.config.policy_agent not in agents:
            raise SparringError(f"{self.file}: selfplay has no agent {self.config.policy_agent!r} (policy_agent)")
        agents[self.config.policy_agent]["model"] = model
        return cfg

    def play_experiment(self, k: int) -> dict[str, Any]:
        """The experiment config of iteration k's self-play games."""
        return self.selfplay_with(self.policy(k), f"{self.config.name}-play-{k}")

    def play(self, k: int) -> dict[str, Any]:
        return {"run_dir": str(self._run(self.play_experiment(k), f"play-{k}"))}

    def export(self, k: int) -> dict[str, Any]:
        from sparring.records.reader import iter_records
        from sparring.train.export import ExportFilters, dpo_rows, sft_rows, write_rows
        from sparring.train.export.contrast import hold_back, pair_line, pair_summary

        e = self.config.export
        records = list(iter_records(self._it(k)["play"]["run_dir"]))
        if self.config.method == "dpo":
            rows = dpo_rows(records, ExportFilters(agent=self.config.policy_agent), target=e.target,
                            gamma=e.gamma, min_gap=e.min_gap, rejected=e.rejected,
                            max_similarity=e.max_similarity, seed=e.seed)
            if e.max_pairs is not None:
                rows = sorted(rows, key=lambda r: -r["margin"])[: e.max_pairs]
            diagnostics: dict[str, Any] = dict(pair_summary(rows))
            self.console.print(f"iteration {k} pairs: {pair_line(len(rows), diagnostics)}")
            rows, held = hold_back(rows, e.held_back, seed=e.seed)
            if held:
                diagnostics["heldback"] = len(held)
                diagnostics["heldback_path"] = str(write_rows(held, self.dir / f"iter-{k}" / "heldback"))
            why = ("selfplay needs `branch: {target: <policy agent>}` or the policy agent best_of_n with "
                   "n >= 2, and alternatives that the judge values differently")
        else:
            rows = sft_rows(records, ExportFilters(agent=self.config.policy_agent, keep=e.keep, k=e.k,
                                                   include_aborted=e.include_aborted, require=e.require))
            diagnostics = {}
            why = (f"no game of the policy passed keep={e.keep!r}" + (f" with require={e.require}" if e.require else "")
                   + " (all rewards equal, e.g. no deal at all?)")
        if not rows:
            raise SparringError(f"iteration {k}: self-play gave no training rows ({why})")
        path = write_rows(rows, self.dir / f"iter-{k}" / "data")
        return {"path": str(path), "rows": len(rows), "pairs": len(rows), **diagnostics,
                "episodes": len(records), "instances": sorted({r.instance_id for r in records})}

    def train(self, k: int) -> dict[str, Any]:
        from sparring.train.trainers import read_rows, train

        settings = self.config.train.model_copy(update={"method": self.config.method,
                                                        "adapter": self._adapter(k - 1),
                                                        "run_name": self._run_name(f"iter-{k}"),
                                                        "models_file": self._models_file()})
        rows: Any = self._it(k)["export"]["path"]
        if self.config.method == "sft" and self.config.export.cumulative:
            rows = [r for j in range(1, k + 1) for r in read_rows(self._it(j)["export"]["path"])]
        result = train(rows, settings, self.dir / f"iter-{k}" / "adapter")
        self._stopped(result, f"iteration {k}: train")
        from sparring.train.loop.report import preference_summary

        if summary := preference_summary(result.metrics):
            self.console.print(f"iteration {k} trained: {summary}")
        adapter = str(result.adapter.resolve())
        out: dict[str, Any] = {"adapter": adapter, "rows": result.rows, "dropped": result.dropped,
                               "steps": result.steps, "loss": result.loss, "metrics": result.metrics}
        if self.config.method == "dpo" and self.config.pair_fit and settings.lora is not None:  # LoRA adapters only
            out["fit"] = distributed.on_main(lambda: self._pair_fit(k, adapter, settings), f"iteration {k}: pair fit")
        return out

    def _pair_fit(self, k: int, adapter: str, settings: Any) -> dict[str, dict[str, float]]:
        """The trained adapter against its reference (the adapter it started from) on the pairs it
        trained on and on the held-back ones (`pair_fit.py`)."""
        from sparring.train.pair_fit import fit_adapter, fit_line
        from sparring.train.trainers import read_rows

        ex = self._it(k)["export"]
        sets = {"trained": read_rows(ex["path"]),
                "held back": read_rows(ex["heldback_path"]) if ex.get("heldback_path") else []}
        fit = fit_adapter(settings, adapter, self._adapter(k - 1), sets)
        for name, figures in fit.items():
            self.console.print(f"iteration {k} fit, {fit_line(name + ' pairs', figures)}")
        return fit

    def _base_entry(self) -> dict[str, Any]:
        return base_entry(self.config, self.file)

    def register(self, k: int) -> dict[str, Any]:
        """ALIAS@k in the loop's models file: the base model's entry with adapter k as default."""
        data = read_yaml(self.models_file)
        alias = f"{self.config.alias}@{k}"
        entry = copy.deepcopy(data["models"][f"{self.config.alias}@base"])
        adapter = self._adapter(k)
        if adapter:
            entry["args"].update(adapters={f"iter{k}": adapter}, default_adapter=f"iter{k}")
        data["models"][alias] = entry
        self._write_models(data)
        return {"alias": alias}

    def warm(self) -> dict[str, Any]:
        """ALIAS@0's adapter (`warm_start`, `loop/warm.py`)."""
        from sparring.train.loop.warm import warm_stage

        return warm_stage(self)

    def demonstration_experiment(self) -> dict[str, Any]:
        """The experiment config of the warm start's demonstration games (`loop/warm.py`)."""
        from sparring.train.loop.warm import demonstration_experiment

        return demonstration_experiment(self)

    def _models_file(self) -> str | None:
        """The models file `train.model` is looked up in: the loop's `models_file`, if any."""
        return self.config.train.models_file or self.config.models_file

    def _run_name(self, stage: str) -> str:
        """A training stage's tracker run: the loop's name (or `train.run_name`) and the stage."""
        return f"{self.config.train.run_name or self.config.name}-{stage}"

    def _stopped(self, result: Any, stage: str) -> None:
        """A training stage cut by `train.max_minutes` is not done: stop the loop; the rerun resumes
        that stage from its checkpoint."""
        from sparring.train.checkpoints import TrainingStopped

        if not result.complete:
            raise TrainingStopped(f"{stage} stopped by the time limit after {result.steps} steps; its checkpoint "
                                  f"is kept. Rerun the same command to continue.")

    def _write_models(self, data: dict[str, Any]) -> None:
        tmp = self.models_file.with_suffix(".tmp")
        tmp.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        os.replace(tmp, self.models_file)

    def check_experiment(self, j: int) -> dict[str, Any]:
        """The experiment config of the greedy check's games of ALIAS@j (`loop/check.py`)."""
        from sparring.train.loop.check import check_plan

        return self._experiment(check_plan(self.config, f"{self.config.alias}@{j}"), f"{self.config.name}-check-{j}")

    def check(self, k: int) -> dict[str, Any] | None:
        """The greedy check on training prompts (`check:`, `loop/check.py`)."""
        from sparring.train.loop.check import check_stage

        return check_stage(self, k)

    def eval_experiment(self, k: int, judge: str | None = None) -> dict[str, Any]:
        """The experiment config of iteration k's held-out cross-play (`judge`: one of
        `evaluation.heldout_judges` in place of the training judges)."""
        plan = eval_plan(self.config, k, game_seats(self.config, self.file), judge)
        return self._experiment(plan, f"{self.config.name}-eval-{k}" + (f"-{judge}" if judge else ""))

    def evaluate(self, k: int) -> dict[str, Any]:
        """Held-out cross-play under the training judges, then under each held-out judge."""
        run_dir = self._run(self.eval_experiment(k), f"eval-{k}")
        new, game = f"{self.config.alias}@{k}", self.config.selfplay["game"]
        out = evaluation_summary(run_dir, new, game)
        for judge in self.config.evaluation.heldout_judges:
            held = self._run(self.eval_experiment(k, judge), f"eval-{k}-{judge}")
            out.setdefault("heldout_judges", {})[judge] = evaluation_summary(held, new, game)
        return out

    # -- the loop ------------------------------------------------------------------------------
    def run(self, restart_from: str | None = None) -> Path:
        """Play, export, train, register, check, evaluate each iteration, skipping finished stages.
        `restart_from` ("warm", "K:STAGE" or "K"): discard that stage and every later one first."""
        def prepare() -> None:
            self.dir.mkdir(parents=True, exist_ok=True)
            if restart_from:
                self.restart(restart_from)
            self.tracker.check()

        distributed.on_main(prepare, "checking the loop's state")  # a config change stops every process
        self.start()
        for k in range(1, self.config.iterations + 1):
            for stage in STAGES:
                self._stage(k, stage, getattr(self, stage))
        return distributed.on_main(self.write_report, "the loop report")

    def restart(self, stage: str) -> None:
        """Discard `stage` and every later one: their outputs move to `discarded/<time>/`, their
        state entries and registered aliases go, so the next run redoes them."""
        moved = self.tracker.restart(stage, self.dir, {f"{k}:{s}": self._outputs(k, s)
                                                       for k in self.tracker.iterations() for s in STAGES})
        if self.models_file.is_file():
            data = read_yaml(self.models_file)
            user = read_yaml(self.config.models_file) if self.config.models_file else None
            models = dict((user or {}).get("models") or {})
            models[f"{self.config.alias}@base"] = self._base_entry()
            registered = 0 if self.state.get("registered0") else -1
            for k in self.tracker.iterations():
                if "register" in self._it(k)["done"]:
                    registered = k
            models.update({a: e for a, e in (data.get("models") or {}).items()
                           if a.startswith(f"{self.config.alias}@") and a.split("@")[-1].isdigit()
                           and int(a.split("@")[-1]) <= registered})
            self._write_models({"models": models})
        self.console.print(f"restarting from {stage}" + (f"; moved aside: {', '.join(moved)}" if moved else ""))

    def _outputs(self, k: int, stage: str) -> list[Path]:
        return {"play": [self.dir / "runs" / f"play-{k}", self.dir / "configs" / f"play-{k}.yaml"],
                "export": [self.dir / f"iter-{k}" / "data"], "train": [self.dir / f"iter-{k}" / "adapter"],
                "check": [self.dir / "runs" / f"check-{k}", self.dir / "configs" / f"check-{k}.yaml",
                          *([self.dir / "runs" / f"check-{k - 1}", self.dir / "configs" / f"check-{k - 1}.yaml"]
                            if k == 1 else [])],
                "evaluate": [self.dir / "runs" / f"eval-{k}", self.dir / "configs" / f"eval-{k}.yaml",
                     *[self.dir / d / f"eval-{k}-{j}{x}" for j in self.config.evaluation.heldout_judges
                       for d, x in (("runs", ""), ("configs", ".yaml"))]]
                }.get(stage, [])

    def write_report(self) -> Path:
        from sparring.train.loop.report import loop_report

        return loop_report(self.dir, self.config, self.state)


def base_entry(config: LoopConfig, file: str) -> dict[str, Any]:
    """The base model as a models-file entry (a registry name or a model directory)."""
    from sparring.models.registry import load_model_specs, resolve_name

    model = config.train.model
    if Path(model).expanduser().is_dir():
        return {"backend": "hf", "args": {"model": str(Path(model).expanduser().resolve())}}
    specs = load_model_specs(config.models_file)
    try:
        base = specs[resolve_name(model, specs)]
    except KeyError:
        raise SparringError(f"{file}: train.model {model!r} is neither a model name nor a directory") from None
    return {"backend": base.backend, "args": dict(base.args), "sampling": dict(base.sampling)}
