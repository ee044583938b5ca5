"""The credit report of an arm's kept training games: each action label's count and mean advantage
under each credit design, groups formed as GRPO formed them (a step's games of one instance)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sparring.learning.credit_report import credit_by_action, learner_turns
from sparring.learning.experiments.textworld_turn_rl import command_labels
from sparring.train.online.credit import turn_normalised


def game(instance: str, commands: list[tuple[str, bool, float]], outcome: float, repeat: int) -> SimpleNamespace:
    # as TextWorld records them: an unknown command is taken (a step spent) and changes nothing
    calls = [SimpleNamespace(player="player", op="generate", step_reward=r, rejected=False, chosen=None,
                             meta={} if ok else {"unchanged": True}, completions=[SimpleNamespace(text=c)])
             for c, ok, r in commands]
    events = [SimpleNamespace(tag="command", content=c, meta={"valid": ok}) for c, ok, _ in commands]
    return SimpleNamespace(instance_id=instance, calls=calls, events=events, repeat=repeat,
                           outcome=SimpleNamespace(rewards={"player": outcome}))


def test_each_command_gets_the_advantage_its_group_gave_it_under_each_design():
    # step 0's two groups of 2 (prompt 0: w1, prompt 1: w2), stored in the order they finished
    fast = game("w1", [("take knife", True, 0.5), ("eat meal", True, 0.5)], 1.0, repeat=0)
    slow = game("w1", [("take knife", False, 0.0), ("open cutlery drawer", True, 0.0), ("take knife", True, 0.5)], 0.5,
                repeat=1)
    other = [game("w2", [("look around", True, 0.0)], 0.0, repeat=2), game("w2", [("look around", True, 0.0)], 0.0,
                                                                            repeat=3)]
    assert command_labels(slow) == ["take knife (refused)", "open cutlery", "take knife"]
    designs = {"index": ("turn_index", 1.0), "score": ("progress", 0.9), "state": ("state", 0.9)}
    out = credit_by_action([other[0], fast, other[1], slow], 2, "player", command_labels, designs)
    # the state keys: fast's take knife, slow's refused one and slow's open drawer are at the start
    start, after_knife, after_open = "s", "k", "o"
    states = [[start, after_knife], [start, start, after_open]]
    for name, (baseline, gamma) in designs.items():
        fast_adv, slow_adv = turn_normalised([[0.5, 0.5], [0.0, 0.0, 0.5]], gamma, baseline, states)
        knife = [fast_adv[0], slow_adv[2]]
        assert out[name]["take knife"] == {"n": 2, "mean": pytest.approx(sum(knife) / 2, abs=1e-4),
                                           "above_zero": sum(a > 1e-9 for a in knife)}
        assert out[name]["take knife (refused)"]["mean"] == pytest.approx(slow_adv[0], abs=1e-4)
        assert out[name]["look around"] == {"n": 2, "mean": 0.0, "above_zero": 0}  # its own group: all equal
    assert out["score"]["take knife (refused)"]["mean"] < 0  # the refused try loses to the one that scored
    assert out["state"]["take knife (refused)"]["mean"] < 0 < out["state"]["take knife"]["mean"]
    assert list(credit_by_action([fast, slow], 2, "player", command_labels, designs, top=1)["index"]) == ["take knife"]


def test_the_rewards_are_the_ones_the_arm_trained_on_format_penalty_included():
    # the rollout's reward: the outcome less format_penalty per rejected reply of the learner
    rec = game("w1", [("take knife", True, 0.5), ("eat meal", True, 0.5)], 1.0, repeat=0)
    rec.calls[0].rejected = True
    rec.calls.append(SimpleNamespace(player="partner", op="generate", rejected=True, meta={}))
    assert learner_turns(rec, "player") == ([0, 1], 1.0)
    assert learner_turns(rec, "player", format_penalty=0.1) == ([0, 1], pytest.approx(0.9))
    designs = {"index": ("turn_index", 1.0)}
    other = game("w1", [("take knife", True, 0.5), ("eat meal", True, 0.5)], 1.0, repeat=1)
    plain = credit_by_action([rec, other], 2, "player", command_labels, designs)
    charged = credit_by_action([rec, other], 2, "player", command_labels, designs, format_penalty=0.1)
    assert plain["index"]["eat meal"]["mean"] == 0.0  # the same games, the same rewards
    assert charged["index"]["eat meal"]["above_zero"] == 1  # the game without the rejected reply scored more
