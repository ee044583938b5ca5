"""Hub models as a new user meets them, against a stand-in hub on 127.0.0.1 reached through
`HF_ENDPOINT` (the hub client's documented variable), in fresh processes as on a user's machine: a
model spec naming a Hub id of a tiny chat model (a Llama-3 chat template, not SmolLM2's) downloads on
first use, plays a debate, exports SFT rows, trains SFT with assistant-only loss and one
iterative-DPO loop iteration with TensorBoard curves written (the four commands one after the other
in one process, each through the command line's own entry point: a process imports the training
libraries in ~12 s), and loads again from the cache with the server stopped, in a process of its
own; misspelt, gated, unpinnable, offline-and-not-cached and unreachable models are one clear
message each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.commands import run_commands

from .standin_hub import StandinHub

REPO = "sparring-test/tiny-chat"


@pytest.fixture(scope="module")
def repo_dir(tmp_path_factory) -> Path:
    """A tiny random Llama with the bundled tokenizer speaking Llama 3's chat format, saved as a
    hub repository."""
    from sparring.models.tiny import tiny_model, tiny_tokenizer
    from tests.train.chat_families import family_tokenizer

    out = tmp_path_factory.mktemp("hub-repo")
    model, _ = tiny_model(seed=3, vocab=1024)
    tok = family_tokenizer("llama3", tiny_tokenizer())
    model.resize_token_embeddings(len(tok), mean_resizing=False)
    eot = tok.convert_tokens_to_ids("<|eot_id|>")
    tok.eos_token = "<|eot_id|>"
    model.config.eos_token_id = model.generation_config.eos_token_id = eot
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture()
def hub(repo_dir):
    server = StandinHub({REPO: repo_dir, "sparring-test/gated-chat": repo_dir},
                        gated={"sparring-test/gated-chat"}).start()
    yield server
    server.stop()


def env_for(tmp: Path, hub_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "SPARRING_OFFLINE", "HF_TOKEN")}
    env.update(HF_ENDPOINT=hub_url, HF_HOME=str(tmp / "hf-home"), HF_HUB_DISABLE_TELEMETRY="1",
               SPARRING_RUNS_DIR=str(tmp / "runs"), PYTHONPATH=str(Path(__file__).resolve().parents[2]), **extra)
    return env


def run(args: list[str], env: dict[str, str], cwd: Path, timeout: int = 600) -> str:
    result = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{args}\n{(result.stdout + result.stderr)[-5000:]}"
    return result.stdout + result.stderr



ERRORS = textwrap.dedent("""
    import json, os, sys
    from sparring.errors import ConfigError
    from sparring.models.hf import HFModel
    out = {}
    for label, kwargs, offline in [("missing", {"model": "sparring-test/no-such-model"}, False),
                                   ("gated", {"model": "sparring-test/gated-chat"}, False),
                                   ("revision", {"model": "sparring-test/tiny-chat", "revision": "v9"}, False),
                                   ("offline", {"model": "sparring-test/tiny-chat"}, True)]:
        if offline:
            os.environ["SPARRING_OFFLINE"] = "1"
        try:
            HFModel(name="m", **kwargs)
            out[label] = None
        except ConfigError as e:
            out[label] = {"message": str(e), "key": e.key}
    print(json.dumps(out))
""")


@pytest.mark.slow  # a CLI process that loads the hub client: ~12 s
def test_a_hub_model_that_cannot_be_had_is_one_clear_message(tmp_path, hub):
    out = run([sys.executable, "-c", ERRORS], env_for(tmp_path, hub.url), tmp_path)
    got = json.loads(out.strip().splitlines()[-1])
    assert "no model 'sparring-test/no-such-model' on http://127.0.0.1" in got["missing"]["message"]
    assert "check the spelling" in got["missing"]["message"] and got["missing"]["key"] == "model"
    assert "'sparring-test/gated-chat' is a gated model: accept its license" in got["gated"]["message"]
    assert "HF_TOKEN" in got["gated"]["message"]
    assert "has no revision 'v9'" in got["revision"]["message"]
    assert "not in the local Hugging Face cache" in got["offline"]["message"]
    assert "offline (SPARRING_OFFLINE=1)" in got["offline"]["message"]
    assert "hf download sparring-test/tiny-chat" in got["offline"]["message"]
    assert not hub.downloads(), "nothing is downloaded for a model that cannot be loaded"
    hub.stop()  # the network is gone and nothing is cached
    # the hub client backs off between its retries of a refused connection (~30 s in all): without
    # the waits the same retries fail the same way, so the subprocess skips them
    out = run([sys.executable, "-c", "import time\ntime.sleep = lambda seconds: None\n"
               "from sparring.models.hf import HFModel\n"
               "from sparring.errors import ConfigError\n"
               "try:\n    HFModel(name='m', model='sparring-test/tiny-chat')\n"
               "except ConfigError as e:\n    print('MESSAGE', e)"], env_for(tmp_path, hub.url), tmp_path)
    assert "cannot reach http://127.0.0.1" in out and "not in the local Hugging Face cache" in out


DEBATE = {
    "game": "debate", "game_args": {"format": "debate", "rounds": 1},
    "dataset": {"name": "generated", "split": "train", "limit": 2, "args": {"people": 2, "filler_sentences": 0}},
    "agents": {"policy": {"role": "debater", "model": "tiny-hub", "sampling": {"temperature": 0.9}},
               "judge": {"role": "judge", "model": "scripted-random"}},
    "tournament": {"type": "self_play", "participants": ["policy"], "judges": ["judge"], "flip": True},
    "run": {"seed": 0, "max_live": 8},
}


def tensorboard_scalars(root: Path) -> dict[str, int]:
    """Scalar tag -> number of points, from every TensorBoard event file under `root`."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tags: dict[str, int] = {}
    for events in root.rglob("events.out.tfevents.*"):
        acc = EventAccumulator(str(events))
        acc.Reload()
        for tag in acc.Tags()["scalars"]:
            tags[tag] = tags.get(tag, 0) + len(acc.Scalars(tag))
    return tags


@pytest.mark.slow
@pytest.mark.timeout(900)  # five CLI processes end to end: over 300 s when the machine is busy (a CI beside a training run)
def test_a_new_user_with_a_hub_model_plays_exports_trains_and_loops_then_works_offline(tmp_path, hub):
    pytest.importorskip("tensorboard")
    import yaml

    models = {"models": {"tiny-hub": {"backend": "hf", "args": {"model": REPO, "revision": "main"},
                                      "sampling": {"max_new_tokens": 12, "temperature": 0.7}}}}
    (tmp_path / "models.yaml").write_text(yaml.safe_dump(models))
    env = env_for(tmp_path, hub.url, SPARRING_MODELS=str(tmp_path / "models.yaml"))
    (tmp_path / "debate.yaml").write_text(yaml.safe_dump({"name": "hub-debate", **DEBATE}))
    loop = {"name": "hub-dpo", "alias": "tiny-dpo", "iterations": 1, "policy_agent": "policy",
            "selfplay": {**DEBATE, "branch": {"target": "policy", "k": 2, "mode": "half", "depth": 1}},
            "export": {"target": "prob", "gamma": 4.0, "max_pairs": 4},
            "train": {"method": "dpo", "model": "tiny-hub", "max_steps": 2, "batch_size": 2, "max_length": 768,
                      "report_to": ["tensorboard"], "dpo": {"loss_type": ["sigmoid"]}},
            "evaluation": {"dataset": {"name": "generated", "split": "test", "limit": 2,
                                       "args": {"people": 2, "filler_sentences": 0}}, "flip": True}}
    (tmp_path / "loop.yaml").write_text(yaml.safe_dump(loop))
    run_dir = tmp_path / "runs" / "hub-debate"
    done = run_commands([
        ["run", "debate.yaml", "--output-dir", str(tmp_path / "runs"), "--run-name", "hub-debate"],
        ["export", "sft", str(run_dir), "-o", str(tmp_path / "sft")],
        ["train", "sft", str(tmp_path / "sft"), "-o", str(tmp_path / "adapter"), "--model", "tiny-hub",
         "--max-steps", "2", "--report-to", "tensorboard"],
        [str(Path(__file__).resolve().parents[2] / "scripts" / "run_iterative_dpo.py"), "--configuration", "loop.yaml"],
    ], cwd=tmp_path, env=env)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-5000:]
    assert any(p.endswith("/model.safetensors") for p in hub.downloads()), "the weights came from the hub"
    cache = tmp_path / "hf-home" / "hub" / "models--sparring-test--tiny-chat"
    assert (cache / "snapshots").is_dir(), "downloaded into the standard Hugging Face cache"
    assert (run_dir / "episodes.jsonl").is_file()
    rows = [json.loads(line) for line in (tmp_path / "sft" / "train.jsonl").read_text().splitlines()]
    assert rows and all(r["messages"][-1]["role"] == "assistant" for r in rows)

    assert "SFT:" in out and (tmp_path / "adapter" / "adapter_config.json").is_file()
    assert "loss" in tensorboard_scalars(tmp_path / "adapter") or "train/loss" in tensorboard_scalars(
        tmp_path / "adapter")

    loop_dir = tmp_path / "runs" / "hub-dpo"
    state = json.loads((loop_dir / "state.json").read_text())
    assert state["iterations"]["1"]["done"] == ["play", "export", "train", "register", "check", "evaluate"]
    scalars = tensorboard_scalars(loop_dir)
    assert any(t.startswith("heldout/win_rate_vs_") for t in scalars), scalars  # the loop's own numbers
    assert any("rewards" in t for t in scalars), scalars  # TRL's DPO curves

    hub.stop()  # no network from here on: the cache is enough
    offline = {**env, "HF_HUB_OFFLINE": "1"}
    cli = [sys.executable, "-m", "sparring.cli"]
    (tmp_path / "again.yaml").write_text(yaml.safe_dump({"name": "hub-again", **DEBATE}))
    run([*cli, "run", "again.yaml", "--output-dir", str(tmp_path / "runs"), "--run-name", "hub-again"], offline,
        tmp_path)
    assert (tmp_path / "runs" / "hub-again" / "episodes.jsonl").is_file()
