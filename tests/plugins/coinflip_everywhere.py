"""Run by tests/engine/test_plugin_game.py in a fresh interpreter with tests/plugins/coinflip on
the path: the plug-in game through every layer of sparring (run, bench, web play, SFT export,
loop report), printing what each produced as one JSON object. Argument: a scratch directory
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

# a training loop's report: the game's metrics per held-out matchup, from the evaluation run
from sparring.train.loop import game_metrics  # noqa: E402
from sparring.train.loop_config import LoopConfig  # noqa: E402
from sparring.train.loop_report import loop_report  # noqa: E402

config = LoopConfig.model_validate({
    "alias": "coin", "iterations": 1, "policy_agent": "g",
    "selfplay": json.loads(json.dumps(__import__("yaml").safe_load((work / "coins.yaml").read_text()))),
    "train": {"model": "unused"}, "evaluation": {"dataset": {"name": "coins", "args": {"n": 4}}}})
metrics = game_metrics(work / "runs" / "c", "coinflip")
out["loop_metrics"] = metrics
state = {"iterations": {"1": {"evaluate": {"games": metrics}, "done": ["evaluate"]}}}
(work / "loop").mkdir()
out["loop_report"] = loop_report(work / "loop", config, state).read_text()

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
