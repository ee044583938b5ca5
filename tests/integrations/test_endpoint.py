"""`sparring models serve`: the bundled model (or an adapter merged into its base) behind an OpenAI
endpoint with transformers' own server, on 127.0.0.1. The documented command starts it; sparring's
`openai` backend plays Deal or No Deal through it and verifiers' `vf-eval` evaluates a sparring
package against it (issue #61)."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sparring.integrations.endpoint import models_entry, prepare, wait_ready

SERVING = all(importlib.util.find_spec(m) for m in ("fastapi", "uvicorn"))


def test_an_adapter_is_merged_and_served_under_its_name(tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from sparring.models.tiny import save_tiny_model

    tiny = save_tiny_model(tmp_path / "tiny", vocab=1024)
    lora = get_peft_model(AutoModelForCausalLM.from_pretrained(str(tiny)),
                          LoraConfig(r=4, target_modules="all-linear", task_type="CAUSAL_LM"))
    lora.save_pretrained(str(tmp_path / "debater"))
    served = prepare(str(tiny), adapter=tmp_path / "debater", folder=tmp_path / "serve")
    assert served.name == "tiny+debater"
    link = served.folder / served.name
    assert link.is_symlink() and link.resolve() == served.directory.resolve()
    assert (served.directory / "config.json").is_file() and not (served.directory / "adapter_config.json").exists()
    assert served.command("127.0.0.1", 8123)[1:4] == ["serve", "tiny+debater", "--host"]
    entry = models_entry(served, "127.0.0.1", 8123)
    assert entry["args"] == {"model": "tiny+debater", "base_url": "http://127.0.0.1:8123/v1", "concurrency": 4,
                             "supports_prefill": False}
    with pytest.raises(Exception, match="not an adapter directory"):
        prepare(str(tiny), adapter=tmp_path, folder=tmp_path / "serve")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    """`sparring models serve smollm2-135m --port P` as docs/scale-out.md writes it, until the module ends."""
    if not SERVING:
        pytest.skip("transformers serve needs fastapi and uvicorn (sparring[serve])")
    port = _port()
    log = tmp_path_factory.mktemp("serve") / "server.log"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "sparring.cli", "models", "serve", "smollm2-135m", "--port",
                                 str(port), "--device", "cpu"], stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_ready(url, timeout_s=180, process=proc)
    except Exception:
        proc.kill()
        raise AssertionError(log.read_text()[-3000:]) from None
    yield url, port
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.mark.slow
def test_sparring_plays_through_the_endpoint(endpoint, tmp_path):
    from sparring.engine.play import Arena

    url, port = endpoint
    served = prepare("smollm2-135m")
    (tmp_path / "models.yaml").write_text(yaml.safe_dump({"models": {"served": models_entry(served, "127.0.0.1",
                                                                                             port)}}))
    config = {"name": "dond-served", "game": "dond", "game_args": {"objective": "self", "max_turns": 4},
              "models_file": str(tmp_path / "models.yaml"),
              "dataset": {"name": "dond_generated", "split": "test", "args": {"n": 30, "seed": 0}, "limit": 1},
              "agents": {"negotiator": {"role": "negotiator", "model": "served",
                                        "sampling": {"max_new_tokens": 16, "temperature": 0.0}}},
              "tournament": {"type": "self_play", "participants": ["negotiator"]}, "run": {"seed": 0}}
    with Arena.from_config(config) as arena:
        records = arena.play(arena.jobs())
    assert records and all(r.status in ("complete", "aborted") for r in records)
    replies = [c.completions[0].text for r in records for c in r.calls if c.completions]
    assert replies and any(t.strip() for t in replies)  # the bundled model answered through the endpoint


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("verifiers") is None, reason="needs sparring[verifiers]")
def test_vf_eval_evaluates_a_sparring_package_against_the_endpoint(endpoint, tmp_path):
    from sparring.integrations.verifiers.package import write_package

    url, _ = endpoint
    experiment = {"name": "dond-vf", "game": "dond", "game_args": {"objective": "self", "max_turns": 4},
                  "dataset": {"name": "dond_generated", "split": "test", "args": {"n": 30, "seed": 0}, "limit": 1},
                  "agents": {"negotiator": {"role": "negotiator", "model": "smollm2-135m",
                                            "sampling": {"max_new_tokens": 16}}},
                  "tournament": {"type": "self_play", "participants": ["negotiator"]}, "run": {"seed": 0}}
    pkg = write_package(experiment, tmp_path / "pkg", name="sparring-vf-served")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(pkg.path), *sys.path]), "VF_RUN_ID": "sparring-test",
           "SPARRING_TEST_NO_KEY": "none"}
    cmd = [str(Path(sys.executable).parent / "vf-eval"), pkg.name, "-m", "smollm2-135m", "--client.base-url", url,
           "--client.api-key-var", "SPARRING_TEST_NO_KEY", "-n", "1", "-r", "1", "--env.taskset.split", "test",
           "--no-push", "-o", str(tmp_path / "out")]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    episodes = [json.loads(line) for f in (tmp_path / "out").rglob("traces.jsonl")
                for line in f.read_text().splitlines() if line.strip()]
    assert episodes, sorted(str(p) for p in (tmp_path / "out").rglob("*"))
    for episode in episodes:  # both seats played by the served bundled model, scored by sparring's engine
        assert episode["ok"] and not episode["errors"] and episode["num_output_tokens"] > 0
        assert len(episode["traces"]) == 2 and all("outcome" in t["rewards"] for t in episode["traces"])
