"""TextArena's games on sparring, against the real installed package (no mock): TicTacToe, Kuhn Poker
and SimpleNegotiation play with scripted baselines; seats, flips, seeds, invalid moves, forks and
outcomes translate; unknown or unavailable environments are clear errors; the games run through
`sparring run`, `sparring bench`, export, the web app and GRPO."""

from __future__ import annotations

import json
import random

import pytest

pytest.importorskip("textarena")

from sparring.engine.play import Arena  # noqa: E402
from sparring.errors import SparringError  # noqa: E402
from sparring.gameapi import GAMES  # noqa: E402

SHIPPED = [("TicTacToe-v0", "textarena-random"), ("KuhnPoker-v0", "textarena-random"),
           ("SimpleNegotiation-v0", "textarena-negotiator")]


def config(env_id: str, a: str, b: str, n: int = 4, split: str = "test", flip: bool = True) -> dict:
    return {"name": f"ta-{env_id}", "game": "textarena", "game_args": {"env_id": env_id},
            "dataset": {"name": "seeds", "split": split, "args": {"n": n}},
            "agents": {"a": {"role": "player", "model": a}, "b": {"role": "player", "model": b}},
            "tournament": {"type": "custom", "matchups": [["a", "b"]], "flip": flip}, "run": {"seed": 0}}


@pytest.mark.parametrize("env_id,baseline", SHIPPED)
def test_the_shipped_games_play_to_the_end_with_their_baselines(env_id, baseline):
    with Arena.from_config(config(env_id, baseline, baseline)) as arena:
        records = arena.play(arena.jobs())
    assert len(records) == 8 and all(r.status == "complete" for r in records), [r.error for r in records]
    for r in records:
        assert set(r.outcome.rewards) == {"Player 0", "Player 1"}
        assert r.outcome.metrics["invalid_rate"] == 0.0 and r.outcome.metrics["turns"] >= 2
        assert r.events and all(e.tag == "move" for e in r.events)
        own = [c for c in r.calls if c.player == "Player 0"]
        assert own[0].messages[0].role == "system" and "Player" in own[0].messages[1].content
    if env_id != "SimpleNegotiation-v0":
        assert all(r.outcome.winner in ("Player 0", "Player 1") for r in records)
        # the reason names players as sparring does, also in a flipped game (TextArena's own numbering
        # said "Player 0 has won!" beside winner "Player 1")
        assert all(r.outcome.reason.startswith(f"{r.outcome.winner} ") for r in records), \
            [(r.flip, r.outcome.winner, r.outcome.reason) for r in records]
    firsts = {r.outcome.metrics["first_mover"] for r in records}
    assert firsts == {"Player 0", "Player 1"}  # flip seats the agents the other way round


def test_seeds_of_train_and_test_never_overlap_and_replay_the_same_game():
    game = GAMES.get("textarena")()
    from sparring.gameapi.game import DatasetConfig

    train = game.load_instances(DatasetConfig(name="seeds", split="train", args={"n": 500}), base_dir=None)
    test = game.load_instances(DatasetConfig(name="seeds", split="test", args={"n": 500}), base_dir=None)
    assert not {i.seed for i in train} & {i.seed for i in test}
    with Arena.from_config(config("KuhnPoker-v0", "textarena-random", "textarena-random", n=2)) as arena:
        one = [r.events for r in arena.play(arena.jobs())]
    with Arena.from_config(config("KuhnPoker-v0", "textarena-random", "textarena-random", n=2)) as arena:
        two = [r.events for r in arena.play(arena.jobs())]
    assert one == two


def test_a_seed_deals_the_same_cards_whatever_else_is_played_beside_it():
    """TextArena draws from Python's global generator: each episode keeps its own state, so a seed
    played alone, in a batch of 8, or after other games, is the same game (paired comparisons)."""
    import numpy as np

    def cards(max_live: int, order: int) -> dict[str, list]:
        with Arena.from_config(config("KuhnPoker-v0", "textarena-random", "textarena-random", n=8)) as arena:
            jobs = arena.jobs()[::order]
            out = {}
            for r in arena.play(jobs, max_live=max_live):
                obs = [c.messages[-1].content for c in r.calls if c.op == "generate"]
                out[f"{r.instance_id}/{r.flip}"] = [o for o in obs if "card" in o.lower()]
            return out

    random.seed(123)
    before = (random.random(), np.random.random())
    random.seed(123)
    np.random.seed(0)
    alone, batched, reversed_ = cards(1, 1), cards(8, 1), cards(8, -1)
    assert alone == batched == reversed_ and len(alone) == 16 and all(alone.values())
    random.seed(123)
    assert random.random() == before[0]  # the global generator is left as the caller had it


def test_invalid_moves_are_textarenas_own_and_counted():
    from sparring.models.scripted import ScriptedModel

    cfg = config("TicTacToe-v0", "babbler", "textarena-random", n=2, flip=False)
    babbler = ScriptedModel("babbler", mode="fixed", texts=["I would like to think about it"])
    with Arena.from_config(cfg, models={"babbler": babbler}) as arena:
        records = arena.play(arena.jobs())
    for r in records:
        assert r.outcome.metrics["invalid_moves"]["Player 0"] >= 1 and r.outcome.metrics["invalid_rate"] > 0
        assert r.outcome.winner == "Player 1" and "format" in r.outcome.reason  # TextArena's reason
        assert any(e.meta["invalid"] for e in r.events)


def test_a_forked_state_plays_on_independently():
    from sparring.gameapi import Action
    from sparring.gameapi.game import Seat
    from sparring.prompts import PromptSet

    game = GAMES.get("textarena")(GAMES.get("textarena").Config(env_id="TicTacToe-v0"))
    inst = game.InstanceType(id="t", seed=3)
    prompts = PromptSet("textarena", {"system": ["Play."], "observation": ["{{ observation }}"]})
    seats = {p: Seat(player=p, agent=p, prompts=prompts) for p in game.players()}
    state = game.reset(inst, seats, random.Random(0))
    other = game.fork(state)
    game.act(state, "Player 0", Action(text="[4]"))
    assert "[Player 0] [4]" not in game.observation(other, "Player 0")[1].content
    assert other.turns == 0 and state.turns == 1 and not other.events


def test_unknown_and_unavailable_environments_are_clear_errors():
    from sparring.games.textarena.envs import make, probe

    with pytest.raises(SparringError, match="no environment 'TicTacTo-v0'"):
        make("TicTacTo-v0")
    players, why = probe("GuessWho-v0")  # its game master is a hosted model
    assert players is None and "API key" in why
    assert probe("KuhnPoker-v0") == (2, None) and probe("Minesweeper-v0") == (1, None)


@pytest.mark.slow
def test_run_export_bench_and_the_cli(tmp_path):
    from typer.testing import CliRunner

    from sparring.cli.root import app

    runner = CliRunner()
    cfg = tmp_path / "ta.yaml"
    import yaml

    cfg.write_text(yaml.safe_dump(config("TicTacToe-v0", "textarena-random", "textarena-random", n=3)))
    out = runner.invoke(app, ["run", str(cfg), "-o", str(tmp_path / "runs"), "--run-name", "ta", "-q"])
    assert out.exit_code == 0, out.output
    assert (tmp_path / "runs" / "ta" / "report" / "report.html").is_file()
    out = runner.invoke(app, ["export", "sft", str(tmp_path / "runs" / "ta"), "-o", str(tmp_path / "sft")])
    assert out.exit_code == 0, out.output
    rows = [json.loads(x) for x in (tmp_path / "sft" / "train.jsonl").read_text().splitlines()]
    assert rows and {r["meta"]["game"] for r in rows} == {"textarena"}
    out = runner.invoke(app, ["bench", "textarena-random", "--suite", "textarena", "--instances", "2",
                              "-o", str(tmp_path / "bench")])
    assert out.exit_code == 0, out.output
    bench = json.loads((tmp_path / "bench" / "bench.json").read_text())
    assert {g["status"] for g in bench["games"].values()} == {"ok"} and len(bench["games"]) == 3
    out = runner.invoke(app, ["textarena", "list"])
    assert out.exit_code == 0 and out.output.count("yes") == 3


def test_a_person_plays_tictactoe_in_the_browser(tmp_path):
    import re
    import time

    import yaml
    from fastapi.testclient import TestClient

    from sparring.web.app import create_app

    (tmp_path / "configs" / "experiments").mkdir(parents=True)
    cfg = config("TicTacToe-v0", "textarena-random", "textarena-random", n=2, flip=False)
    (tmp_path / "configs" / "experiments" / "ta-web.yaml").write_text(yaml.safe_dump({**cfg, "name": "ta-web"}))
    import os

    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        client = TestClient(create_app(tmp_path / "runs"), base_url="http://127.0.0.1")
        page = client.get("/play").text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
        r = client.post("/play", data={"csrf": csrf, "config": "ta-web"}, follow_redirects=False)
        assert r.status_code == 303, r.text[:800]
        url = r.headers["location"]
        for _ in range(9):
            for _ in range(100):
                html = client.get(url).text
                if 'data-status="waiting"' not in html:
                    break
                time.sleep(0.05)
            if 'data-status="complete"' in html or 'data-status="aborted"' in html:
                break
            seq = re.search(r'name="seq" value="(\d+)"', html).group(1)
            move = re.findall(r"&#39;(\[\d\])&#39;", html) or re.findall(r"'(\[\d\])'", html)
            client.post(f"{url}/act", data={"csrf": csrf, "seq": seq, "text": move[-1] if move else "[4]"})
        assert 'data-status="complete"' in client.get(url).text
    finally:
        os.chdir(cwd)
    from sparring.records.reader import iter_records

    (rec,) = list(iter_records(tmp_path / "runs" / "web-ta-web"))
    assert any(s.agent == "human" for s in rec.seats.values()) and rec.outcome is not None


@pytest.mark.slow
def test_grpo_trains_on_a_textarena_game(tmp_path):
    """The shipped GRPO config's game, with the tiny model: two steps through `run_online`."""
    import yaml

    from sparring.models.tiny import save_tiny_model
    from sparring.train.online.launch import load_online, run_online

    config, _ = load_online("grpo-textarena")
    tiny = save_tiny_model(tmp_path / "tiny", vocab=1024)
    data = config.model_dump()
    data.update(model=str(tiny), max_steps=2, num_generations=2, save_steps=0, output_dir=str(tmp_path / "out"))
    data["experiment"]["agents"]["learner"]["sampling"]["max_new_tokens"] = 6
    path = tmp_path / "grpo.yaml"
    path.write_text(yaml.safe_dump(data))
    config, file = load_online(str(path))
    run_online(config, file)
    steps = [json.loads(x) for x in (tmp_path / "out" / "rewards.jsonl").read_text().splitlines()]
    assert len(steps) == 2 and (tmp_path / "out" / "adapter" / "adapter_config.json").is_file()


def test_kuhn_poker_pays_chips_per_hand_with_one_hand_a_game_and_the_rule_player():
    """`env_kwargs` reach the environment (one hand a game); `reward: chips` pays each player the
    chips it won per hand (zero-sum); the rule player never folds a King and never bets a Jack."""
    cfg = config("KuhnPoker-v0", "textarena-kuhn-rule", "textarena-random", n=16)
    cfg["game_args"] = {"env_id": "KuhnPoker-v0", "env_kwargs": {"max_rounds": 1}, "reward": "chips"}
    with Arena.from_config(cfg) as arena:
        records = arena.play(arena.jobs())
    assert len(records) == 32 and all(r.status == "complete" for r in records)
    for r in records:
        m = r.outcome.metrics
        assert m["hands"] == 1 and not m["forfeit"]
        assert r.outcome.rewards == m["payoff_per_hand"] and sum(r.outcome.rewards.values()) == 0
        assert set(r.outcome.rewards.values()) == {-1.0, 1.0}  # TextArena's pot is the antes: a hand is +-1
        rule = next(p for p, s in r.seats.items() if s.agent == "a")
        for call in (c for c in r.calls if c.player == rule):
            obs, move = "\n".join(m.content for m in call.messages), call.completions[0].text  # either view
            card = obs.rsplit("Your card is: '", 1)[1][0]
            assert not (card == "K" and move == "[fold]") and not (card == "J" and move == "[bet]")


def test_an_environment_keyword_it_does_not_take_is_a_clear_error():
    cfg = config("TicTacToe-v0", "textarena-random", "textarena-random", n=1)
    cfg["game_args"] = {"env_id": "TicTacToe-v0", "env_kwargs": {"max_rounds": 1}}
    with Arena.from_config(cfg) as arena:
        records = arena.play(arena.jobs())
    assert all(r.status == "failed" and "does not take ['max_rounds']" in (r.error or "") for r in records)


def test_a_forfeit_by_invalid_moves_loses_every_hand():
    from sparring.models.scripted import ScriptedModel

    cfg = config("KuhnPoker-v0", "mumbler", "textarena-random", n=2)
    cfg["game_args"] = {"env_id": "KuhnPoker-v0", "env_kwargs": {"max_rounds": 3}, "reward": "chips"}
    with Arena.from_config(cfg, models={"mumbler": ScriptedModel("mumbler", text="I think so.")}) as arena:
        records = arena.play(arena.jobs())
    for r in records:
        mumbler = next(p for p, s in r.seats.items() if s.agent == "a")
        other = next(p for p in r.seats if p != mumbler)
        assert r.outcome.metrics["forfeit"] and r.outcome.rewards == {mumbler: -1.0, other: 1.0}


def test_kuhn_poker_with_bets_pays_a_called_bet_at_two():
    """sparring's KuhnPokerBets-v0: TextArena's Kuhn Poker (its dealing, turns, observations, format)
    with bets and calls paid into the pot, as the game is defined; TextArena's own pot is the antes."""
    cfg = config("KuhnPokerBets-v0", "textarena-kuhn-rule", "textarena-random", n=24)
    cfg["game_args"] = {"env_id": "KuhnPokerBets-v0", "env_kwargs": {"max_rounds": 1}, "reward": "chips"}
    seen = set()
    with Arena.from_config(cfg) as arena:
        records = arena.play(arena.jobs())
    for r in records:
        assert r.status == "complete" and sum(r.outcome.rewards.values()) == 0
        moves = [c.completions[0].text for c in r.calls]
        stake = 2.0 if "[call]" in moves else 1.0  # a called bet is won or lost at 2, anything else at 1
        assert set(map(abs, r.outcome.rewards.values())) == {stake}, (moves, r.outcome.rewards)
        seen.add(stake)
    assert seen == {1.0, 2.0}
    from sparring.games.textarena.envs import env_ids

    assert "KuhnPokerBets-v0" in env_ids()
