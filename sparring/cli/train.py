"""`sparring train sft|dpo|kto DATA -o OUT [--config FILE]`, `sparring train loop CONFIG` (iterative
DPO and self-play SFT; also `scripts/run_iterative_dpo.py`, `scripts/run_selfplay_sft.py`) and
`sparring train online CONFIG` (online RL, GRPO or PPO; `train grpo` is the same command, its former
name; `scripts/run_grpo.py`); `scripts/run_sft.py` is `train sft`.

Every command takes `--dry-run` (validate everything, print the plan, load no weights) and
`--max-minutes` (save a checkpoint and stop; the same command resumes). A rerun whose config
differs from the one the output was started with stops with exit 2 naming the changed keys;
`--restart-from STAGE` (loops) or `--restart` (one training run, GRPO) starts over on purpose.
A run stopped by its time limit exits 3."""

from __future__ import annotations

from pathlib import Path

import typer

from sparring.train.loop.state import RESTART_HELP

app = typer.Typer(no_args_is_help=True, help="Train on exported rows (TRL + PEFT) or run a training loop.")

Settings = typer.Option(None, "--config", "-c", help="Training settings YAML (see configs/train/); keys as TrainSettings.")
Model = typer.Option(None, "--model", help="Base model: a models.yaml name or a directory (default smollm2-135m).")
Adapter = typer.Option(None, "--adapter", help="Continue training this LoRA adapter.")
Steps = typer.Option(None, "--max-steps", help="Stop after this many optimizer steps.")
Out = typer.Option(..., "--output", "-o", help="Adapter output directory.")
Minutes = typer.Option(None, "--max-minutes", min=0.01, help="Stop after this many minutes of training, saving a "
                       "checkpoint; rerun the same command to continue from it.")
DryRun = typer.Option(False, "--dry-run", help="Validate the config, data, models and nested experiments and "
                      "print the plan; load no weights.")
Restart = typer.Option(False, "--restart", help="Start over although OUT holds a run made with other settings "
                       "(its files are moved to OUT/discarded/).")
ReportTo = typer.Option(None, "--report-to", help="Experiment tracker (repeatable): tensorboard, wandb, trackio, "
                        "mlflow, ... as transformers supports; overrides the config's report_to.")
EXIT_INCOMPLETE = 3


def _settings(method: str, config: Path | None, model: str | None, adapter: str | None, max_steps: int | None,
              max_minutes: float | None = None, report_to: list[str] | None = None):
    from sparring.config_io import load_yaml_model, validate
    from sparring.train.config import TrainSettings

    base = load_yaml_model(TrainSettings, config) if config else TrainSettings()
    updates = {"method": method, **{k: v for k, v in (("model", model), ("adapter", adapter),
                                                      ("max_steps", max_steps), ("max_minutes", max_minutes),
                                                      ("report_to", report_to))
                                    if v is not None}}
    return validate(TrainSettings, {**base.model_dump(), **updates}, file=str(config) if config else None)


# Settings that may change between a run and its resumption (they do not change what is trained).
RESUMABLE = ("max_minutes", "logging_steps", "save_steps", "save_total_limit", "report_to", "run_name")


def _train(method: str, data: Path, output: Path, config, model, adapter, max_steps, max_minutes=None,
           dry_run: bool = False, restart: bool = False, report_to: list[str] | None = None) -> None:
    from rich.console import Console

    from sparring.train import distributed
    from sparring.train.fingerprint import OutputState, fingerprint
    from sparring.train.trainers import read_rows

    console = Console(soft_wrap=True, quiet=not distributed.is_main())  # one summary under accelerate
    settings = _settings(method, config, model, adapter, max_steps, max_minutes, report_to)
    snapshot = {k: v for k, v in settings.model_dump(mode="json").items() if k not in RESUMABLE}
    snapshot["data"] = {"path": str(Path(data).resolve()), "rows": fingerprint(read_rows(data))}
    state = OutputState(Path(output), snapshot, f"{method} run", "--restart")
    if dry_run:
        from sparring.train.dry_run import print_train_plan, train_plan

        state.check()
        print_train_plan(console, train_plan(data, settings))
        return

    def prepare() -> list[str]:  # one process moves, checks and writes OUT/state.json
        moved = state.restart() if restart else []
        state.check()
        state.start()
        return moved

    moved = distributed.on_main(prepare, "checking the output directory")
    if moved:
        console.print(f"restart: moved {', '.join(moved)} to {output}/discarded/")
    from sparring.train.trainers import train

    result = train(data, settings, output)
    console.print(f"{method.upper()}: {result.rows} rows ({result.dropped} too long, dropped), "
                  f"{result.steps} steps, loss {'n/a' if result.loss is None else f'{result.loss:.4f}'} -> adapter {result.adapter}"
                  + (f" (resumed from {result.resumed_from})" if result.resumed_from else ""))
    if not result.complete:
        console.print(f"[yellow]stopped by the time limit after {result.steps} steps; the checkpoint is in "
                      f"{output}/trainer. Rerun the same command to continue.[/yellow]")
        raise typer.Exit(EXIT_INCOMPLETE)


@app.command("sft")
def sft(data: Path = typer.Argument(..., help="train.jsonl/.parquet or its directory (sparring export sft)"),
        output: Path = Out, config: Path | None = Settings, model: str | None = Model, adapter: str | None = Adapter,
        max_steps: int | None = Steps, max_minutes: float | None = Minutes, dry_run: bool = DryRun,
        restart: bool = Restart, report_to: list[str] | None = ReportTo) -> None:
    """Supervised fine-tuning (assistant-only loss), LoRA by default."""
    _train("sft", data, output, config, model, adapter, max_steps, max_minutes, dry_run, restart, report_to)


@app.command("dpo")
def dpo(data: Path = typer.Argument(..., help="train.jsonl/.parquet or its directory (sparring export dpo)"),
        output: Path = Out, config: Path | None = Settings, model: str | None = Model, adapter: str | None = Adapter,
        max_steps: int | None = Steps, max_minutes: float | None = Minutes, dry_run: bool = DryRun,
        restart: bool = Restart, report_to: list[str] | None = ReportTo) -> None:
    """DPO (TRL loss types, or the soft-preference loss with `dpo: {soft: true}`)."""
    _train("dpo", data, output, config, model, adapter, max_steps, max_minutes, dry_run, restart, report_to)


@app.command("kto")
def kto(data: Path = typer.Argument(..., help="train.jsonl/.parquet or its directory (sparring export kto)"),
        output: Path = Out, config: Path | None = Settings, model: str | None = Model, adapter: str | None = Adapter,
        max_steps: int | None = Steps, max_minutes: float | None = Minutes, dry_run: bool = DryRun,
        restart: bool = Restart, report_to: list[str] | None = ReportTo) -> None:
    """KTO on desirable / undesirable replies."""
    _train("kto", data, output, config, model, adapter, max_steps, max_minutes, dry_run, restart, report_to)


@app.command("loop")
def loop(configuration: str = typer.Argument(..., help="Loop config name (configs/train/NAME.yaml) or path."),
         dry_run: bool = DryRun, max_minutes: float | None = Minutes,
         restart_from: str | None = typer.Option(None, "--restart-from", metavar="STAGE", help=RESTART_HELP),
         report_to: list[str] | None = ReportTo) -> None:
    """Iterative DPO or self-play SFT: self-play, rows, training, ALIAS@k, evaluation; resumable stage by
    stage. --max-minutes bounds each training stage."""
    from rich.console import Console

    from sparring.train import distributed
    from sparring.train.checkpoints import TrainingStopped
    from sparring.train.loop.config import load_loop
    from sparring.train.loop.driver import Loop

    console = Console(soft_wrap=True, quiet=not distributed.is_main())
    config, file = load_loop(configuration)
    train_updates = {k: v for k, v in (("max_minutes", max_minutes), ("report_to", report_to)) if v is not None}
    if train_updates:
        config = config.model_copy(update={"train": config.train.model_copy(update=train_updates)})
    if dry_run:
        from sparring.train.dry_run import loop_plan, print_loop_plan

        if restart_from:
            from sparring.train.loop.state import parse_stage

            parse_stage(restart_from)
            console.print(f"(--restart-from {restart_from} is not applied in a dry run)")
        print_loop_plan(console, loop_plan(config, file))
        return
    try:
        report = Loop(config, file, console=console).run(restart_from=restart_from)
    except TrainingStopped as stopped:
        console.print(f"[yellow]{stopped}[/yellow]")
        raise typer.Exit(EXIT_INCOMPLETE) from None
    console.print(f"loop report: {report}")


@app.command("online")
def online(configuration: str = typer.Argument(..., help="Online RL config name (configs/train/NAME.yaml) or path."),
         dry_run: bool = DryRun, max_minutes: float | None = Minutes, restart: bool = Restart,
         report_to: list[str] | None = ReportTo) -> None:
    """Online RL, GRPO or PPO (`algorithm:`): the learner plays whole games through the engine; the
    outcome and per-step rewards are the reward."""
    from rich.console import Console

    from sparring.train import distributed
    from sparring.train.checkpoints import TrainingStopped
    from sparring.train.online.launch import load_online, run_online

    console = Console(soft_wrap=True, quiet=not distributed.is_main())
    config, file = load_online(configuration)
    updates = {k: v for k, v in (("max_minutes", max_minutes), ("report_to", report_to)) if v is not None}
    if updates:
        config = config.model_copy(update=updates)
    if dry_run:
        from sparring.train.dry_run import grpo_plan, print_grpo_plan

        print_grpo_plan(console, grpo_plan(config, file))
        return
    try:
        console.print(f"{config.algorithm.upper()} report: {run_online(config, file, restart=restart)}")
    except TrainingStopped as stopped:
        console.print(f"[yellow]{stopped}[/yellow]")
        raise typer.Exit(EXIT_INCOMPLETE) from None


app.command("grpo", help="The same as `sparring train online` (its former name).")(online)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="train")


Configuration = typer.Option(None, "--configuration", "-c", help="Config name (configs/train/NAME.yaml) or path.")
ConfigArg = typer.Argument(None, metavar="[CONFIGURATION]", help="The same as --configuration.", show_default=False)


def _script_app(prog: str, help_text: str, grpo_script: bool = False) -> typer.Typer:
    """The command line of a training script: `--configuration X [options]`, the same as `sparring
    train loop|online X [options]`, with the script's own --help. Built without running it (the
    `*_main` functions run it; tests/test_doc_commands.py parses the docs' command lines with it)."""
    from sparring.errors import SparringError

    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

    def name(config: str | None, positional: str | None) -> str:
        if not (config or positional):
            raise SparringError(f"{prog}: give --configuration NAME (configs/train/NAME.yaml) or a YAML path")
        return str(config or positional)

    if grpo_script:
        @app.command(help=help_text)
        def run_grpo_script(positional: str | None = ConfigArg, configuration: str | None = Configuration,
                            dry_run: bool = DryRun, max_minutes: float | None = Minutes,
                            restart: bool = Restart, report_to: list[str] | None = ReportTo) -> None:
            online(name(configuration, positional), dry_run=dry_run, max_minutes=max_minutes, restart=restart,
                 report_to=report_to)
    else:
        @app.command(help=help_text)
        def run_loop_script(positional: str | None = ConfigArg, configuration: str | None = Configuration,
                            dry_run: bool = DryRun, max_minutes: float | None = Minutes,
                            restart_from: str | None = typer.Option(None, "--restart-from", metavar="STAGE",
                                                                    help=RESTART_HELP),
                            report_to: list[str] | None = ReportTo) -> None:
            loop(name(configuration, positional), dry_run=dry_run, max_minutes=max_minutes, restart_from=restart_from,
                 report_to=report_to)

    return app


def _run_script(prog: str, app: typer.Typer) -> None:
    from sparring.cli.common import run_guarded

    run_guarded(lambda: app(prog_name=prog, standalone_mode=True))


def loop_app() -> typer.Typer:
    """scripts/run_iterative_dpo.py's command line (`loop_main` runs it)."""
    return _script_app("run_iterative_dpo.py", "Iterative DPO (method: dpo): self-play as branched rollouts or "
                       "best-of-N -> DPO pairs -> DPO -> ALIAS@k -> held-out cross-play, K times; resumable stage "
                       "by stage.")


def selfplay_app() -> typer.Typer:
    """scripts/run_selfplay_sft.py's command line (`selfplay_main` runs it)."""
    return _script_app("run_selfplay_sft.py", "Self-play SFT (method: sft, lm-selfplay): games of the policy -> the "
                       "games that pass the keep filter -> SFT on its turns -> ALIAS@k -> held-out evaluation, K "
                       "times; resumable stage by stage.")


def grpo_app() -> typer.Typer:
    """scripts/run_grpo.py's command line (`grpo_main` runs it)."""
    return _script_app("run_grpo.py", "Online RL (algorithm: grpo or ppo): the learner plays whole games through "
                       "the engine with its current weights; the outcome (and per-step rewards) are the reward. "
                       "Checkpointed; a rerun resumes.", grpo_script=True)


def loop_main() -> None:
    _run_script("run_iterative_dpo.py", loop_app())


def selfplay_main() -> None:
    _run_script("run_selfplay_sft.py", selfplay_app())


def grpo_main() -> None:
    _run_script("run_grpo.py", grpo_app())
