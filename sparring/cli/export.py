"""`sparring export {sft,dpo,kto} RUN_DIR... -o OUT [filters]`: training data from stored runs
(or `--human dond|nyu FILE`: human games replayed through our prompts); `sparring export clembench
RUN -o DIR`: a run in clembench's results layout."""

from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(no_args_is_help=True, help="Export stored runs as SFT / DPO / KTO data for TRL.")

Out = typer.Option(..., "--output", "-o", help="Output directory (train.jsonl or train.parquet + README.md).")
Role = typer.Option(None, "--role", help="Only seats of this role (debater, judge, negotiator, ...).")
AgentOpt = typer.Option(None, "--agent", help="Only seats played by this agent.")
Keep = typer.Option("all", "--keep", help="all | winners | correct | above_avg | nonzero | top_k")
K = typer.Option(100, "--k", min=1, help="top_k: how many (episode, player) pairs.")
AfterRejection = typer.Option("correction", "--after-rejection",
                              help="What a prompt holds after a rejected reply: correction (the game's "
                                   "correction the model saw; default) | clean (neither). Rejected replies "
                                   "are never targets.")
Aborted = typer.Option(False, "--include-aborted", help="Also export aborted episodes.")
Require = typer.Option(None, "--require", help="An outcome metric that must be true for a player's turns to be "
                       "kept (repeatable), e.g. scored_both: Deal or No Deal deals where both sides score.")
Fmt = typer.Option("jsonl", "--format", help="jsonl | parquet")


def _filters(role, agent, keep, k, after_rejection, include_aborted, judge_target="verdict", require=None):
    from sparring.config_io import validate
    from sparring.train.export import ExportFilters

    return validate(ExportFilters, {"role": role, "agent": agent, "keep": keep, "k": k,
                                    "after_rejection": after_rejection, "include_aborted": include_aborted,
                                    "judge_target": judge_target, "require": list(require or [])}, prefix="export")


def _done(result) -> None:
    from rich.console import Console

    Console(soft_wrap=True).print(f"{result.rows} rows -> {result.path} (card: {result.card})")


@app.command("sft")
def sft(runs: list[Path] = typer.Argument(None, help="Run directories."), output: Path = Out,
        role: str | None = Role, agent: str | None = AgentOpt, keep: str = Keep, k: int = K,
        after_rejection: str = AfterRejection, include_aborted: bool = Aborted, require: list[str] | None = Require,
        judge_target: str = typer.Option("verdict", "--judge-target", help="verdict | correct (judge rows)"),
        human: str | None = typer.Option(None, "--human", help="a game's human-data source (dond, nyu, ...): export human games from FILE instead"),
        human_file: Path | None = typer.Option(None, "--human-file", help="data.txt (dond) or readable JSONL (nyu)"),
        split: str = typer.Option("all", "--split", help="Human data: train | val | test | all."),
        fmt: str = Fmt) -> None:
    """SFT rows: what each player's model was shown, each accepted reply trained once."""
    from sparring.errors import SparringError
    from sparring.train.export import ExportResult, export, write_rows
    from sparring.train.export.card import dataset_card
    from sparring.train.export.human import human_sft_rows

    f = _filters(role, agent, keep, k, after_rejection, include_aborted, judge_target, require)
    if human:
        if human_file is None or runs:
            raise SparringError("--human needs --human-file FILE (and no run directories)")
        rows = human_sft_rows(human, human_file, f if (role or agent) else None, split=split)  # type: ignore[arg-type]
        if not rows:
            raise SparringError(f"no human games could be replayed from {human_file}")
        path = write_rows(rows, output, fmt)  # type: ignore[arg-type]
        card = output / "README.md"
        card.write_text(dataset_card("sft", rows, [], {"human": human, "file": str(human_file), "split": split},
                                     {"format": fmt}), encoding="utf-8")
        _done(ExportResult(path=path, rows=len(rows), card=card))
        return
    if not runs:
        raise SparringError("give one or more run directories (or --human dond|nyu --human-file FILE)")
    _done(export("sft", runs, output, f, fmt=fmt))  # type: ignore[arg-type]


@app.command("dpo")
def dpo(runs: list[Path] = typer.Argument(..., help="Run directories."), output: Path = Out,
        role: str | None = Role, agent: str | None = AgentOpt, keep: str = Keep, k: int = K,
        after_rejection: str = AfterRejection, include_aborted: bool = Aborted, require: list[str] | None = Require,
        target: str = typer.Option("prob", "--target", help="Soft target: prob | log_prob | logit | binary"),
        gamma: float = typer.Option(1.0, "--gamma", help="Sharpness of the soft target."),
        min_gap: float = typer.Option(0.0, "--min-gap", help="Drop pairs whose values differ by less."),
        rejected: str = typer.Option("each", "--rejected", help="each: the best reply against every one min-gap "
                                     "below it; worst: only against its lowest-valued alternative."),
        max_similarity: float | None = typer.Option(None, "--max-similarity", min=0.0, max=1.0,
                                                    help="Drop pairs whose two replies are more alike (word "
                                                         "similarity 0..1)."),
        seed: int = typer.Option(0, "--seed", help="Seed of the shuffle that breaks ties between equal values."),
        fmt: str = Fmt) -> None:
    """DPO pairs (prompt, chosen, rejected, preference, margin) from best-of-N candidates and
    branched rollouts."""
    from sparring.errors import SparringError
    from sparring.train.export import export

    if target not in ("prob", "log_prob", "logit", "binary"):
        raise SparringError(f"--target must be prob, log_prob, logit or binary, got {target!r}")
    if rejected not in ("each", "worst"):
        raise SparringError(f"--rejected must be each or worst, got {rejected!r}")
    f = _filters(role, agent, keep, k, after_rejection, include_aborted, require=require)
    _done(export("dpo", runs, output, f, fmt=fmt, target=target, gamma=gamma, min_gap=min_gap,  # type: ignore[arg-type]
                 rejected=rejected, max_similarity=max_similarity, seed=seed))


@app.command("kto")
def kto(runs: list[Path] = typer.Argument(..., help="Run directories."), output: Path = Out,
        role: str | None = Role, agent: str | None = AgentOpt,
        keep: str = typer.Option("winners", "--keep", help="What counts as desirable (winners, correct, ...)."),
        k: int = K, after_rejection: str = AfterRejection, include_aborted: bool = Aborted,
        require: list[str] | None = Require, fmt: str = Fmt) -> None:
    """KTO rows: every reply, labelled desirable when its episode passes --keep."""
    from sparring.train.export import export

    _done(export("kto", runs, output, _filters(role, agent, keep, k, after_rejection, include_aborted, require=require), fmt=fmt))  # type: ignore[arg-type]


@app.command("clembench")
def clembench(run: Path = typer.Argument(..., help="A run directory (played by sparring, or imported)."),
              output: Path = typer.Option(..., "--output", "-o", help="Output folder (clembench's results "
                                          "layout: <model pair>/<game>/<experiment>/episode_N/).")) -> None:
    """A run in clembench's layout (interactions.json + scores.json per episode), for clembench's tools."""
    from sparring.records.clembench.export import export_run

    counts = export_run(run, output)
    typer.echo(f"wrote {sum(counts.values())} episode(s) to {output}: "
               + ", ".join(f"{g} {n}" for g, n in sorted(counts.items())))


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="export")
