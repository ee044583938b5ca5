"""sparring games as verifiers v1 environments, played by verifiers' own eval runner against a local
OpenAI-compatible server: Deal or No Deal self-play, a debate with a judge seat (frozen, then pinned
to another model), and TextArena Kuhn Poker against the engine's random player. Each seat's trace
reward equals what sparring's engine gives for the same replies. Skipped without `sparring[verifiers]`."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from held_games import debate_experiment, dond_experiment, engine_rewards, kuhn_experiment

from sparring.integrations.verifiers.package import write_package

# verifiers is imported by the tests that use it, not at collection: its import (~10 s) would be
# paid by every pytest process, most of which run none of these tests
pytestmark = pytest.mark.skipif(importlib.util.find_spec("verifiers") is None,
                                reason="needs sparring[verifiers]")


@pytest.fixture
def install(tmp_path, monkeypatch):
    """Write a package and make it importable, as `pip install` would."""
    monkeypatch.setenv("VF_RUN_ID", "sparring-test")  # the runner sets it for its subprocesses

    def go(experiment, name, seats=None):
        pkg = write_package(experiment, tmp_path / name, name=name, seats=seats)
        monkeypatch.syspath_prepend(str(pkg.path))
        return pkg
    return go


def evaluate(server, tmp_path, env, num_rollouts=1, max_concurrent=None):
    """Episodes of every task, run by verifiers' eval runner (`vf-eval`'s, in process)."""
    from verifiers.v1.cli.eval.runner import run_eval
    from verifiers.v1.configs.cli.eval import EvalConfig

    config = EvalConfig.model_validate({
        "env": env, "model": "policy", "num_rollouts": num_rollouts, "max_concurrent": max_concurrent,
        "client": {"base_url": server.openai_base_url, "api_key_var": "SPARRING_TEST_NO_KEY"},
        "push": False, "rich": None, "output_dir": str(tmp_path / "runs")})
    return asyncio.run(run_eval(config))


def seat_rewards(episodes):
    """(instance, matchup, mirrored) -> {player: reward} from the traces, the same for every rollout."""
    out: dict[tuple, dict[str, float]] = {}
    for episode in episodes:
        assert episode.ok, [e.message for e in episode.errors]
        facts = [t.info["sparring"] for t in episode.traces]
        key = (facts[0]["instance_id"], facts[0]["matchup"], facts[0]["flip"])
        got = {f["player"]: t.rewards["outcome"].score for f, t in zip(facts, episode.traces, strict=True)}
        assert out.setdefault(key, got) == got  # a task's rollouts: the same game for the same replies
    return out


def test_deal_or_no_deal_self_play(server, install, tmp_path):
    pkg = install(dond_experiment(), "sparring-vf-dond")
    server.requests.clear()
    episodes = evaluate(server, tmp_path, {"taskset": {"id": pkg.name}}, num_rollouts=2)
    assert len(episodes) == 8  # 2 scenarios x 2 seat orders x 2 rollouts, played concurrently
    for episode in episodes:
        assert sorted(t.agent.name for t in episode.traces) == ["player_1", "player_2"]
        assert all(t.agent.trainable and t.num_turns >= 2 for t in episode.traces)
        assert len({t.info["sparring"]["episode_id"] for t in episode.traces}) == 1
    assert len({e.traces[0].info["sparring"]["episode_id"] for e in episodes}) == 8  # a group's episodes differ
    assert {r.body.get("max_tokens") for r in server.requests} == {24}  # the seat agent's sampling
    assert all("seed" not in r.body for r in server.requests)  # a group's episodes must be free to differ
    expected = engine_rewards(dond_experiment(), server, ["negotiator"])
    got = seat_rewards(episodes)
    assert got == expected and any(v for r in got.values() for v in r.values())


def test_debate_with_a_judge_seat(server, install, tmp_path):
    pkg = install(debate_experiment(), "sparring-vf-debate")
    assert pkg.seats == ["debater_a", "debater_b", "judge"]
    episodes = evaluate(server, tmp_path, {"taskset": {"id": pkg.name}})
    assert len(episodes) == 2
    for episode in episodes:
        trainable = {t.agent.name: t.agent.trainable for t in episode.traces}
        assert trainable == {"debater_a": True, "debater_b": True, "judge": False}  # the judge evaluates
        judge = next(t for t in episode.traces if t.agent.name == "judge")
        assert "Give your verdict" in judge.branches[-1].messages[-2].content  # the engine's verdict instruction
    expected = engine_rewards(debate_experiment(), server, ["debater", "judge"])
    assert seat_rewards(episodes) == expected
    assert {r["Debater_A"] for r in expected.values()} == {0.8}  # the judge's 80% for A, as each side's reward

    # The judge pinned to a frozen endpoint (another model), and one debater frozen by name.
    server.requests.clear()
    episodes = evaluate(server, tmp_path, {"taskset": {"id": pkg.name}, "frozen": ["debater_b"],
                                           "judge": {"model": "frozen-judge"}})
    assert seat_rewards(episodes) == expected
    for episode in episodes:
        trainable = {t.agent.name: t.agent.trainable for t in episode.traces}
        assert trainable == {"debater_a": True, "debater_b": False, "judge": False}
    models = {r.body["model"] for r in server.requests if "Give your verdict" in r.body["messages"][-1]["content"]}
    assert models == {"frozen-judge"}


def test_textarena_against_the_engines_partner(server, install, tmp_path):
    pytest.importorskip("textarena")
    pkg = install(kuhn_experiment(), "sparring-vf-kuhn", seats=["smol"])
    # one episode at a time: TextArena deals from Python's global random module (see held_games)
    episodes = evaluate(server, tmp_path, {"taskset": {"id": pkg.name}}, max_concurrent=1)
    assert len(episodes) == 4 and all(len(e.traces) == 1 for e in episodes)  # the random player has no trace
    got, expected = seat_rewards(episodes), engine_rewards(kuhn_experiment(), server, ["smol"])
    assert got == {k: {"Player 0": v["Player 0"]} for k, v in expected.items()}  # smol's seat, mirrored or not


def test_package_loads_as_verifiers_does_and_splits(install):
    pkg = install(dond_experiment(), "sparring-vf-split")
    module = importlib.import_module(pkg.module)
    env = module.load_environment(taskset={"split": "test", "limit": 3})
    import verifiers.v1 as vf

    assert isinstance(env, vf.Env) and type(env).__name__ == "SparringVfSplitEnv"
    test_ids = {t.data.instance_id for t in env.taskset}
    train_ids = {t.data.instance_id for t in module.load_environment(taskset={"split": "train"}).taskset}
    assert len(test_ids) == 3 and not test_ids & train_ids  # the held-out split shares no scenario
    with pytest.raises(ValueError, match="frozen: unknown seat"):
        module.load_environment(frozen=["nobody"])
    # verifiers' own loader, as docs/scale-out.md shows it: in verifiers.v1, from a resolved config
    own = vf.load_environment(vf.resolve_env_config({"taskset": {"id": pkg.name, "split": "test"}}))
    own_ids = {t.data.instance_id for t in own.taskset}
    assert type(own).__name__ == "SparringVfSplitEnv" and own_ids and not own_ids & train_ids


@pytest.mark.slow
def test_vf_eval_command_line_accepts_the_documented_options(install, tmp_path):
    """`vf-eval NAME -m MODEL --client.base-url URL -n 4 --env.taskset.split test --no-push`, as the
    package's README and the docs write it (a dry run: the config resolves, nothing is played)."""
    pkg = install(dond_experiment(), "sparring-vf-cli")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(pkg.path), *sys.path])}
    cmd = [str(Path(sys.executable).parent / "vf-eval"), pkg.name, "-m", "policy", "--client.base-url",
           "http://127.0.0.1:9/v1", "-n", "4", "--env.taskset.split", "test", "--no-push", "--dry-run",
           "-o", str(tmp_path / "out"), "--env.player_1.model", "frozen"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_docs_prime_rl_configs_resolve(install):
    """The `env` blocks of docs/scale-out.md's prime-rl configs, against the packages it writes."""
    import re

    import tomllib
    import verifiers.v1 as vf

    install("dond-quickstart", "sparring-dond")
    install("quickstart", "sparring-debate")
    text = (Path(__file__).resolve().parents[2] / "docs" / "scale-out.md").read_text(encoding="utf-8")
    configs = [tomllib.loads(block) for block in re.findall(r"```toml\n(.*?)```", text, re.S)]
    assert len(configs) == 2 and all(c["orchestrator"]["algo"]["type"] == "rae" for c in configs)
    from renderers.base import MODEL_RENDERER_MAP  # the renderer prime-rl picks for the model (issue #61)

    assert all(c["orchestrator"]["renderer"]["name"] == MODEL_RENDERER_MAP[c["model"]["name"]] for c in configs)
    seen = {}
    for config in configs:
        for group in ("train", "eval"):
            for source in config["orchestrator"].get(group, {}).get("source", []):
                env = vf.resolve_env_config(source["env"])
                seen[(source["name"], group)] = env
    assert seen[("dond", "train")].format_penalty == 0.1 and seen[("dond", "train")].taskset.split == "train"
    assert seen[("dond-held-out", "eval")].taskset.split == "test"
    judge = seen[("debate", "train")].judge
    assert judge.model == "Qwen/Qwen3-8B" and judge.client.base_url.endswith(":8000/v1")
