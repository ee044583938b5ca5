"""`sparring bench`: play a versioned suite of games with each model, score it clembench-style.

Every (model, suite entry) is an ordinary run built through the engine: the entry's experiment
config is written to `OUTPUT/configs/MODEL/ENTRY.yaml` and played by `run_experiment` into
`OUTPUT/runs/MODEL/ENTRY/` (fixed names, so rerunning the same command resumes; each run keeps
its own report). Only the episodes the current command schedules are scored, so a quick
`--instances 2` pass and a full pass can share run directories. Scores (see
`sparring.evaluation.clemscore`) go to the console and to `OUTPUT/bench.json` and `OUTPUT/bench.md`.
A suite with a `statscore:` block then runs its static tasks on each model through lm-eval
(`sparring.evaluation.bench_static`): the statscore beside the clemscore, as Playpen reports them.
`--adapter DIR` benchmarks every model with that LoRA adapter (`bench_adapter`).

One model pool serves every run of a model under test, so it is loaded once for the whole suite
(and closed before the next model's runs).
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from sparring.errors import SparringError, UnknownNameError, one_line
from sparring.evaluation.bench_static import print_static, run_static, static_markdown
from sparring.evaluation.clemscore import clemscore, episode_quality, fmt, game_score, has_quality
from sparring.evaluation.suite import Suite, experiment_config, load_suite, select_games, slug
from sparring.stable_json import json_safe

BENCH_JSON, BENCH_MD = "bench.json", "bench.md"


@dataclass
class BenchOptions:
    models: list[str]
    suite: str = "suite"
    games: list[str] | None = None
    instances: int | None = None
    partner: str | None = None
    output_dir: str | None = None
    models_file: str | None = None
    quiet: bool = False
    report: bool = True
    seed: int = 0  # of the bootstrap
    dry_run: bool = False
    adapter: str | None = None  # a LoRA adapter every model plays with (games and statscore)
    statscore: bool = True  # run the suite's static tasks (lm-eval), if it has any
    static_limit: int | None = None  # at most N documents per static task


@dataclass
class BenchResult:
    data: dict[str, Any]
    output_dir: Path
    status: str  # complete | incomplete | interrupted
    files: list[Path] = field(default_factory=list)


def _resolve_models(opts: BenchOptions) -> None:
    """Fail at once (exit 2) on a model name that no models file knows."""
    from sparring.models.registry import load_model_specs, resolve_name

    specs = load_model_specs(opts.models_file)
    for name in [*opts.models, *([opts.partner] if opts.partner else [])]:
        try:
            resolve_name(name, specs)
        except UnknownNameError as e:
            where = f"the shipped models.yaml{' and ' + opts.models_file if opts.models_file else ''}"
            raise SparringError(f"{e} (models come from {where}; see `sparring models list`)") from None


def _unregistered(suite: Suite, keys: list[str]) -> dict[str, str]:
    """Entries whose game this installation does not have: entry -> one-line reason."""
    import importlib.util

    from sparring.gameapi.game import GAMES

    out = {}
    for key in keys:
        try:
            GAMES.get(suite.games[key].game)
        except UnknownNameError:
            out[key] = f"game {suite.games[key].game!r} is not registered in this installation; skipped"
            continue
        missing = [m for m in suite.games[key].requires if importlib.util.find_spec(m) is None]
        if missing:
            out[key] = f"needs {', '.join(missing)} (pip install 'sparring[{missing[0]}]'); skipped"
    return out


def run_bench(opts: BenchOptions, console: Console | None = None) -> BenchResult:
    """Play the suite with every model; write bench.json / bench.md; print the tables."""
    from sparring.engine.run import RunOptions, run_experiment
    from sparring.models.pool import ModelPool
    from sparring.models.registry import load_model_specs
    from sparring.records.store import runs_root

    console = console or Console()
    if not opts.models:
        raise SparringError("give at least one model to benchmark")
    suite, suite_path = load_suite(opts.suite)
    keys = select_games(suite, opts.games)
    _resolve_models(opts)
    out = (Path(opts.output_dir).expanduser() if opts.output_dir
           else runs_root() / slug(f"bench-{suite.name}-v{suite.version}"))
    if opts.adapter is not None:
        from sparring.evaluation.bench_adapter import adapted_models

        names, models_file = adapted_models(opts.models, opts.adapter, opts.models_file, out)
        opts = dataclasses.replace(opts, models=names, models_file=models_file)
        console.print(f"with adapter {opts.adapter}: {', '.join(names)} (defined in {models_file})")
    skipped = _unregistered(suite, keys)
    for key, why in skipped.items():
        console.print(f"[yellow]{escape(f'{key}: {why}')}[/yellow]")  # keeps `sparring[extra]` visible
    games: dict[str, dict[str, Any]] = {
        key: {"game": suite.games[key].game, "status": "skipped" if key in skipped else "ok",
              "note": skipped.get(key, ""), "models": {}} for key in keys}
    jobs = []
    for model in opts.models:
        for key in (k for k in keys if k not in skipped):
            cfg = experiment_config(suite, suite_path, key, model, opts.partner, instances=opts.instances,
                                    models_file=opts.models_file)
            cfg_path = out / "configs" / slug(model) / f"{key}.yaml"
            cfg_path.parent.mkdir(parents=True, exist_ok=True)
            cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True), encoding="utf-8")
            jobs.append((model, key, RunOptions(configuration=str(cfg_path), run_name=key,
                                                output_dir=str(out / "runs" / slug(model)),
                                                quiet=opts.quiet)))
    if opts.dry_run:
        if suite.statscore is not None and opts.statscore:
            console.print(f"then the statscore: {', '.join(suite.statscore.tasks)} (lm-eval) on each model")
        return _dry_run(console, jobs, out)
    qualities: dict[str, dict[str, list[float | None]]] = {m: {} for m in opts.models}
    status = "complete"
    specs = load_model_specs(opts.models_file)
    pools: dict[str, Any] = {}
    try:
        for model, key, ropts in jobs:
            if model not in pools:  # one pool per model under test: loaded once, freed before the next
                for other in pools.values():
                    other.close()
                pools = {model: ModelPool(specs)}
            if not opts.quiet:
                console.rule(f"{model} · {key}")
            try:
                row, qs, run_status = _play(ropts, run_experiment, pools[model], console, opts.seed, opts.report)
            except (SparringError, ValidationError) as e:
                console.print(f"[red]{model} · {key}: {one_line(e)}[/red]")
                games[key]["models"][model] = {"status": "error", "error": one_line(e)}
                status = "incomplete"
                continue
            games[key]["models"][model] = row
            qualities[model][key] = qs
            if row.pop("unscored"):
                games[key]["note"] = (f"game {suite.games[key].game!r} reports no quality_score and the bench has "
                                      "no quality function for it: its episodes count as not played")
            if run_status == "interrupted":
                status = "interrupted"
                break
            if run_status != "complete":
                status = "incomplete"
    finally:
        for pool in pools.values():
            pool.close()
    data = _summary(suite, suite_path, opts, games, qualities, status)
    if status != "interrupted":
        try:
            static = run_static(suite, suite_path, opts.models, specs, out, enabled=opts.statscore,
                                limit=opts.static_limit, seed=opts.seed, console=console)
        except KeyboardInterrupt:  # the games are scored: write them, say the statscore was cut short
            console.print("[yellow]statscore interrupted[/yellow]")
            static, status = {"status": "skipped", "note": "statscore interrupted", "tasks": {}, "models": {}}, "interrupted"
            data["status"] = status
        data["statscore"] = json_safe(static)
        if static and static["status"] == "incomplete" and status == "complete":
            data["status"] = status = "incomplete"
    files = write_bench(out, data)
    print_bench(console, data)
    for f in files:
        console.print(f"bench: {f}")
    return BenchResult(data=data, output_dir=out, status=status, files=files)


def _play(ropts: Any, run_experiment: Any, pool: Any, console: Console,
          seed: int, report: bool = True) -> tuple[dict[str, Any], list[float | None], str]:
    """One (model, entry) run; the scores of exactly the episodes it schedules."""
    from sparring.engine.plan import prepare
    from sparring.records.reader import iter_records

    plan = prepare(ropts)
    ids = {j.id for j in plan.schedule.jobs(1, {})}
    result = run_experiment(ropts, console=console, pool=pool)
    if report and result.status != "interrupted" and result.run_dir is not None:
        from sparring.analysis.report import report_run

        report_run(result.run_dir, console)
    run_dir = result.run_dir or plan.run_dir
    records = sorted((r for r in iter_records(run_dir, transcripts=False) if r.id in ids), key=lambda r: r.id)
    failed = sum(1 for r in iter_records(run_dir, failures=True, transcripts=False) if r.id in ids)
    qs = [episode_quality(r) for r in records]
    row = game_score(qs, failed=failed, seed=seed).to_dict()
    unscored = any(r.status == "complete" and r.outcome is not None and "quality_score" not in r.outcome.metrics
                   and not has_quality(r.game) for r in records)
    row.update(scheduled=len(ids), run_dir=str(run_dir), run_status=result.status, status="ok", unscored=unscored)
    return row, qs, result.status


def _dry_run(console: Console, jobs: list[tuple[str, str, Any]], out: Path) -> BenchResult:
    """What each (model, game) run would play; loads no model, writes only the configs."""
    from sparring.engine.plan import prepare
    from sparring.engine.run import describe

    table = Table(title=f"bench plan (dry run) -> {out}", title_justify="left")
    for col in ("model", "game", "instances", "episodes", "already stored"):
        table.add_column(col)
    status = "dry-run"
    for model, key, ropts in jobs:
        try:
            info = describe(prepare(ropts))
        except (SparringError, ValidationError) as e:
            console.print(f"[red]{model} · {key}: {one_line(e)}[/red]")
            status = "incomplete"
            continue
        table.add_row(model, key, str(info["instances"]), str(info["schedule"].get("episodes", "?")),
                      str(info.get("already_done", 0)))
    console.print(table)
    return BenchResult(data={}, output_dir=out, status=status)


def _summary(suite: Suite, suite_path: Path, opts: BenchOptions, games: dict[str, dict[str, Any]],
             qualities: dict[str, dict[str, list[float | None]]], status: str) -> dict[str, Any]:
    scores: dict[str, Any] = {}
    for model in opts.models:
        played = [k for k in games if k in qualities[model] and qualities[model][k]]
        point, ci = clemscore([qualities[model][k] for k in played], seed=opts.seed)
        scores[model] = {"clemscore": point, "ci": list(ci), "games": played,
                         "missing": [k for k in games if k not in played]}
    return json_safe({
        "suite": {"name": suite.name, "version": suite.version, "file": str(suite_path)},
        "models": list(opts.models), "partner": opts.partner, "instances": opts.instances,
        "status": status, "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "games": games, "clemscore": scores,
    })


def _game_rows(data: dict[str, Any], key: str) -> list[list[str]]:
    rows = []
    for model, r in data["games"][key]["models"].items():
        if r.get("status") == "error":
            rows.append([model, "-", "-", "-", f"error: {r.get('error', '')}"])
            continue
        rows.append([model, f"{r['played']}/{r['episodes']}" + (f" ({r['failed']} failed)" if r["failed"] else ""),
                     fmt(r["pct_played"], r["pct_played_ci"]), fmt(r["quality"], r["quality_ci"]),
                     fmt(r["score"], r["score_ci"])])
    return rows


GAME_COLUMNS = ["model", "played", "% played", "quality", "score"]
CLEM_COLUMNS = ["model", "clemscore", "games"]


def _clem_rows(data: dict[str, Any]) -> list[list[str]]:
    n = len(data["games"])
    return [[m, fmt(s["clemscore"], s["ci"]), f"{len(s['games'])}/{n}" + (f" (missing: {', '.join(s['missing'])})"
                                                                          if s["missing"] else "")]
            for m, s in data["clemscore"].items()]


def print_bench(console: Console, data: dict[str, Any]) -> None:
    """A table per game (model, episodes, % played, quality, score) and the clemscore table."""
    for key, g in data["games"].items():
        if g["status"] == "skipped":
            console.print(f"[yellow]{key}: {g['note']}[/yellow]")
            continue
        table = Table(title=f"{key} ({g['game']}; 95% CIs)", title_justify="left")
        for col in GAME_COLUMNS:
            table.add_column(col)
        for row in _game_rows(data, key):
            table.add_row(*row)
        console.print(table)
        if g["note"]:
            console.print(f"[yellow]{key}: {g['note']}[/yellow]")
    s = data["suite"]
    table = Table(title=f"clemscore — {s['name']} v{s['version']} (95% CI)", title_justify="left")
    for col in CLEM_COLUMNS:
        table.add_column(col)
    for row in _clem_rows(data):
        table.add_row(*row)
    console.print(table)
    print_static(console, data.get("statscore"), f"{s['name']} v{s['version']}")


def _md_table(columns: list[str], rows: list[list[str]]) -> list[str]:
    esc = [[c.replace("|", "\\|") for c in r] for r in rows]
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns), *("| " + " | ".join(r) + " |" for r in esc)]


def bench_markdown(data: dict[str, Any]) -> str:
    s = data["suite"]
    partner = f"; partner: {data['partner']}" if data.get("partner") else " (self-play)"
    lines = [f"# Benchmark: {s['name']} v{s['version']}", "",
             f"Models: {', '.join(data['models'])}{partner}. Status: {data['status']}. {data['created']}.", "",
             "clemscore = mean over games of % played x quality / 100; quality is the mean over played "
             "(not aborted) episodes; 95% bootstrap CIs resample episodes within each game.", "",
             "## clemscore", "", *_md_table(CLEM_COLUMNS, _clem_rows(data)), ""]
    for key, g in data["games"].items():
        lines += [f"## {key} ({g['game']})", ""]
        if g["status"] == "skipped":
            lines += [g["note"], ""]
            continue
        lines += [*_md_table(GAME_COLUMNS, _game_rows(data, key)), ""]
        if g["note"]:
            lines += [g["note"], ""]
    lines += static_markdown(data.get("statscore"), _md_table)
    return "\n".join(lines)


def write_bench(out: Path, data: dict[str, Any]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    jpath, mpath = out / BENCH_JSON, out / BENCH_MD
    jpath.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    mpath.write_text(bench_markdown(data), encoding="utf-8")
    return [jpath, mpath]
