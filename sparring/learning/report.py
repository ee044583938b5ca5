"""What the suite writes: `learning.json` (every number), `learning.md` (one table per experiment)
and `curves/<experiment>.png` (the held-out metric against training steps, 95% bands)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sparring.learning.results import Experiment


def previous_experiments(out: Path, suite: str, rerun: list[str]) -> list[dict[str, Any]]:
    """The experiments an earlier run of the same suite wrote to OUT/learning.json and this run does
    not redo (`--only` reruns some experiments without losing the others' numbers)."""
    path = out / "learning.json"
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        return []
    if data.get("suite") != suite:
        return []
    return [e for e in data.get("experiments") or [] if e.get("name") not in rerun]


def write_suite(out: Path, suite: str, experiments: list[Experiment], extra: dict[str, Any],
                previous: list[dict[str, Any]] | None = None) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    data = {"suite": suite, **extra, "experiments": [*(previous or []), *(e.to_json() for e in experiments)]}
    paths = {"json": out / "learning.json", "md": out / "learning.md"}
    paths["json"].write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    paths["md"].write_text(markdown(data), encoding="utf-8")
    for e in experiments:
        paths[e.name] = plot_curve(e, out / "curves" / f"{e.name}.png")
    return paths


def check_results(path: Path, expected: list[str]) -> list[str]:
    """Problems of a written learning.json (CI: everything ran, held-out sets disjoint and named)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    problems = [f"{name} failed: {why.splitlines()[0]}" for name, why in (data.get("failures") or {}).items()]
    names = [e["name"] for e in data["experiments"]]
    problems += [f"{name} is missing from {path}" for name in expected if name not in names]
    for e in data["experiments"]:
        overlap = set(e["training_ids"]) & set(e["heldout_ids"])
        if overlap or not e["heldout_ids"]:
            problems.append(f"{e['name']}: held-out set empty or overlapping training ({sorted(overlap)[:3]})")
        if not e["stages"] or any(not s["metrics"] for s in e["stages"]):
            problems.append(f"{e['name']}: a stage without metrics")
    return problems


def held_out_figures(data: dict[str, Any]) -> dict[str, Any]:
    """Every held-out figure of a learning.json: each experiment's training and held-out ids, each
    stage's metrics (value, n, interval) and each paired comparison (mean difference, interval,
    counts up / down / equal). Wall times, speeds and curves are left out: they measure the
    machine, not the policy."""
    keys = ("n", "mean_diff", "mean_diff_ci_low", "mean_diff_ci_high", "n_positive", "n_negative", "n_zero")
    out: dict[str, Any] = {}
    for e in data.get("experiments") or []:
        out[f"{e['name']} / training ids"] = e["training_ids"]
        out[f"{e['name']} / held-out ids"] = e["heldout_ids"]
        for s in e["stages"]:
            for k, m in s["metrics"].items():
                out[f"{e['name']} / {s['name']} / {k}"] = [m["value"], m["n"], m["ci"]]
        for k, p in (e.get("paired") or {}).items():
            out[f"{e['name']} / paired {k}"] = {x: p.get(x) for x in keys}
    return out


def compare_figures(before: dict[str, Any], after: dict[str, Any]) -> tuple[int, list[str]]:
    """(figures identical, one line per figure that differs or is in one file only) of two
    learning.json files: a code change that should not move any result is checked this way."""
    a, b = held_out_figures(before), held_out_figures(after)
    lines = [f"differs: {k}: {a[k]} -> {b[k]}" for k in a if k in b and a[k] != b[k]]
    lines += [f"only before: {k}" for k in a if k not in b] + [f"only after: {k}" for k in b if k not in a]
    return sum(1 for k in a if k in b and a[k] == b[k]), lines


def _est(m: dict[str, Any] | None) -> str:
    if not m or m.get("value") is None:
        return "n/a"
    lo, hi = m["ci"]
    return f"{m['value']:.2f} [{lo:.2f}, {hi:.2f}]" if lo is not None else f"{m['value']:.2f}"


def markdown(data: dict[str, Any]) -> str:
    lines = [f"# Learning suite: {data['suite']}", ""]
    for key in ("machine", "command"):
        if data.get(key):
            lines += [f"{key}: {data[key]}", ""]
    for e in data["experiments"]:
        names = sorted({k for s in e["stages"] for k in s["metrics"]})
        lines += [f"## {e['name']}", "", e["description"], "",
                  f"model `{e['model']}`; {len(e['training_ids'])} training instances, "
                  f"{len(e['heldout_ids'])} held-out instances (disjoint: checked); total {e['wall_s'] / 60:.1f} min.",
                  ""]
        if e.get("target"):
            lines += [f"target: {e['target']}", ""]
        lines += ["| stage | step | seed | " + " | ".join(names) + " | wall (s) |",
                  "|---|---|---|" + "---|" * len(names) + "---|"]
        for s in e["stages"]:
            wall = ", ".join(f"{k} {v:.0f}" for k, v in s["wall_s"].items())
            n = next((m["n"] for m in s["metrics"].values() if m), 0)
            lines.append(f"| {s['name']} | {s['step']} | {s['seed']} | "
                         + " | ".join(_est(s["metrics"].get(k)) for k in names) + f" | {wall} |"
                         + ("" if not n else ""))
        for name, p in (e.get("paired") or {}).items():
            if p.get("n"):
                lines.append(f"\npaired {name}: mean {p['mean_diff']:+.3f} "
                             f"[{p['mean_diff_ci_low']:+.3f}, {p['mean_diff_ci_high']:+.3f}] over {p['n']} instances, "
                             f"{p['n_positive']} up / {p['n_negative']} down / {p['n_zero']} equal")
        if e.get("speed"):
            lines += ["", "speed: " + ", ".join(f"{k} {_num(v)}" for k, v in e["speed"].items())]
        for note in e.get("notes") or []:
            lines += ["", f"- {note}"]
        lines.append("")
    return "\n".join(lines) + "\n"


def _num(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def plot_curve(e: Experiment, path: Path) -> Path:
    """Held-out primary metric per stage against its step, one line per seed, 95% bands."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    baseline = [s for s in e.stages if s.step == 0 and s.seed == 0 and e.primary in s.metrics]
    for seed in sorted({s.seed for s in e.stages}):
        own = [s for s in e.stages if s.seed == seed and e.primary in s.metrics]
        start = [] if any(s.step == 0 for s in own) else baseline[:1]  # a training seed starts at the base
        pts = sorted(start + own, key=lambda s: s.step)
        if not pts or pts == baseline:
            continue
        xs = [s.step for s in pts]
        ys = [s.metrics[e.primary].value for s in pts]
        lo = [s.metrics[e.primary].ci[0] for s in pts]
        hi = [s.metrics[e.primary].ci[1] for s in pts]
        ax.plot(xs, ys, marker="o", label=f"seed {seed}: {pts[-1].name}")
        if not any(math.isnan(v) for v in lo + hi):
            ax.fill_between(xs, lo, hi, alpha=0.2)
    if baseline and all(s.step == 0 for s in e.stages):
        b = baseline[0].metrics[e.primary]
        ax.errorbar([0], [b.value], yerr=[[b.value - b.ci[0]], [b.ci[1] - b.value]], marker="o", label="baseline")
    ax.set_xlabel("training steps (0 = base model)")
    ax.set_ylabel(f"held-out {e.primary}")
    ax.set_title(f"{e.name} ({len(e.heldout_ids)} held-out instances)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


# The panels of an online arm's training plot that every experiment shares (step-log key -> title)
PANELS = {"entropy": "entropy (nats/token)", "pg_loss": "policy loss", "zero_advantage_groups": "groups with no advantage",
          "kl": "KL to the start", "vf_loss": "value loss"}


def training_panels(reward: str, own: Mapping[str, str] | None = None,
                    shared: Sequence[str] = ("entropy", "pg_loss", "zero_advantage_groups")) -> tuple[tuple[str, str], ...]:
    """An experiment's training plot: the mean reward (`reward` says what it is), the experiment's
    own panels (`own`: key -> title, e.g. the reward of each seat), then the `shared` ones of PANELS."""
    return (("reward", f"mean reward ({reward})"), *(own or {}).items(), *((k, PANELS[k]) for k in shared))


def plot_training(per_arm: dict[str, dict[str, list[Any]]], path: Path, panels: tuple[tuple[str, str], ...]) -> Path:
    """Online RL curves per step, one panel per (key, title) of `panels`, one line per arm
    (`per_arm`: arm -> {"step": [...], key: [...]}, e.g. `Arm.curves()`); a key no arm logged says so."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = 3
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(11, 3 * rows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (key, title) in zip(axes.flat, panels, strict=False):
        for arm, c in per_arm.items():
            steps = c.get("step") or list(range(1, len(next(iter(c.values()), [])) + 1))
            pts = [(s, v) for s, v in zip(steps, c.get(key) or [], strict=False) if v is not None]
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", markersize=3, label=arm)
        ax.set_title(title)
        ax.set_xlabel("step")
        if ax.has_data():
            ax.legend()
        else:
            ax.text(0.5, 0.5, "not logged", ha="center", va="center", transform=ax.transAxes)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
