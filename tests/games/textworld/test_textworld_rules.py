"""TextWorld cooking rules on the real simulator: the gold path, what the player sees, invalid
commands, and the things the game refuses (forking)."""

from __future__ import annotations

import random

import pytest
from tw_helpers import seats_for

from sparring.gameapi.game import Action, GameCannotFork
from sparring.games.textworld_cooking.game import CookingConfig, TextWorldCookingGame


def _play_gold(game, instance):
    state = game.reset(instance, seats_for(game), random.Random(0))
    while not game.is_over(state):
        label = game.request_labels(state, "player")
        assert set(label) == {"gold_action"}
        assert game.act(state, "player", Action(text=label["gold_action"])).accepted
    return state


def test_the_gold_path_cooks_the_meal_with_full_score(tw_game, tw_instances):
    for inst in tw_instances:
        state = _play_gold(tw_game, inst)
        out = tw_game.outcome(state)
        assert out.rewards == {"player": 1.0}
        m = out.metrics
        assert m["success"] and not m["failure"] and m["end"] == "success"
        assert m["steps"] == m["gold_steps"] == len(state.gold) and m["n_invalid"] == 0 and m["followed_gold"]


def test_the_observation_never_shows_the_gold_path(tw_game, tw_instances):
    game = TextWorldCookingGame(CookingConfig(show_valid_actions=False))
    game._pools = tw_game._pools  # share the simulators (a JVM each)
    state = game.reset(tw_instances[0], seats_for(game), random.Random(0))
    gold = list(state.gold)
    system = game.observation(state, "player")[0].content
    secret = [g for g in gold if g not in system and g not in ("look around", "inventory")]
    assert secret  # e.g. "cook chicken wing in toaster"
    for i, command in enumerate(gold):
        shown = "\n".join(m.content for m in game.observation(state, "player"))
        assert ", ".join(gold) not in shown
        for future in gold[i:]:
            if future in secret:
                assert future not in shown, f"step {i}: {future!r} shown before it was played"
        game.act(state, "player", Action(text=command))
    assert game.outcome(state).metrics["success"]


def test_invalid_and_empty_commands_cost_a_step_and_are_counted(tw_game, tw_instances):
    state = tw_game.reset(tw_instances[1], seats_for(tw_game), random.Random(0))
    gold = state.gold
    assert tw_game.act(state, "player", Action(text="dance wildly")).accepted
    assert tw_game.act(state, "player", Action(text="   ")).accepted
    last = tw_game.observation(state, "player")[-1].content
    assert "did not type a command" in last and "Valid commands:" in last
    assert tw_game.request_labels(state, "player") == {}  # off the gold path: no expert action
    # a chatty but valid reply is parsed: prompt marker, article, capitals, final period
    tw_game.act(state, "player", Action(text=f"> {gold[0].capitalize()}.\nI think this is right."))
    shown = tw_game.observation(state, "player")
    assert shown[-2].role == "assistant" and shown[-2].content == gold[0]
    out = tw_game.outcome(state)
    assert out.metrics["n_invalid"] == 2 and out.metrics["steps"] == 3
    assert out.metrics["invalid_rate"] == pytest.approx(2 / 3) and not out.metrics["followed_gold"]
    events = tw_game.events(state)
    assert [e.meta.get("valid") for e in events if e.tag == "command"] == [False, False, True]


def test_the_episode_ends_after_max_steps_and_gives_the_simulator_back(tw_game, tw_instances):
    game = TextWorldCookingGame(CookingConfig(max_steps=3))
    game._pools = tw_game._pools
    pool = game.pool(tw_instances[0].params)
    state = game.reset(tw_instances[0], seats_for(game), random.Random(0))
    free_before = len(pool._free)
    for _ in range(3):
        game.act(state, "player", Action(text="look around"))
    assert game.is_over(state) and game.outcome(state).metrics["end"] == "max_steps"
    assert game.outcome(state).rewards["player"] == 0.0
    assert len(pool._free) == free_before + 1
    assert not game.act(state, "player", Action(text="look around")).accepted


def test_history_window_and_a_state_that_cannot_fork(tw_game, tw_instances):
    game = TextWorldCookingGame(CookingConfig(history=1))
    game._pools = tw_game._pools
    state = game.reset(tw_instances[2], seats_for(game), random.Random(0))
    for command in state.gold[:4]:
        game.act(state, "player", Action(text=command))
    msgs = game.observation(state, "player")
    assert [m.role for m in msgs] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert msgs[-2].content == state.gold[3] and "Step 5 of" in msgs[-1].content
    with pytest.raises(GameCannotFork):
        game.fork(state)


def test_without_show_state_an_observation_is_the_simulators_answer_only(tw_game, tw_instances):
    game = TextWorldCookingGame(CookingConfig(show_state=False, show_valid_actions=False))
    game._pools = tw_game._pools
    state = game.reset(tw_instances[0], seats_for(game), random.Random(0))
    room = str(state.info["look"]).strip()
    opening = game.observation(state, "player")[-1].content
    assert opening.startswith(room) and "Inventory:" not in opening  # the opening shows the room once
    take = next(c for c in state.gold if c.startswith("take "))
    while state.gold[state.gold_pos] != take:
        game.act(state, "player", Action(text=state.gold[state.gold_pos]))
    game.act(state, "player", Action(text=take))
    after = game.observation(state, "player")[-1].content
    assert after.startswith("You take the") and "You are in the" not in after and "Inventory:" not in after
    game.act(state, "player", Action(text="inventory"))  # asked for, the inventory is the answer
    assert game.observation(state, "player")[-1].content.startswith("Inventory:")
    game.act(state, "player", Action(text="look around"))
    assert game.observation(state, "player")[-1].content.startswith("You are in the")
    shown = TextWorldCookingGame(CookingConfig(show_valid_actions=False))  # the default shows both
    shown._pools = tw_game._pools
    state = shown.reset(tw_instances[0], seats_for(shown), random.Random(0))
    shown.act(state, "player", Action(text=state.gold[0]))
    assert "Inventory:" in shown.observation(state, "player")[-1].content


def test_failure_penalty_lowers_the_reward_of_a_spoiled_meal_not_its_score(tw_game, tw_instances):
    """Cooking an ingredient with an appliance the recipe does not ask for loses the game: with
    `failure_penalty` its reward is the score minus the penalty, charged to that command."""
    game = TextWorldCookingGame(CookingConfig(failure_penalty=0.5))
    game._pools = tw_game._pools
    inst = next(i for i in tw_instances if any(g.startswith("cook ") for g in _play_gold(tw_game, i).gold))
    state = game.reset(inst, seats_for(game), random.Random(0))
    cook = next(g for g in state.gold if g.startswith("cook "))
    step_rewards = [game.act(state, "player", Action(text=g)).reward for g in state.gold[:state.gold.index(cook)]]
    item = cook.split(" in ")[0]
    wrong = next(a for a in state.info["validActions"] if a.startswith(item + " in ") and a != cook)
    step_rewards.append(game.act(state, "player", Action(text=wrong)).reward)
    out = game.outcome(state)
    assert game.is_over(state) and out.metrics["failure"] and not out.metrics["success"]
    assert out.rewards["player"] == pytest.approx(out.metrics["score"] - 0.5)
    assert sum(step_rewards) == pytest.approx(out.rewards["player"]) and step_rewards[-1] < 0


def test_invalid_penalty_charges_each_refused_command_where_it_was_written(tw_game, tw_instances):
    """With `invalid_penalty` every refused command (not valid here, or empty) costs that much of the
    reward at that command; the step rewards still add up to the reward, the score is the simulator's."""
    game = TextWorldCookingGame(CookingConfig(invalid_penalty=0.05, max_steps=200))
    game._pools = tw_game._pools
    state = game.reset(tw_instances[0], seats_for(game), random.Random(0))
    rewards = [game.act(state, "player", Action(text="fly to the moon")).reward,
               game.act(state, "player", Action(text="")).reward]
    assert rewards == [pytest.approx(-0.05), pytest.approx(-0.05)]
    for command in list(state.gold):  # a refused command changes nothing: the gold path still wins
        rewards.append(game.act(state, "player", Action(text=command)).reward)
    out = game.outcome(state)
    assert out.metrics["success"] and out.metrics["score"] == pytest.approx(1.0) and out.metrics["n_invalid"] == 2
    assert out.rewards["player"] == pytest.approx(1.0 - 0.1) and sum(rewards) == pytest.approx(out.rewards["player"])
