"""`sparring train sft|dpo|kto DATA -o OUT [--config FILE]` and `sparring train loop CONFIG`
(the iterative DPO loop; also `scripts/run_iterative_dpo.py` and `scripts/run_sft.py`)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

app = typer.Typer(no_args_is_help=True, help="Train on exported rows (TRL + PEFT) or run a training loop.")

Settings = typer.Option(None, "--config", "-c", help="Training settings YAML (see configs/train/); keys as TrainSettings.")
Model = typer.Option(None, "--model", help="Base model: a models.yaml name or a directory (default smollm2-135m).")
Adapter = typer.Option(None, "--adapter", help="Continue training this LoRA adapter.")
Steps = typer.Option(None, "--max-steps", help="Stop after this many optimizer steps.")
Out = typer.Option(..., "--output", "-o", help="Adapter output directory.")


def _settings(method: str, config: Path | None, model: str | None, adapter: str | None, max_steps: int | None):
    from sparring.config_io import load_yaml_model, validate
    from sparring.train.config import TrainSettings

    base = load_yaml_model(TrainSettings, config) if config else TrainSettings()
    updates = {"method": method, **{k: v for k, v in (("model", model), ("adapter", adapter),
                                                      ("max_steps", max_steps)) if v is not None}}
    return validate(TrainSettings, {**base.model_dump(), **updates}, file=str(config) if config else None)


def _train(method: str, data: Path, output: Path, config, model, adapter, max_steps) -> None:
    from rich.console import Console

    from sparring.train import distributed
    from sparring.train.trainers import train

    result = train(data, _settings(method, config, model, adapter, max_steps), output)
    if distributed.is_main():  # under `accelerate launch`: one summary, not one per process
        Console(soft_wrap=True).print(f"{method.upper()}: {result.rows} rows ({result.dropped} too long, dropped), "
                                      f"{result.steps} steps, loss {result.loss:.4f} -> adapter {result.adapter}")


@app.command("sft")
def sft(data: Path = typer.Argument(..., help="train.jsonl/.parquet or its directory (sparring export sft)"),
        output: Path = Out, config: Path | None = Settings, model: str | None = Model, adapter: str | None = Adapter,
        max_steps: int | None = Steps) -> None:
    """Supervised fine-tuning (assistant-only loss), LoRA by default."""
    _train("sft", data, output, config, model, adapter, max_steps)


@app.command("dpo")
def dpo(data: Path = typer.Argument(..., help="train.jsonl/.parquet or its directory (sparring export dpo)"),
        output: Path = Out, config: Path | None = Settings, model: str | None = Model, adapter: str | None = Adapter,
        max_steps: int | None = Steps) -> None:
    """DPO (TRL loss types, or the soft-preference loss with `dpo: {soft: true}`)."""
    _train("dpo", data, output, config, model, adapter, max_steps)


@app.command("kto")
def kto(data: Path = typer.Argument(..., help="train.jsonl/.parquet or its directory (sparring export kto)"),
        output: Path = Out, config: Path | None = Settings, model: str | None = Model, adapter: str | None = Adapter,
        max_steps: int | None = Steps) -> None:
    """KTO on desirable / undesirable replies."""
    _train("kto", data, output, config, model, adapter, max_steps)


@app.command("loop")
def loop(configuration: str = typer.Argument(..., help="Loop config name (configs/train/NAME.yaml) or path.")) -> None:
    """Iterative DPO: self-play, pairs, DPO, ALIAS@k, evaluation; resumable stage by stage."""
    from rich.console import Console

    from sparring.train import distributed
    from sparring.train.loop import Loop, load_loop

    config, file = load_loop(configuration)
    report = Loop(config, file).run()
    if distributed.is_main():
        Console(soft_wrap=True).print(f"loop report: {report}")


@app.command("grpo")
def grpo(configuration: str = typer.Argument(..., help="GRPO config name (configs/train/NAME.yaml) or path.")) -> None:
    """Online GRPO: the learner plays whole games through the engine; the outcome is the reward."""
    from rich.console import Console

    from sparring.train import distributed
    from sparring.train.grpo.trainer import load_grpo, run_grpo

    config, file = load_grpo(configuration)
    report = run_grpo(config, file)
    if distributed.is_main():
        Console(soft_wrap=True).print(f"GRPO report: {report}")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="train")


def _script(command: str, prog: str) -> None:
    """Body of the training scripts: `--configuration X` -> `sparring train <command> X`."""
    from sparring.cli import main

    args = sys.argv[1:]
    if args and args[0] in ("--configuration", "-c"):
        args = args[1:]
    elif args and args[0].startswith("--configuration="):
        args = [args[0].split("=", 1)[1], *args[1:]]
    main(["train", command, *args])


def loop_main() -> None:
    _script("loop", "run_iterative_dpo.py")


def grpo_main() -> None:
    _script("grpo", "run_grpo.py")
