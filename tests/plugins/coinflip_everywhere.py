"""Run by tests/engine/test_plugin_game.py in a fresh interpreter with tests/plugins/coinflip on
the path: the plug-in game through every layer of sparring (run, bench, web play, SFT export, a
self-play SFT training loop), printing what each produced as one JSON object. Argument: a scratch directory
holding copies of the plug-in's YAML and JSONL files."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from sparring.cli.root import app as cli

work = Path(sys.argv[1])
out: dict = {}


def sparring(*args: str) -> None:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output


# sparring run, then SFT rows from the run and from the game's human-data source
sparring("run", str(work / "coins.yaml"), "-o", str(work / "runs"), "--run-name", "c", "--quiet")
sparring("export", "sft", str(work / "runs" / "c"), "-o", str(work / "sft"))
sparring("export", "sft", "--human", "coin_guesses", "--human-file", str(work / "human_guesses.jsonl"),
         "-o", str(work / "human-sft"))
out["sft"] = [json.loads(line) for line in (work / "sft" / "train.jsonl").read_text().splitlines()]
out["human_sft"] = [json.loads(line) for line in (work / "human-sft" / "train.jsonl").read_text().splitlines()]

# sparring bench with the plug-in's suite: the clemscore uses the game's quality hook
sparring("bench", "guesser", "--suite", str(work / "bench.yaml"), "--models-file", str(work / "models.yaml"),
         "-o", str(work / "bench"), "--quiet")
out["bench"] = json.loads((work / "bench" / "bench.json").read_text())

# a real self-play SFT training loop on the game: a tiny random model plays (its unreadable reply
# stands as a wrong guess after one correction), its games become SFT rows, one training step,
# ALIAS@1 registered, held-out evaluation of coin@1 and the base (each alone: a one-player game),
# and the loop's report with the game's metric per model
import yaml  # noqa: E402

from sparring.models.tiny import save_tiny_model  # noqa: E402
from sparring.train.loop.config import load_loop  # noqa: E402
from sparring.train.loop.driver import Loop  # noqa: E402

selfplay = yaml.safe_load((work / "coins.yaml").read_text())
selfplay["agents"]["g"]["sampling"] = {"max_new_tokens": 4, "temperature": 1.0}
loop_file = work / "coin-loop.yaml"
loop_file.write_text(yaml.safe_dump({
    "method": "sft", "alias": "coin", "iterations": 1, "policy_agent": "g", "output_dir": str(work / "loop"),
    "models_file": str(work / "models.yaml"), "selfplay": selfplay, "export": {"keep": "all"},
    "train": {"method": "sft", "model": str(save_tiny_model(work / "tiny", seed=0, vocab=1024)), "max_steps": 1,
              "batch_size": 2, "max_length": 512},
    "evaluation": {"dataset": {"name": "coins", "args": {"n": 2}}, "flip": False}}))
config, file = load_loop(str(loop_file))
report = Loop(config, file).run()
out["loop_report"] = report.read_text()
out["loop_state"] = json.loads((work / "loop" / "state.json").read_text())

# the web app: a person plays the guesser through the play page, the episode is stored
from fastapi.testclient import TestClient  # noqa: E402

from sparring.web.app import create_app  # noqa: E402

with TestClient(create_app(work / "web-runs", configs=[work / "coins.yaml"]), base_url="http://127.0.0.1") as client:
    page = client.get("/play").text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    r = client.post("/play", data={"csrf": csrf, "config": "coins", "instance": "coin-0"}, follow_redirects=False)
    assert r.status_code == 303, r.text
    url = r.headers["location"]
    for _ in range(200):
        html = client.get(url).text
        if 'data-status="waiting"' not in html:
            break
        time.sleep(0.05)
    out["web_turn_page"] = html
    seq = re.search(r'name="seq" value="(\d+)"', html).group(1)
    client.post(f"{url}/act", data={"csrf": csrf, "seq": seq, "text": "GUESS: tails"})
    for _ in range(200):
        html = client.get(url).text
        if 'data-status="complete"' in html:
            break
        time.sleep(0.05)
    out["web_end_page"] = html
out["web_records"] = [json.loads(line) for p in (work / "web-runs").glob("*/episodes.jsonl")
                      for line in p.read_text().splitlines()]
print("RESULT " + json.dumps(out, default=str))
