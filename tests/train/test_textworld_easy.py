"""The textworld-easy-rl experiment's parts that need no model: what a policy did in its games (from
the records), the RL curves read back from the online trainer's step log and drawn, and the
training games' settings (the failure penalty on training games only, sparring's trainer)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from sparring.learning.context import Context
from sparring.learning.experiments import textworld_easy_rl as te

RECIPE = ("Gather all following ingredients and follow the directions to prepare this tasty meal.\n\n"
          "Ingredients:\n  red apple\n\nDirections:\n  slice the red apple\n  roast the red apple\n  prepare meal\n")


def _game(commands: list[tuple[str, bool]], end: str) -> SimpleNamespace:
    events = [SimpleNamespace(tag="command", content="read cookbook", meta={"valid": True}),
              SimpleNamespace(tag="observation", content=RECIPE, meta={})]
    events += [SimpleNamespace(tag="command", content=c, meta={"valid": ok}) for c, ok in commands]
    return SimpleNamespace(events=events, outcome=SimpleNamespace(metrics={"success": end == "success", "end": end}))


def test_behaviour_counts_endings_commands_cooking_and_the_wrong_appliance():
    games = [_game([("take red apple", True), ("slice red apple", True), ("cook red apple in oven", True),
                    ("prepare meal", True), ("eat meal", True)], "success"),
             _game([("take red apple", True), ("cook red apple in stove", True)], "failure"),
             _game([("take knife", False), ("take knife", False), ("eat meal", False)], "max_steps")]
    b = te.behaviour(games)
    assert b["ends"] == {"success": 1, "failure": 1, "max_steps": 1} and b["games"] == 3
    assert b["games_that_cooked"] == 2 and b["lost_to_wrong_appliance"] == 1
    assert b["valid_commands"]["cook"] == 2 and b["valid_commands"]["read"] == 3
    assert b["invalid_commands"] == {"take": 2, "eat": 1}
    # the recipe roasts: the oven is its appliance; the first game tried it first, the second the stove
    assert b["first_cook"] == {"games": 2, "recipe_appliance": 1,
                               "by_recipe": {"oven -> oven": 1, "oven -> stove": 1}}


def test_curves_are_read_from_the_step_log_and_drawn(tmp_path: Path):
    from sparring.learning.arms import Arm
    from sparring.train.online.steplog import read_step_log

    run = tmp_path / "online"
    run.mkdir()
    points = [{"step": 1, "reward": 0.9, "kl": None, "entropy": 0.4, "pg_loss": 0.1, "game/success": 0.1},
              {"step": 1, "reward": 0.2, "kl": None, "entropy": 0.4, "pg_loss": 0.1, "game/success": 0.1},
              {"step": 2, "reward": 0.4, "kl": 0.05, "entropy": 0.5, "pg_loss": 0.0, "game/success": 0.3}]
    (run / "grpo.jsonl").write_text("".join(json.dumps(p) + "\n" for p in points), encoding="utf-8")
    arm = Arm("adapter", 0.0, [], read_step_log(run / "grpo.jsonl"))  # as the arm runner reads it: a replayed step once
    c = arm.curves(("step", *te.CURVE_KEYS))
    assert c["step"] == [1, 2] and c["reward"] == [0.2, 0.4] and c["kl"] == [None, 0.05]
    assert c["vf_loss"] == [None, None]  # GRPO has no value head: the panel says so
    from sparring.learning.report import plot_training

    png = plot_training({"grpo": c}, tmp_path / "curves" / "training.png", te.TRAINING_PANELS)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_failure_penalty_is_on_the_training_games_only(tmp_path: Path):
    from sparring.learning.experiments.textworld_sft import game_config

    ctx = Context(out=tmp_path, size="full", model="smollm2-135m", label="smollm2-135m")
    size = te.SIZES["full"]
    _, _, extra = te.ARMS[0]
    settings = te.arm_settings(ctx, size, extra)
    games = settings["experiment"]
    assert games["dataset"]["split"] == "train" and games["game_args"]["failure_penalty"] == size["failure_penalty"] > 0
    assert games["dataset"]["args"]["params"] == te.WORLD
    assert games["agents"]["cook"]["sampling"]["temperature"] == 1.0  # rollout log-probs are exact at T=1
    assert settings["trainer"] == "sparring" and settings["learning_rate"] == size["lr"]
    heldout = game_config("x", "dev", size["heldout"], size, {"temperature": 0.0})
    assert "failure_penalty" not in heldout["game_args"] and heldout["dataset"]["split"] == "dev"


def test_textworld_turn_rl_credits_each_command_against_the_same_turn_of_its_group(tmp_path: Path):
    """textworld-turn-rl: textworld-easy-rl's training games and rates, per-step credit measured
    against the group's commands at the same turn number, a valid online config, more steps."""
    from sparring.learning.experiments import textworld_turn_rl as tt
    from sparring.learning.experiments.textworld_rl import arm_config
    from sparring.train.online.config import OnlineConfig

    ctx = Context(out=tmp_path, size="full", model="smollm2-135m", label="smollm2-135m")
    size = tt.SIZES["full"]
    assert size["grpo_steps"] > te.SIZES["full"]["grpo_steps"]
    assert {k: v for k, v in size.items() if k != "grpo_steps"} == {k: v for k, v in te.SIZES["full"].items()
                                                                     if k != "grpo_steps"}
    _, extra = tt.ARM
    config = OnlineConfig.model_validate(arm_config(ctx, size, "start", "grpo", te.arm_settings(ctx, size, extra)))
    assert (config.credit, config.turn_baseline, config.engine) == ("turn", "turn_index", "sparring")
    assert config.max_steps == size["grpo_steps"] and config.experiment["game_args"]["failure_penalty"] > 0
    assert tt.START == "textworld-easy-rl-start"  # the start textworld-easy-rl registers, reused when present


def test_textworld_turn_rl_state_changes_only_the_baseline_of_the_refused_run(tmp_path: Path):
    """textworld-turn-rl-state: textworld-turn-rl-refused's sizes and settings with each command
    measured against the commands played from the same game state."""
    from sparring.learning.experiments import textworld_turn_rl_refused as refused
    from sparring.learning.experiments import textworld_turn_rl_state as state
    from sparring.learning.experiments.textworld_rl import arm_config
    from sparring.train.online.config import OnlineConfig

    ctx = Context(out=tmp_path, size="full", model="smollm2-135m", label="smollm2-135m")
    size = state.SIZES["full"]
    assert size == refused.SIZES["full"] and size["invalid_penalty"] == 0.05
    assert {k: v for k, v in state.ARM_STATE[1].items() if k != "turn_baseline"} == {
        k: v for k, v in refused.ARM_REFUSED[1].items() if k != "turn_baseline"}
    config = OnlineConfig.model_validate(arm_config(ctx, size, "start", "grpo",
                                                    te.arm_settings(ctx, size, state.ARM_STATE[1])))
    assert (config.credit, config.turn_baseline, config.gamma) == ("turn", "state", 0.9)


def test_textworld_turn_rl_state_64_runs_the_state_arm_from_the_64_gold_game_start(tmp_path: Path):
    """textworld-turn-rl-state-64: textworld-turn-rl-state's arm (state baseline, gamma 0.9, refused
    commands charged) with textworld-turn-rl's sizes and start (64 gold games, lr 2e-4, 14 steps)."""
    from sparring.learning.experiments import textworld_turn_rl as tt
    from sparring.learning.experiments import textworld_turn_rl_state as state
    from sparring.learning.experiments import textworld_turn_rl_state_64 as state64
    from sparring.learning.experiments.textworld_rl import arm_config
    from sparring.learning.registry import load_experiments
    from sparring.train.online.config import OnlineConfig

    ctx = Context(out=tmp_path, size="full", model="smollm2-135m", label="smollm2-135m")
    size = state64.SIZES["full"]
    assert {k: v for k, v in size.items() if k != "invalid_penalty"} == tt.SIZES["full"]
    assert size["invalid_penalty"] == 0.05 and size["train"] == 64 and size["grpo_steps"] == 14
    config = OnlineConfig.model_validate(arm_config(ctx, size, "start", "grpo",
                                                    te.arm_settings(ctx, size, state.ARM_STATE[1])))
    assert (config.credit, config.turn_baseline, config.gamma) == ("turn", "state", 0.9)
    assert config.experiment["game_args"]["invalid_penalty"] == 0.05
    assert "textworld-turn-rl-state-64" in load_experiments()


def test_textworld_turn_rl_state_128_changes_only_the_start_of_the_64_game_run(tmp_path: Path):
    """textworld-turn-rl-state-128: textworld-turn-rl-state-64's RL, sizes and rate from a start of
    its own, fitted on 128 gold games (one epoch) instead of 64."""
    from sparring.learning.experiments import textworld_turn_rl_state_64 as state64
    from sparring.learning.experiments import textworld_turn_rl_state_128 as state128
    from sparring.learning.registry import load_experiments

    for size in ("quick", "full"):
        ours, theirs = state128.SIZES[size], state64.SIZES[size]
        assert {k: v for k, v in ours.items() if k not in ("train", "steps")} == {
            k: v for k, v in theirs.items() if k not in ("train", "steps")}
    full = state128.SIZES["full"]
    assert full["train"] == full["steps"] == 128 and full["rl_games"] == 64 and full["grpo_steps"] == 14
    assert "textworld-turn-rl-state-128" in load_experiments()


def test_textworld_turn_rl_state_128_fits_its_own_start_and_runs_the_state_arm(tmp_path: Path, monkeypatch):
    """The experiment hands run_from its own start stage (never textworld-easy-rl's 64-game one) and
    the same-state arm."""
    from sparring.learning.experiments import textworld_turn_rl as turn
    from sparring.learning.experiments import textworld_turn_rl_state as state
    from sparring.learning.experiments import textworld_turn_rl_state_128 as state128

    seen = {}
    monkeypatch.setattr(turn, "run_from", lambda ctx, name, size, start, arm: seen.update(
        name=name, size=size, start=start, arm=arm) or "ran")
    ctx = Context(out=tmp_path, size="full", model="smollm2-135m", label="smollm2-135m")
    assert state128.run(ctx) == "ran"
    assert seen == {"name": "textworld-turn-rl-state-128", "size": state128.SIZES["full"],
                    "start": "textworld-turn-rl-state-128-start", "arm": state.ARM_STATE}
    assert seen["start"] != turn.START


def _world(seed: int, recipe_step: str | None) -> SimpleNamespace:
    recipe = ("Ingredients:\n  red apple\n\nDirections:\n" + (f"  {recipe_step} the red apple\n" if recipe_step else "")
              + "  prepare meal\n")
    events = [SimpleNamespace(tag="observation", content=recipe, meta={})]
    return SimpleNamespace(instance={"seed": seed}, events=events)


def test_balanced_worlds_take_each_recipe_kind_in_turn():
    """textworld-turn-rl-balanced's training worlds: the gold games' worlds by the appliance their
    recipe asks for, one of each kind in turn (seeds ascending within a kind), until n or none left."""
    from sparring.learning.experiments.textworld_turn_rl_balanced import balanced_worlds, recipe_kind

    games = [_world(s, "grill") for s in (9, 1, 3, 5)] + [_world(2, "roast"), _world(8, "fry"), _world(4, None),
                                                           _world(6, None), _world(1, "grill")]  # 1 played twice
    assert [recipe_kind(g) for g in games[4:7]] == ["oven", "stove", "none"]
    assert recipe_kind(games[0]) == "barbeque/toaster"
    # kinds in name order: barbeque/toaster, none, oven, stove
    assert balanced_worlds(games, 6) == [1, 4, 2, 8, 3, 6]
    assert balanced_worlds(games, 100) == [1, 4, 2, 8, 3, 6, 5, 9]  # every world once, the grill ones last
    assert balanced_worlds(games, 0) == []


def test_cooking_labels_name_the_appliance_and_whether_the_recipe_asks_for_it():
    from sparring.learning.experiments.textworld_turn_rl import cooking_labels

    game = _game([("cook red apple in oven", True), ("cook red apple with stove", True), ("cook red apple in toaster",
                                                                                           True),
                  ("cook red apple in stove", False), ("eat meal", True)], "failure")
    assert cooking_labels(game) == ["other", "cook in oven, the recipe's", "other", "cook in toaster, not the recipe's",
                                    "cook in stove, refused", "other"]


def test_textworld_turn_rl_balanced_changes_only_the_training_worlds(tmp_path: Path, monkeypatch):
    """textworld-turn-rl-balanced: textworld-turn-rl-state-128's start, arm and sizes; RL on 28 worlds
    (one pass in 14 steps of 2) picked by balanced_worlds from the gold games, handed to the online
    config as the dataset's seeds."""
    from sparring.learning.experiments import textworld_turn_rl as turn
    from sparring.learning.experiments import textworld_turn_rl_balanced as balanced
    from sparring.learning.experiments import textworld_turn_rl_state as state
    from sparring.learning.experiments import textworld_turn_rl_state_128 as state128
    from sparring.learning.registry import load_experiments

    full = balanced.SIZES["full"]
    assert {k: v for k, v in full.items() if k != "rl_games"} == {
        k: v for k, v in state128.SIZES["full"].items() if k != "rl_games"}
    assert full["rl_games"] == full["grpo_steps"] * full["prompts"] == 28
    seen = {}
    monkeypatch.setattr(turn, "run_from", lambda ctx, name, size, start, arm, rl_worlds: seen.update(
        name=name, size=size, start=start, arm=arm, rl_worlds=rl_worlds) or "ran")
    ctx = Context(out=tmp_path, size="full", model="smollm2-135m", label="smollm2-135m")
    assert balanced.run(ctx) == "ran"
    assert seen == {"name": "textworld-turn-rl-balanced", "size": full, "start": "textworld-turn-rl-state-128-start",
                    "arm": state.ARM_STATE, "rl_worlds": balanced.balanced_worlds}
    assert "textworld-turn-rl-balanced" in load_experiments()


def _played(won: list[bool], refused: list[bool], prefix: str) -> SimpleNamespace:
    records = [SimpleNamespace(instance_id=f"{prefix}-{i}", outcome=SimpleNamespace(metrics={"success": w}),
                               events=[SimpleNamespace(tag="command", content="open fridge", meta={"valid": True}),
                                       SimpleNamespace(tag="command", content="eat it", meta={"valid": not bad})])
               for i, (w, bad) in enumerate(zip(won, refused, strict=True))]
    return SimpleNamespace(records=records, seconds=1.0)


class _Rounds:
    """`textworld_expert_iteration` with its model work replaced: the start, the held-out games (each
    alias's per-world success), the rounds' games (`rounds`, in order) and SFT, each call recorded."""

    def __init__(self, monkeypatch, tmp_path: Path, rounds: list[SimpleNamespace]):
        from sparring.learning.arms import Measured
        from sparring.learning.experiments import textworld_expert_iteration as ei
        from sparring.learning.experiments import textworld_turn_rl as turn
        from sparring.learning.results import rate

        self.plays: list[tuple] = []
        self.fits: list[tuple] = []
        gold = _played([True] * 2, [False] * 2, "gold")
        monkeypatch.setattr(turn, "sft_start", lambda ctx, name, size, stage: (gold, [{}, {}], "/a/start", "m@start",
                                                                               0.0, None))
        success = {"m@start": [0.0, 1.0, 0.0], "m@round1": [1.0, 1.0, 0.0], "m@round2": [1.0, 1.0, 1.0]}
        monkeypatch.setattr(ei.easy, "measure", lambda ctx, alias, run, size: Measured(
            {"success": rate(success[alias]), "score": rate(success[alias])},
            {"success": dict(enumerate(success[alias]))}, {}, ["dev"]))
        games = iter(rounds)

        def play(config, name):
            self.plays.append((name, config["agents"]["cook"]["model"], config["dataset"]["args"]["offset"],
                               config["agents"]["cook"]["sampling"]["temperature"]))
            return next(games)

        def sft(ctx, rows, size, seed, steps, name, adapter):
            self.fits.append((len(rows), steps, adapter))
            return SimpleNamespace(adapter=f"/a/{name}", loss=0.5), 1.0

        monkeypatch.setattr(ei, "sft", sft)
        monkeypatch.setattr(ei, "episode_rows", lambda kept: [r.instance_id for r in kept])
        self.ctx = Context(out=tmp_path, size="full", model="smollm2-135m", label="m")
        monkeypatch.setattr(self.ctx, "play", play)
        monkeypatch.setattr(self.ctx, "register", lambda stage, adapter: f"m@round{stage[-1]}")


def test_expert_iteration_trains_each_round_on_its_clean_wins_in_new_worlds(tmp_path: Path, monkeypatch):
    """Each round plays new training worlds (after the gold games' and the earlier rounds'), keeps the
    games won with every command accepted, continues SFT from the last adapter on them, and pairs its
    held-out games with the start's; a round without a clean win stops the experiment."""
    from sparring.learning.experiments import textworld_expert_iteration as ei
    from sparring.learning.registry import load_experiments

    size = {**ei.SIZES["full"], "ei_rounds": 3}
    monkeypatch.setitem(ei.SIZES, "full", size)
    fake = _Rounds(monkeypatch, tmp_path, [_played([True, True, False], [False, True, False], "r1"),
                                           _played([True, False, True], [False, False, False], "r2"),
                                           _played([True, False], [True, False], "r3")])
    exp = ei.run(fake.ctx)
    n, train, games = size["ei_games"], size["train"], "textworld-expert-iteration-round"
    assert fake.plays == [(f"{games}1-games", "m@start", train, 0.7), (f"{games}2-games", "m@round1", train + n, 0.7),
                          (f"{games}3-games", "m@round2", train + 2 * n, 0.7)]
    assert fake.fits == [(1, 1, "/a/start"), (2, 2, "/a/textworld-expert-iteration-round1")]  # round 3: none clean
    assert [s.name for s in exp.stages] == ["sft-start", "round-1", "round-2"]
    assert exp.stages[1].info["won"] == 2 and exp.stages[1].info["clean_wins"] == 1
    assert exp.paired["success round-2 - start"]["mean_diff"] == 2 / 3
    assert "r3-0" in exp.training_ids and any("round 3" in n and "stopped" in n for n in exp.notes)
    assert "textworld-expert-iteration" in load_experiments()


def test_the_expert_iteration_control_trains_one_round_on_every_game_of_the_same_run(tmp_path: Path, monkeypatch):
    """textworld-expert-iteration-all: one round, SFT on every game (lost, and won with a refused
    command, too), its games played under expert iteration's run name (the same games in one output)."""
    from sparring.learning.experiments import textworld_expert_iteration as ei
    from sparring.learning.experiments import textworld_expert_iteration_all as control
    from sparring.learning.registry import load_experiments

    assert control.SIZES["full"] == {**ei.SIZES["full"], "ei_rounds": 1, "ei_keep": "all"}
    fake = _Rounds(monkeypatch, tmp_path, [_played([True, True, False], [False, True, False], "r1")])
    exp = control.run(fake.ctx)
    assert fake.plays == [("textworld-expert-iteration-round1-games", "m@start", ei.SIZES["full"]["train"], 0.7)]
    assert fake.fits == [(3, 3, "/a/start")]
    assert exp.name == "textworld-expert-iteration-all" and [s.name for s in exp.stages] == ["sft-start", "round-1"]
    assert exp.stages[1].info["rows"] == 3 and exp.stages[1].info["clean_wins"] == 1
    assert "textworld-expert-iteration-all" in load_experiments()
