"""`--dry-run` of the training commands: validate everything a run needs and print its plan
without loading any weights.

A loop's dry run resolves the nested self-play and evaluation experiments exactly as the loop will
write them (models file with the ALIAS@k entries, datasets, prompt sets, agents, schedule), checks
the base model and the warm-start file, and compares the config with a finished run's state.json
(a changed config fails here as it would in the run). GRPO resolves its experiment with the learner
injected; `train sft|dpo|kto` read and check the rows. Row and step counts that depend on games not
yet played are printed as bounds or as "decided by play".
"""

from __future__ import annotations

import copy
import math
import tempfile
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

from sparring.config_io import read_yaml
from sparring.errors import SparringError
from sparring.train.config import TrainSettings


def check_base(model: str, models_file: str | None = None) -> None:
    """The base model is a model directory or an `hf` spec of the registry (its files are not read:
    the bundled model is converted on first real use, not by a dry run)."""
    from sparring.train.policy import base_spec

    base_spec(model, models_file)


def tuning_plan(settings: Any, method: str) -> dict[str, Any]:
    """The trainer settings a run will use, resolved and checked (optimizer, schedule, trackers,
    LoRA, the escape hatch), as `--dry-run` prints them."""
    from sparring.train.arguments import check_settings, warmup_arg

    soft = method == "dpo" and settings.dpo.soft if isinstance(settings, TrainSettings) else False
    check_settings(settings, method, soft)
    lora = getattr(settings, "lora", None)
    plan: dict[str, Any] = {
        "optim": settings.optim, "weight_decay": settings.weight_decay, "lr_scheduler_type": settings.lr_scheduler_type,
        **warmup_arg(settings.warmup_steps), "max_grad_norm": settings.max_grad_norm,
        "report_to": ", ".join(settings.report_to) or "none",
        "lora": (f"r={lora.r} alpha={lora.alpha} dropout={lora.dropout} bias={lora.bias} target={lora.target_modules}"
                 + (f" modules_to_save={lora.modules_to_save}" if lora.modules_to_save else "")) if lora
        else "none (full fine-tuning, or the given adapter is trained further)",
        "quantization": getattr(settings, "quantization", None) or "none"}
    if settings.trainer_args:
        plan["trainer_args"] = settings.trainer_args
    return plan


def print_tuning(console: Console, plan: dict[str, Any]) -> None:
    console.print("trainer settings: " + "; ".join(f"{k} {v}" for k, v in plan.items()), markup=False)


def steps_for(rows: int | None, settings: TrainSettings) -> str:
    """Optimizer steps of a run over `rows` rows (None: not known before playing)."""
    if settings.max_steps > 0:
        return str(settings.max_steps) + (f" (max_steps; {rows} rows)" if rows is not None else " (max_steps)")
    if rows is None:
        return f"ceil(rows / {settings.batch_size * settings.gradient_accumulation}) x {settings.epochs:g} epoch(s)"
    return str(math.ceil(math.ceil(rows / (settings.batch_size * settings.gradient_accumulation)) * settings.epochs))


def _experiment_plan(data: dict[str, Any], tmp: Path, name: str) -> dict[str, Any]:
    """Resolve an experiment dict as `sparring run --dry-run` does (no weights) and describe it."""
    from sparring.engine.plan import RunOptions, describe, prepare

    path = tmp / "configs" / f"{name}.yaml"  # where the loop writes it: runs/NAME/configs/
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return describe(prepare(RunOptions(configuration=str(path), dry_run=True, output_dir=str(tmp / "runs"))))


def loop_plan(config: Any, file: str) -> dict[str, Any]:
    """Validate a loop config and every nested spec; the plan per iteration."""
    from sparring.train.loop.driver import Loop, base_entry

    loop = Loop(config, file)
    loop.tracker.check(persist=False)
    base = base_entry(config, file)
    check_base(config.train.model, config.train.models_file or config.models_file)
    plan: dict[str, Any] = {"name": config.name, "file": file, "method": config.method, "output_dir": str(loop.dir),
                            "iterations": config.iterations, "alias": config.alias,
                            "done": loop.tracker.started()}
    if config.warm_start and config.warm_start.adapter is not None:
        from sparring.train.policy import check_adapter

        check_adapter(config.warm_start.adapter, config.train.model, config.train.models_file or config.models_file)
        plan["warm"] = {"adapter": config.warm_start.adapter, "rows": 0, "steps": 0}
    elif config.warm_start and config.warm_start.file is not None:
        from sparring.train.export.human import human_sft_rows

        w = config.warm_start
        if not Path(w.file).expanduser().is_file():
            raise SparringError(f"{file}: warm_start.file {w.file!r} does not exist")
        rows = len(human_sft_rows(w.human, w.file, split=w.split, limit=w.limit))
        plan["warm"] = {"rows": rows, "steps": steps_for(rows, w.settings(config.train))}
    elif config.warm_start and config.warm_start.demonstrator is not None:
        plan["warm"] = {"demonstrator": config.warm_start.demonstrator,
                        "steps": steps_for(None, config.warm_start.settings(config.train))}
    with tempfile.TemporaryDirectory(prefix="sparring-dry-run-") as tmp_name:
        tmp = Path(tmp_name)
        user = read_yaml(config.models_file) if config.models_file else None
        models = dict((user or {}).get("models") or {})
        models.update({f"{config.alias}@{k}": copy.deepcopy(base) for k in ["base", *range(config.iterations + 1)]})
        (tmp / "models.yaml").write_text(yaml.safe_dump({"models": models}), encoding="utf-8")
        loop.dir = tmp  # the nested configs point at the temporary models file
        play = _experiment_plan(loop.play_experiment(1), tmp, "play")
        if config.warm_start and config.warm_start.demonstrator is not None:
            plan["warm"]["play"] = _experiment_plan(loop.demonstration_experiment(), tmp, "demonstrations")
        evaluation = _experiment_plan(loop.eval_experiment(config.iterations), tmp, "eval")
        if config.check is not None:
            plan["check"] = _experiment_plan(loop.check_experiment(1), tmp, "check")
    e, t = config.export, config.train
    if config.method == "dpo":
        rows_bound = e.max_pairs
        rows_text = (f"<= {e.max_pairs} pairs (max_pairs)" if e.max_pairs
                     else "one pair per branch or best-of-N sibling pair")
    else:
        rows_bound = None
        rows_text = (f"the policy's turns in the games that pass keep={e.keep!r}"
                     + (" (cumulative)" if e.cumulative else ""))
    if config.selfplay.get("branch"):
        b = config.selfplay["branch"]
        plan["branch"] = f"k={b.get('k')} branches at depth {b.get('depth')}"
    plan.update(play=play, evaluation=evaluation, rows=rows_text,
                steps=("<= " + steps_for(rows_bound, t)) if rows_bound else steps_for(None, t),
                train=(f"{t.model}, lr {t.learning_rate:g}, " + (f"LoRA r={t.lora.r}" if t.lora else "full fine-tuning")
                       + f", batch {t.batch_size} x {t.gradient_accumulation}, max_length {t.max_length}"),
                tuning=tuning_plan(t.model_copy(update={"method": config.method}), config.method))
    return plan


def print_loop_plan(console: Console, plan: dict[str, Any]) -> None:
    console.print(f"[bold]loop[/bold] {plan['name']}  ({plan['file']}); method {plan['method']}; "
                  f"output {plan['output_dir']}")
    if plan["done"]:
        console.print(f"already started: {', '.join(plan['done'])} (config unchanged; the run continues)")
    if "warm" in plan and "adapter" in plan["warm"]:
        console.print(f"warm start: the adapter {plan['warm']['adapter']}")
    elif "warm" in plan and "demonstrator" in plan["warm"]:
        demos = plan["warm"]["play"]
        console.print(f"warm start: SFT on {demos['schedule']['episodes']} game(s) of the demonstrator "
                      f"{plan['warm']['demonstrator']} on {demos['instances']} instance(s), {plan['warm']['steps']} step(s)")
    elif "warm" in plan:
        console.print(f"warm start: {plan['warm']['rows']} human SFT rows, {plan['warm']['steps']} step(s)")
    table = Table(title=f"{plan['iterations']} iteration(s), each (nothing loaded)", show_header=True)
    for col in ("stage", "plan"):
        table.add_column(col)
    play, ev = plan["play"], plan["evaluation"]
    branch = plan.get("branch")
    table.add_row("play", f"{play['schedule']['episodes']} game(s)" + (f" (each a tree of {branch})" if branch else "")
                  + f" of {play['game']} on {play['instances']} "
                  f"instance(s) ({play['dataset']}); {', '.join(play['schedule']['matchups'])}")
    table.add_row("export", str(plan["rows"]))
    table.add_row("train", f"{plan['steps']} step(s); {plan['train']}")
    table.add_row("register", f"{plan['alias']}@K in {plan['output_dir']}/models.yaml")
    if check := plan.get("check"):
        table.add_row("check", f"{check['schedule']['episodes']} greedy game(s) of the new and of the previous policy "
                      f"on {check['instances']} training instance(s)")
    table.add_row("evaluate", f"{ev['schedule']['episodes']} game(s) on {ev['instances']} held-out instance(s) "
                  f"({ev['dataset']}); {', '.join(ev['schedule']['matchups'])} (last iteration)")
    console.print(table)
    print_tuning(console, plan["tuning"])


def grpo_plan(config: Any, file: str) -> dict[str, Any]:
    """Validate a GRPO config (experiment, learner, base model) and its plan; no weights."""
    from sparring.engine.play import Arena
    from sparring.models.scripted import ScriptedModel
    from sparring.train.online.launch import check_config, state_for
    from sparring.train.online.learner import experiment_models_file
    from sparring.train.online.rollout import LEARNER

    check_config(config, file)
    check_base(config.model, experiment_models_file(config, file))
    if config.adapter:
        from sparring.train.policy import check_adapter

        check_adapter(config.adapter, config.model, experiment_models_file(config, file))
    state_for(config, file).check()
    base_dir = Path(file).parent if Path(file).is_file() else Path.cwd()
    arena = Arena.from_config({"name": config.name, **config.experiment}, models={LEARNER: ScriptedModel(LEARNER)},
                              base_dir=base_dir)
    try:
        instances = len(arena.instances)
        players = len(arena.exp.seat_players)
    finally:
        arena.close()
    if not instances:
        raise SparringError(f"{file}: the experiment's dataset has no instances")
    bad = [s for s in config.seats if s >= players]
    if bad:
        raise SparringError(f"{file}: seats {bad} do not exist; the game has {players} seat(s) (0-based)")
    per_step = config.prompts_per_step * config.num_generations
    return {"name": config.name, "file": file, "game": config.experiment.get("game"), "instances": instances,
            "prompts": instances * len(config.seats), "steps": config.max_steps, "games_per_step": per_step,
            "games": per_step * config.max_steps, "model": config.model, "learning_rate": config.learning_rate,
            "adapter": config.adapter, "tuning": tuning_plan(config, "grpo"), "algorithm": config.algorithm,
            "credit": "value head + GAE over the learner's turns" if config.algorithm == "ppo" else config.credit}


def print_grpo_plan(console: Console, plan: dict[str, Any]) -> None:
    start = f" from adapter {plan['adapter']}" if plan.get("adapter") else ""
    console.print(f"[bold]{plan['algorithm'].upper()}[/bold] {plan['name']}  ({plan['file']}); game {plan['game']}; "
                  f"learner {plan['model']}{start}; credit: {plan['credit']}")
    console.print(f"{plan['prompts']} prompt(s) ({plan['instances']} training instance(s) x seats); "
                  f"{plan['steps']} step(s) x {plan['games_per_step']} game(s) = {plan['games']} game(s); "
                  f"lr {plan['learning_rate']:g}; nothing loaded")
    print_tuning(console, plan["tuning"])


ROW_COLUMNS = {"sft": ("messages",), "dpo": ("prompt", "chosen", "rejected"), "kto": ("prompt", "completion", "label")}


def train_plan(data: Any, settings: TrainSettings) -> dict[str, Any]:
    """Validate rows, model and adapter of `sparring train sft|dpo|kto`; the plan; no weights."""
    from sparring.train.trainers import read_rows

    rows = read_rows(data)
    need = ROW_COLUMNS[settings.method]
    for i, row in enumerate(rows):
        missing = [c for c in need if c not in row]
        if missing:
            raise SparringError(f"{data}: row {i + 1} has no {', '.join(missing)} (a {settings.method} row needs "
                                f"{', '.join(need)}; export it with `sparring export {settings.method}`)")
    check_base(settings.model, settings.models_file)
    if settings.adapter:
        from sparring.train.policy import check_adapter

        check_adapter(settings.adapter, settings.model, settings.models_file)
    return {"method": settings.method, "rows": len(rows), "steps": steps_for(len(rows), settings),
            "model": settings.model, "learning_rate": settings.learning_rate, "max_length": settings.max_length,
            "tuning": tuning_plan(settings, settings.method)}


def print_train_plan(console: Console, plan: dict[str, Any]) -> None:
    console.print(f"[bold]{plan['method'].upper()}[/bold] on {plan['rows']} row(s) (before dropping rows longer "
                  f"than {plan['max_length']} tokens): {plan['steps']} step(s); model {plan['model']}, "
                  f"lr {plan['learning_rate']:g}; nothing loaded")
    print_tuning(console, plan["tuning"])
