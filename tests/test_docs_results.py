"""The learning results the README and docs/learning/index.md show are the ones measured: both
tables are generated from docs/learning/results.yaml (scripts/docs_figures.py), every experiment
there has its page and its curve image, and the generator refuses a malformed entry."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _figures():
    spec = importlib.util.spec_from_file_location("docs_figures", ROOT / "scripts" / "docs_figures.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_results_tables_are_the_ones_results_yaml_gives():
    figures = _figures()
    experiments = figures.load()
    assert not figures.stale_tables(experiments), "run python scripts/docs_figures.py"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for e in experiments:
        assert f"[{e['name']}](docs/{e['page']})" in readme


def test_every_experiment_has_its_page_and_curve():
    figures = _figures()
    for e in figures.load():
        assert (ROOT / "docs" / e["page"].split("#")[0]).is_file(), e["page"]
        assert (figures.IMAGES / f"{e['name']}.png").is_file(), e["name"]
        if e.get("splits"):
            assert (figures.IMAGES / f"{e['name']}-splits.png").is_file(), e["name"]
        before = next(s for s in e["stages"] if s["label"] == e["before"])
        after = next(s for s in e["stages"] if s["label"] == e["after"])
        for stage in (before, after):
            value, low, high = stage[e["metric"]]
            assert low <= value <= high, (e["name"], stage["label"])


def test_a_metric_without_its_interval_is_refused(tmp_path):
    figures = _figures()
    bad = tmp_path / "results.yaml"
    bad.write_text("experiments:\n  - name: x\n    stages:\n      - {label: base, win_rate: 0.5}\n")
    with pytest.raises(SystemExit, match="win_rate must be"):
        figures.load(bad)


def test_a_table_is_replaced_only_between_its_markers(tmp_path):
    figures = _figures()
    text = f"intro\n{figures.START}| old |\n{figures.END}\nafter\n"
    assert figures.with_table(text, "| new |\n", tmp_path) == f"intro\n{figures.START}| new |\n{figures.END}\nafter\n"
    with pytest.raises(SystemExit, match="markers"):
        figures.with_table("no markers", "| new |\n", tmp_path)


def test_the_split_distribution_draws(tmp_path):
    figures = _figures()
    e = {"name": "d", "title": "Deal or No Deal", "splits": {"warm start": {"0-10": 3, "4-6": 1},
                                                            "iteration 2": {"0-10": 50, "5-5": 2}}}
    assert figures.draw_splits(e, tmp_path / "d-splits.png").stat().st_size > 1000
