"""The loop's report: a per-iteration table (pairs, DPO loss, win rates with CIs, judge accuracy),
the preference metrics of each DPO iteration (rewards, margins, pair accuracy, the soft-target
floor), and plots of the new policy's win rate and of those metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sparring.numfmt import fmt_num


def _rate(block: dict[str, Any] | None) -> str:
    if not block:
        return "–"
    lo, hi = block["ci"]
    return f"{block['win_rate']:.2f} [{lo:.2f}, {hi:.2f}] (n={block['games']})"


def loop_report(out_dir: Path, config: Any, state: dict[str, Any]) -> Path:
    rows, xs, vs_base, vs_prev = [], [], [], []
    for k in range(1, config.iterations + 1):
        it = state["iterations"].get(str(k), {})
        ev, tr, ex = it.get("evaluate") or {}, it.get("train") or {}, it.get("export") or {}
        new = f"{config.alias}@{k}"
        base_block = (ev.get("vs") or {}).get("base")
        prev_block = (ev.get("vs") or {}).get(f"{config.alias}@{k - 1}")
        rating = (ev.get("ratings") or {}).get(new, {}).get("rating")
        judge = ev.get("judge_accuracy") or {}
        rows.append(f"| {k} | {ex.get('pairs', '–')} | {fmt_num(tr.get('loss'))} | {_rate(base_block)} | "
                    f"{_rate(prev_block)} | {fmt_num(rating)} | {fmt_num(judge.get('accuracy'))} | "
                    f"{', '.join(it.get('done', [])) or '–'} |")
        if base_block:
            xs.append(k)
            vs_base.append(base_block["win_rate"])
            vs_prev.append(prev_block["win_rate"] if prev_block else None)
    plot = _plot(out_dir, xs, vs_base, vs_prev)
    games = _game_rows(config, state)
    preference = preference_rows(out_dir, config, state)
    heldout = heldout_judge_rows(config, state)
    check = check_rows(config, state)
    text = "\n".join([
        f"# {'Iterative DPO' if config.method == 'dpo' else 'Self-play SFT'}: {config.name}", "",
        f"Base model `{config.train.model}`; adapters registered as `{config.alias}@k` in `{out_dir / 'models.yaml'}`.",
        "", f"| iteration | {'DPO pairs | DPO loss' if config.method == 'dpo' else 'SFT rows | SFT loss'} | "
        "win rate vs base [95% CI] | vs previous | BT rating | judge accuracy | stages done |",
        "|---|---|---|---|---|---|---|---|", *rows, "",
        *([f"![win rate per iteration]({plot.name})", ""] if plot else []),
        *heldout,
        *preference,
        *check,
        *games,
        "Win rates count the new policy's games against each model on the held-out evaluation instances (both "
        "seatings with `evaluation.flip`; a debate judged by the configured judge); a tie counts half. "
        "Bradley–Terry ratings are on the Elo scale (anchor 1000).", ""])
    path = out_dir / "report.md"
    path.write_text(text, encoding="utf-8")
    return path


def heldout_judge_rows(config: Any, state: dict[str, Any]) -> list[str]:
    """Each iteration under the training judge and under every held-out judge, side by side."""
    judges = list(getattr(config.evaluation, "heldout_judges", {}) or {})
    if not judges:
        return []
    header = " | ".join(f"{j}: win rate vs base | {j}: judge accuracy" for j in ["training judge", *judges])
    lines = []
    for k in range(1, config.iterations + 1):
        ev = (state["iterations"].get(str(k)) or {}).get("evaluate") or {}
        blocks = [ev, *[(ev.get("heldout_judges") or {}).get(j) or {} for j in judges]]
        cells = [f"{_rate((b.get('vs') or {}).get('base'))} | {fmt_num((b.get('judge_accuracy') or {}).get('accuracy'))}"
                 for b in blocks]
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    return ["## Under a judge not used in training", "", f"| iteration | {header} |",
            "|---|" + "---|" * (2 * (len(judges) + 1)), *lines, "",
            "A gain that shows under the training judge but not under a held-out judge is what the training judge "
            "rewards, not necessarily a better debater (judge hacking).", ""]


def check_rows(config: Any, state: dict[str, Any]) -> list[str]:
    """The greedy check on training prompts (`check:`): each measure before → after per iteration."""
    lines = []
    for k in range(1, config.iterations + 1):
        check = (state["iterations"].get(str(k)) or {}).get("check") or {}
        for name, d in (check.get("diff") or {}).items():
            lines.append(f"| {k} | {name} | {fmt_num(d['before'])} | {fmt_num(d['after'])} | "
                         f"{d['diff']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}] | {d['n']} |")
    if not lines:
        return []
    return ["## Greedy check on training prompts (before the held-out games)", "",
            "| iteration | measure | previous policy | new policy | paired difference [95% CI] | instances |",
            "|---|---|---|---|---|---|", *lines, "",
            "Both policies play the first training instances greedily against the same partners and judges; a "
            "fitted pair set whose greedy behaviour falls here (e.g. fewer valid quotes) will not hold on held-out "
            "games either.", ""]


PREFERENCE_COLUMNS = (("loss", "loss"), ("soft/floor", "floor (entropy of p)"),
                      ("rewards/chosen", "reward chosen"), ("rewards/rejected", "reward rejected"),
                      ("rewards/margins", "margin"), ("rewards/accuracies", "pair accuracy"))


def preference_summary(metrics: dict[str, float]) -> str | None:
    """One console line for a DPO iteration's last logged step (None when it logged no rewards)."""
    if "rewards/margins" not in metrics:
        return None
    return ", ".join(f"{label} {fmt_num(metrics.get(key))}" for key, label in PREFERENCE_COLUMNS)


def preference_rows(out_dir: Path, config: Any, state: dict[str, Any]) -> list[str]:
    """DPO iterations: the last logged training step's loss, floor, rewards, margin and accuracy."""
    lines, points = [], []
    for k in range(1, config.iterations + 1):
        it = state["iterations"].get(str(k)) or {}
        metrics = (it.get("train") or {}).get("metrics") or {}
        if "rewards/margins" not in metrics:
            continue
        ex = it.get("export") or {}
        points.append((k, metrics))
        lines.append(f"| {k} | " + " | ".join(fmt_num(metrics.get(key)) for key, _ in PREFERENCE_COLUMNS)
                     + f" | {fmt_num(ex.get('chosen_words'))} | {fmt_num(ex.get('rejected_words'))} |")
    if not lines:
        return []
    plot = _plot_preference(out_dir, points)
    return ["## Preference training (last logged step of each iteration)", "",
            "| iteration | " + " | ".join(label for _, label in PREFERENCE_COLUMNS) + " | chosen words | rejected words |",
            "|---|" + "---|" * (len(PREFERENCE_COLUMNS) + 2), *lines, "",
            *([f"![preference metrics per iteration]({plot.name})", ""] if plot else []),
            "Rewards are β x (log π − log π_ref) summed over the reply (as TRL logs them); the margin is chosen "
            "minus rejected, pair accuracy the share of pairs whose chosen reward is higher. A soft-target loss "
            "cannot go below the floor (the mean entropy of the targets p; 0 for hard labels), so read the loss "
            "against the floor and watch margin and accuracy rise.", ""]


def _plot_preference(out_dir: Path, points: list[tuple[int, dict[str, float]]]) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 3.2))
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2)
    xs = [k for k, _ in points]
    for key, label in (("loss", "loss"), ("soft/floor", "floor (entropy of p)")):
        ys = [m.get(key) for _, m in points]
        if all(y is not None for y in ys):
            left.plot(xs, ys, marker="o", label=label)
    left.set_xlabel("iteration")
    left.set_ylabel("nats")
    left.legend(fontsize=8)
    right.plot(xs, [m["rewards/margins"] for _, m in points], marker="o", label="margin")
    right.set_xlabel("iteration")
    right.set_ylabel("reward margin")
    acc = right.twinx()
    acc.plot(xs, [m.get("rewards/accuracies", float("nan")) for _, m in points], marker="s", color="C2",
             label="pair accuracy")
    acc.set_ylim(0, 1)
    acc.set_ylabel("pair accuracy")
    for ax in (left, right):
        ax.set_xticks(xs)
    path = out_dir / "preference_metrics.png"
    fig.savefig(path, dpi=100, bbox_inches="tight")
    return path


def _game_rows(config: Any, state: dict[str, Any]) -> list[str]:
    """The game's own headline metrics (`Game.hooks.metrics`) per held-out matchup and iteration,
    each with its interval and which way is better."""
    from sparring.gameapi import GAMES

    game = str((config.selfplay or {}).get("game", ""))
    metrics = GAMES.get(game).hooks.metrics if game in GAMES else ()
    lines = []
    for k in range(1, config.iterations + 1):
        ev = (state["iterations"].get(str(k)) or {}).get("evaluate") or {}
        for name, m in sorted((ev.get("games") or {}).items()):
            values = m.get("metrics") or {}
            cells = [_value(values.get(metric.name) or {}) for metric in metrics]
            rewards = ", ".join(f"{a}: {r:.2f}" for a, r in sorted((m.get("reward_by_agent") or {}).items())
                                if isinstance(r, (int, float)))
            lines.append(f"| {k} | {name} | {m.get('episodes')} | {' | '.join(cells)}{' | ' if cells else ''}"
                         f"{rewards or '–'} |")
    if not lines:
        return []
    heads = [f"{metric.name.replace('_', ' ')} ({'↑' if metric.direction == 'higher' else '↓'})" for metric in metrics]
    return ["## Game metrics on held-out instances", "",
            f"| iteration | matchup | games | {' | '.join(heads)}{' | ' if heads else ''}mean reward |",
            "|" + "---|" * (4 + len(heads)), *lines, "",
            "↑ higher is better, ↓ lower is better; 95% intervals (Wilson for shares, bootstrap for means).", ""]


def _value(v: dict[str, Any]) -> str:
    if v.get("value") is None:
        return "–"
    ci = v.get("ci")
    return f"{v['value']:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def _plot(out_dir: Path, xs: list[int], vs_base: list[float], vs_prev: list[float | None]) -> Path | None:
    if not xs:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 3.2))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot(xs, vs_base, marker="o", label="vs base")
    prev = [(x, v) for x, v in zip(xs, vs_prev, strict=True) if v is not None]
    if prev:
        ax.plot([x for x, _ in prev], [v for _, v in prev], marker="s", label="vs previous")
    ax.axhline(0.5, color="grey", ls="--", lw=1)
    ax.set_xlabel("iteration")
    ax.set_ylabel("win rate of the new policy")
    ax.set_ylim(0, 1)
    ax.set_xticks(xs)
    ax.legend(fontsize=8)
    path = out_dir / "win_rate.png"
    fig.savefig(path, dpi=100, bbox_inches="tight")
    return path


def iteration_metrics(it: dict[str, Any]) -> dict[str, float]:
    """One iteration's numbers for an experiment tracker: held-out win rates, judge accuracy and
    the game's metrics per matchup, the training loss and the preference metrics."""
    out: dict[str, Any] = {}
    ev, tr, ex = it.get("evaluate") or {}, it.get("train") or {}, it.get("export") or {}
    for other, block in (ev.get("vs") or {}).items():
        out[f"heldout/win_rate_vs_{other}"] = block.get("win_rate")
    if ev.get("judge_accuracy"):
        out["heldout/judge_accuracy"] = ev["judge_accuracy"].get("accuracy")
    for judge, block in (ev.get("heldout_judges") or {}).items():
        for other, b in (block.get("vs") or {}).items():
            out[f"heldout_judge/{judge}/win_rate_vs_{other}"] = b.get("win_rate")
        if block.get("judge_accuracy"):
            out[f"heldout_judge/{judge}/judge_accuracy"] = block["judge_accuracy"].get("accuracy")
    for matchup, group in (ev.get("games") or {}).items():
        for name, value in (group.get("metrics") or {}).items():
            out[f"heldout/{matchup}/{name}"] = value.get("value")
    out["train/loss"], out["train/steps"], out["train/rows"] = tr.get("loss"), tr.get("steps"), ex.get("rows")
    for key in ("chosen_words", "rejected_words", "value_gap", "similarity", "near_identical", "prefix_share",
                "questions", "top_question_share", "top_seat_share", "argued_correct_share"):
        out[f"pairs/{key}"] = ex.get(key)
    for name, value in (tr.get("metrics") or {}).items():
        out[f"train/{name}"] = value
    for name, d in ((it.get("check") or {}).get("diff") or {}).items():
        out[f"check/{name}"], out[f"check/{name}_diff"] = d.get("after"), d.get("diff")
    return {k.replace(" ", "_"): float(v) for k, v in out.items()
            if isinstance(v, int | float) and not isinstance(v, bool)}
