"""The self-play SFT loop (lm-selfplay) end to end: tiny policy vs a scripted partner in Deal or
No Deal, two iterations with a crash between stages and the resume, held-out scenarios kept out
of training, and the game's metrics in the report."""

from __future__ import annotations

import json

import pytest
import yaml

from sparring.train.loop.config import load_loop
from sparring.train.loop.driver import Loop

pytestmark = pytest.mark.slow  # trains a tiny model twice: well under a minute


def test_selfplay_sft_two_iterations_resume_and_held_out_scenarios(tmp_path, monkeypatch):
    from sparring.models.tiny import save_tiny_model

    tiny = save_tiny_model(tmp_path / "tiny", seed=0, vocab=1024)
    (tmp_path / "models.yaml").write_text(yaml.safe_dump({"models": {
        "partner": {"backend": "scripted", "args": {"mode": "cycle", "texts": [
            "[message] I would like the books.", "[propose] (3 books, 0 hats, 0 balls)"]}}}}))
    dataset = {"name": "dond_generated", "args": {"n": 40, "seed": 1}}
    config = {
        "method": "sft", "alias": "tiny-sp", "iterations": 2, "output_dir": str(tmp_path / "loop"),
        "models_file": str(tmp_path / "models.yaml"), "policy_agent": "policy",
        "selfplay": {"game": "dond", "game_args": {"max_turns": 4, "untagged_as_message": True},
                     "dataset": {**dataset, "split": "train", "limit": 3},
                     "agents": {"policy": {"role": "negotiator", "model": "ignored",
                                           "sampling": {"temperature": 1.0, "max_new_tokens": 5}},
                                "partner": {"role": "negotiator", "model": "partner"}},
                     "tournament": {"type": "custom", "matchups": [["policy", "partner"]], "flip": True}},
        "export": {"keep": "all", "cumulative": True},
        "train": {"method": "sft", "model": str(tiny), "max_steps": 1, "batch_size": 2, "max_length": 1024},
        "evaluation": {"dataset": {**dataset, "split": "test", "limit": 2}, "flip": False},
    }
    path = tmp_path / "sp.yaml"
    path.write_text(yaml.safe_dump(config))
    cfg, file = load_loop(str(path))

    real = Loop.evaluate
    crashed: list[int] = []

    def crash_once(self, k):
        if k == 1 and not crashed:
            crashed.append(k)
            raise KeyboardInterrupt  # Ctrl-C between register and evaluate
        return real(self, k)

    monkeypatch.setattr(Loop, "evaluate", crash_once)
    with pytest.raises(KeyboardInterrupt):
        Loop(cfg, file).run()
    report = Loop(cfg, file).run()
    state = json.loads((tmp_path / "loop" / "state.json").read_text())
    train_ids = set()
    for k in ("1", "2"):
        it = state["iterations"][k]
        assert it["done"] == ["play", "export", "train", "register", "check", "evaluate"]
        rows = [json.loads(line) for line in open(it["export"]["path"])]
        assert rows and all(r["meta"]["agent"] == "policy" for r in rows)
        train_ids |= {r["meta"]["instance_id"] for r in rows}
        games = it["evaluate"]["games"]
        assert f"tiny-sp@{k} vs tiny-sp@{k}" in games and "base vs tiny-sp@" + k in games
        assert all({"agreement_rate", "invalid_output_rate", "pareto_rate"} <= set(m["metrics"]) for m in games.values())
        assert all(m["metrics"]["agreement_rate"]["direction"] == "higher" for m in games.values())
    from sparring.records.reader import iter_records

    held_out = {r.instance_id for k in ("1", "2")
                for r in iter_records(state["iterations"][k]["evaluate"]["run_dir"])}
    assert held_out and not (held_out & train_ids)  # held-out scenarios never reach training rows
    assert "Game metrics on held-out instances" in report.read_text()
