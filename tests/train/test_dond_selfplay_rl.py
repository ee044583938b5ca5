"""dond-selfplay-rl's pieces: both arms are valid online configs (self-play, a baseline per seat,
the arm's objective), lm-selfplay's scenarios are found beside the dialogues and their test split
shares no scenario with any training split, and each seat's points are read from the records."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from sparring.errors import SparringError

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "dond"


@pytest.mark.parametrize("size", ["quick", "full"])
def test_both_arms_are_self_play_configs_with_a_baseline_per_seat(tmp_path, size):
    from sparring.learning.context import Context
    from sparring.learning.experiments import dond_selfplay_rl as exp
    from sparring.train.online.config import OnlineConfig

    ctx = Context(out=tmp_path, size=size, model="smollm2-135m", label="smollm2-135m")
    configs = {arm: OnlineConfig.model_validate(exp.arm_config(ctx, exp.SIZES[size], str(tmp_path / "start"), arm))
               for arm in exp.ARMS}
    for cfg in configs.values():
        assert cfg.opponents.mode == "self_play" and cfg.baseline == "rae" and cfg.seats == [0, 1]
        assert cfg.reward_scale == "batch"
        assert cfg.adapter == str(tmp_path / "start") and cfg.engine == "sparring"
        assert cfg.experiment["dataset"]["split"] == "train"
        assert cfg.experiment["tournament"] == {"type": "self_play", "participants": ["learner"]}
    assert configs["self"].experiment["game_args"]["objective"] == "self"
    assert configs["lambda"].experiment["game_args"]["objective"] == "lambda"
    assert configs["lambda"].experiment["game_args"]["lam"] == 0.5
    # the arms differ only in the reward
    strip = [{**c.experiment, "game_args": {k: v for k, v in c.experiment["game_args"].items()
                                            if k not in ("objective", "lam")}} for c in configs.values()]
    assert strip[0] == strip[1]


def test_selfplay_txt_is_found_beside_the_dialogues_or_named_or_refused_clearly(tmp_path, monkeypatch):
    from sparring.learning.context import Context
    from sparring.learning.dond_eval import contexts_file

    monkeypatch.setenv("SPARRING_DATA_DIR", str(tmp_path / "nowhere"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "dond"
    folder.mkdir()
    (folder / "data.txt").write_text("x\n")
    (folder / "selfplay.txt").write_text("1 0 1 1 3 3\n")
    beside = Context(out=tmp_path, size="quick", model="m", label="m", data={"dond-dialogues": str(folder / "data.txt")})
    assert contexts_file(beside) == folder / "selfplay.txt"
    named = Context(out=tmp_path, size="quick", model="m", label="m", data={"dond-contexts": str(folder)})
    assert contexts_file(named) == folder / "selfplay.txt"
    (folder / "selfplay.txt").unlink()
    with pytest.raises(SparringError, match="--dond-contexts"):
        contexts_file(beside)


@pytest.mark.skipif(not (SHARED / "selfplay.txt").is_file(), reason="needs ../shared/data/dond")
def test_the_selfplay_txt_held_out_scenarios_are_no_training_scenario():
    """The held-out set's config, loaded as the engine loads it: its scenarios (by content, both
    seat orders) appear in neither the generated training split nor the dialogues' training split."""
    from sparring.games.negotiation.sources import load_instances
    from sparring.learning.dond_eval import contexts, dataset

    held = contexts(200, SHARED / "selfplay.txt")
    heldout = load_instances(held["name"], held["args"], split=held["split"], limit=held["limit"])
    train = dataset("train", 64)
    generated = load_instances(train["name"], train["args"], split=train["split"], limit=train["limit"])
    dialogues = load_instances("dond_dialogues", {"path": str(SHARED / "data.txt")}, split="train", limit=256)
    assert len(heldout) == 200 and len({x.scenario_key() for x in heldout}) == 200  # one game a scenario
    trained = {x.scenario_key() for x in generated + dialogues}
    assert len(generated) == 64 and len(dialogues) == 256
    assert not {x.scenario_key() for x in heldout} & trained


def test_each_seats_points_count_zero_without_a_deal():
    from sparring.learning.dond_eval import side_points

    def record(iid, deal, points):
        return SimpleNamespace(instance_id=iid, seats={"Player_1": None, "Player_2": None},
                               outcome=SimpleNamespace(metrics={"deal": deal, "points": points}))

    seats, low = side_points([record("a", True, {"Player_1": 10, "Player_2": 0}),
                              record("b", True, {"Player_1": 6, "Player_2": 7}),
                              record("c", False, {"Player_1": 5, "Player_2": 5})])
    assert seats == {"Player_1": [10.0, 6.0, 0.0], "Player_2": [0.0, 7.0, 0.0]}
    assert low == {"a": 0.0, "b": 6.0, "c": 0.0}


@pytest.mark.parametrize("stage, selfplay_partners, contexts_partners", [
    ("warm", ("fair-negotiator",), ()), ("middle", (), None), ("last", ("fair-negotiator", "m"), ("fair-negotiator",))])
def test_dond_selfplay_mutual_measures_each_stage_on_the_sets_and_partners_its_target_needs(
        tmp_path, monkeypatch, stage, selfplay_partners, contexts_partners):
    """The warm start plays fair-negotiator on the generated set (the pairing's baseline), a middle
    iteration only itself, the last both sets against fair-negotiator and the base model on the
    generated set; selfplay.txt's figures come prefixed, so neither set overwrites the other."""
    from sparring.learning.context import Context
    from sparring.learning.experiments import dond_selfplay_mutual as mutual

    calls, suffixes = [], []

    def measure(ctx, alias, name, size, partners, selfplay_data=None, partner_data=None, partner_suffix=""):
        calls.append((name, tuple(partners), selfplay_data, partner_data))
        suffixes.append(partner_suffix)
        return {"mutual_deal_rate": name}, {"mutual": {name: 1.0}}, [name], {"splits": name}

    monkeypatch.setattr(mutual, "measure", measure)
    ctx = Context(out=tmp_path, size="full", model="m", label="m")
    size = mutual.MUTUAL["full"]
    metrics, per, runs, info = mutual.measure_stage(ctx, size, tmp_path / "selfplay.txt", "m@x", "s",
                                                    stage == "last", warm=stage == "warm")
    assert calls[0][:2] == ("s", selfplay_partners) and calls[0][2] is None  # the generated test split
    # the warm start's partner games are not dond-selfplay's (32 a seat) under the same run name
    assert suffixes[0] == ("-16" if stage == "warm" else "")
    if contexts_partners is None:
        assert len(calls) == 1 and metrics == {"mutual_deal_rate": "s"} and runs == ["s"]
        return
    name, partners, data, partner_data = calls[1]
    assert (name, partners) == ("s-contexts", contexts_partners)
    assert data["name"] == "dond_selfplay" and data["split"] == "test" and data["limit"] == size["contexts"] == 32
    assert partner_data["limit"] == size["partner_heldout"] == 16
    assert metrics == {"mutual_deal_rate": "s", "contexts_mutual_deal_rate": "s-contexts"}
    assert per == {"mutual": {"s": 1.0}, "contexts mutual": {"s-contexts": 1.0}}
    assert info == {"splits": "s", "contexts_splits": "s-contexts"} and runs == ["s", "s-contexts"]


@pytest.mark.parametrize("size", ["quick", "full"])
def test_dond_mutual_rl_is_dond_rls_arm_from_the_mutual_policy_on_the_trainers_defaults(tmp_path, size):
    from sparring.learning.context import Context
    from sparring.learning.experiments import dond_mutual_rl as exp
    from sparring.learning.experiments import dond_rl
    from sparring.learning.experiments.dond_selfplay_mutual import MUTUAL
    from sparring.train.online.config import OnlineConfig

    ctx = Context(out=tmp_path, size=size, model="smollm2-135m", label="smollm2-135m")
    cfg = exp.arm_config(ctx, exp.SIZES[size], str(tmp_path / "mutual"))
    reference = dond_rl.arm_config(ctx, dond_rl.SIZES[size], str(tmp_path / "mutual"))
    assert {k: v for k, v in reference.items() if k not in ("disable_dropout", "merge_rollout")} == cfg
    online = OnlineConfig.model_validate(cfg)
    assert online.disable_dropout and online.merge_rollout  # the defaults, not dond-rl's as-measured settings
    assert online.experiment["agents"]["partner"]["model"] == "fair-negotiator"
    # measured on mutual's held-out sets and partner games, so the start is mutual's last stage again
    assert all(exp.SIZES[size][k] == MUTUAL[size][k] for k in ("heldout", "partner_heldout", "contexts"))


def test_dond_mutual_rl_names_the_run_it_needs_first(tmp_path):
    from sparring.learning.context import Context
    from sparring.learning.experiments import dond_mutual_rl as exp

    ctx = Context(out=tmp_path, size="quick", model="m", label="m")
    with pytest.raises(SparringError, match="dond-selfplay-mutual first"):
        exp.run(ctx)
    ctx.adapters["m@dond-mutual-2"] = str(tmp_path / "mutual")  # the start, without the warm start to pair with
    with pytest.raises(SparringError, match="m@dond-warm"):
        exp.run(ctx)


def test_an_arm_is_paired_with_its_start_and_with_each_baseline_that_measured_the_label(tmp_path, monkeypatch):
    """run_arm pairs the trained policy with the start on every label, and with a baseline (here the
    warm start) on the labels that baseline has, named after it."""
    from sparring.learning import arms
    from sparring.learning.arms import Arm, Measured
    from sparring.learning.context import Context
    from sparring.learning.results import Experiment

    monkeypatch.setattr(arms, "train", lambda ctx, name, data: Arm(str(tmp_path / "a"), 1.0, ["t1"]))
    ctx = Context(out=tmp_path, size="quick", model="smollm2-135m", label="m")  # a known base for models.yaml
    exp = Experiment(name="x", description="", model="m", primary="p", training_ids=[], heldout_ids=["h1", "h2"])
    start = Measured({}, {"mutual": {"h1": 0.0, "h2": 1.0}, "vs_base": {"h1": 1.0}}, {}, ["h1", "h2"], {})
    warm = Measured({}, {"mutual": {"h1": 0.0, "h2": 0.0}}, {}, ["h1", "h2"], {})
    trained = Measured({}, {"mutual": {"h1": 1.0, "h2": 1.0}, "vs_base": {"h1": 0.0}}, {}, ["h1", "h2"], {})
    arms.run_arm(ctx, exp, "arm", {}, lambda alias: trained, stage="grpo", step=1, start=start,
                 baselines={"warm start": warm})
    assert exp.paired["mutual grpo - start"]["mean_diff"] == 0.5
    assert exp.paired["vs_base grpo - start"]["mean_diff"] == -1.0
    assert exp.paired["mutual grpo - warm start"]["mean_diff"] == 1.0
    assert "vs_base grpo - warm start" not in exp.paired  # the warm start did not play the base model
    assert ctx.registered("arm", "exp-a", "exp-b") == ("m@arm", str((tmp_path / "a").resolve()))
    with pytest.raises(SparringError, match=r"exp-b starts from m@nothing, .* run exp-a first .*--only exp-a,exp-b"):
        ctx.registered("nothing", "exp-a", "exp-b")


@pytest.mark.parametrize("size", ["quick", "full"])
def test_dond_rl_conversation_is_dond_rls_arm_with_only_the_view_changed(tmp_path, size):
    from sparring.learning.context import Context
    from sparring.learning.experiments import dond_rl
    from sparring.learning.experiments import dond_rl_conversation as exp
    from sparring.train.online.config import OnlineConfig

    ctx = Context(out=tmp_path, size=size, model="smollm2-135m", label="smollm2-135m")
    cfg = dond_rl.arm_config(ctx, exp.SIZES[size], str(tmp_path / "start"))
    reference = dond_rl.arm_config(ctx, dond_rl.SIZES[size], str(tmp_path / "start"))
    assert cfg["experiment"].pop("view") == "conversation" and reference["experiment"].pop("view") == "rendered"
    assert cfg == reference  # dond-rl's as-measured settings, games, steps and rate
    assert OnlineConfig.model_validate(dond_rl.arm_config(ctx, exp.SIZES[size], "s")).experiment["view"] == "conversation"


def test_dond_rl_conversation_measures_the_start_in_both_views_and_pairs_with_dond_rls_arm(tmp_path, monkeypatch):
    """The start plays the held-out games in both views (the rendered one under dond-rl's run names,
    so dond-rl's stored games are read back); the arm, trained and measured in the conversation
    view, is paired with the start in each view and with dond-rl's arm when that is registered."""
    from sparring.learning.experiments import dond_rl_conversation as exp

    played, trained = stand_in_arms(monkeypatch, tmp_path, {"dond-rl-start": 0.0, "dond-rlc-start": 1.0,
                                                             "dond-rl-grpo": 2.0, "dond-rlc-grpo": 4.0})
    result = run_from_the_start(exp, tmp_path, {"m@dond-rl-grpo": str(tmp_path / "rendered-arm")})
    assert played[:3] == [("m@dond-selfplay-2", "dond-rl-start", None), ("m@dond-selfplay-2", "dond-rlc-start", "conversation"),
                          ("m@dond-rl-grpo", "dond-rl-grpo", None)]
    assert played[3] == ("m@dond-rlc-grpo", "dond-rlc-grpo", "conversation")
    assert trained[0]["experiment"]["view"] == "conversation" and trained[0]["adapter"] == str(tmp_path / "start")
    assert [s.name for s in result.stages] == ["start, rendered view", "start", "dond-rl (rendered view)", "grpo"]
    diff = {k: v["mean_diff"] for k, v in result.paired.items()}
    assert diff == {"points vs fair-negotiator start (conversation view) - start (rendered view)": 0.5,
                    "points vs fair-negotiator grpo - start": 1.5,
                    "points vs fair-negotiator grpo - start (rendered view)": 2.0,
                    "points vs fair-negotiator grpo - dond-rl (rendered view)": 1.0}


def test_dond_rl_conversation_8_groups_a_steps_8_games_and_pairs_with_the_two_group_arm(tmp_path, monkeypatch):
    """dond-rl-conversation-8: dond-rl-conversation's arm with one group of 8 games a step (one
    scenario and seat) instead of two of 4, the same games a step; its start's games are
    dond-rl-conversation's (read back), and the arm is paired with that experiment's when it ran."""
    from sparring.learning.context import Context
    from sparring.learning.experiments import dond_rl
    from sparring.learning.experiments import dond_rl_conversation as conversation
    from sparring.learning.experiments import dond_rl_conversation_8 as exp
    from sparring.train.online.config import OnlineConfig

    full, reference = exp.SIZES["full"], conversation.SIZES["full"]
    assert (full["generations"], full["prompts"]) == (8, 1)
    assert full["generations"] * full["prompts"] == reference["generations"] * reference["prompts"]
    assert {k: v for k, v in full.items() if k not in ("generations", "prompts")} == {
        k: v for k, v in reference.items() if k not in ("generations", "prompts")}
    ctx = Context(out=tmp_path, size="full", model="smollm2-135m", label="m")
    config = OnlineConfig.model_validate(dond_rl.arm_config(ctx, full, "s"))
    assert (config.num_generations, config.prompts_per_step, config.experiment["view"]) == (8, 1, "conversation")

    played, trained = stand_in_arms(monkeypatch, tmp_path, {"dond-rlc-start": 0.0, "dond-rlc-grpo": 1.0,
                                                             "dond-rlc8-grpo": 3.0})
    result = run_from_the_start(exp, tmp_path, {"m@dond-rlc-grpo": str(tmp_path / "two-groups")})
    assert [(alias, name) for alias, name, _ in played] == [
        ("m@dond-selfplay-2", "dond-rlc-start"), ("m@dond-rlc-grpo", "dond-rlc-grpo"), ("m@dond-rlc8-grpo", "dond-rlc8-grpo")]
    assert trained[0]["adapter"] == str(tmp_path / "start")
    assert [s.name for s in result.stages] == ["start", "dond-rl-conversation (2 groups of 4)", "grpo"]
    assert {k: v["mean_diff"] for k, v in result.paired.items()} == {
        "points vs fair-negotiator grpo - start": 1.5, "points vs fair-negotiator grpo - dond-rl-conversation": 1.0}


def stand_in_arms(monkeypatch, tmp_path: Path, points: dict[str, float]) -> tuple[list, list]:
    """dond_rl's measure and the arms' training replaced: each measured run scores `points[run]`
    in one game (seat Player_1); returns the (alias, run, view) measured and the configs trained."""
    from sparring.learning import arms
    from sparring.learning.arms import Arm, Measured
    from sparring.learning.experiments import dond_rl

    played: list[tuple[str, str, str | None]] = []
    trained: list[dict] = []

    def measure(ctx, alias, name, size):
        played.append((alias, name, size.get("view")))
        return Measured({}, {"points vs fair-negotiator": {"s1/Player_1": points[name], "s1/Player_2": 0.0}}, {},
                        ["s1"])

    monkeypatch.setattr(dond_rl, "measure_policy", measure)
    monkeypatch.setattr(dond_rl, "plot_training", lambda *a, **k: None)
    monkeypatch.setattr(arms, "train", lambda ctx, name, data: trained.append(data) or Arm(str(tmp_path / "a"), 1.0, ["t1"]))
    return played, trained


def run_from_the_start(exp, tmp_path: Path, adapters: dict[str, str]):
    """`exp` at quick size: refused without dond-selfplay's start, then run with it (at
    tmp_path/start) and `adapters` registered."""
    from sparring.learning.context import Context

    ctx = Context(out=tmp_path, size="quick", model="smollm2-135m", label="m")
    with pytest.raises(SparringError, match="dond-selfplay first"):
        exp.run(ctx)
    ctx.adapters.update({"m@dond-selfplay-2": str(tmp_path / "start"), **adapters})
    return exp.run(ctx)
