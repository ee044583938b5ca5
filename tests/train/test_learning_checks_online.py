"""Learning checks of the online trainers and the self-play SFT loop (`learning_checks_online.py`),
on a one-decision game with a known optimum (`one_decision_game.py`): GRPO and PPO reach >= 0.9 of
the optimum in 16 steps, PPO's critic learns fixed returns, and expert iteration raises the mean
reward over two iterations. A negative control shows the GRPO check fails when the trainer does
not move (a learning rate of 1e-7)."""

from __future__ import annotations

import pytest

from . import learning_checks as lc
from . import learning_checks_online as lco
from . import one_decision_game  # noqa: F401  (registers the game "one_decision")

pytestmark = pytest.mark.slow  # 5-20 s each on 2 cores


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return lc.learnable_tiny(tmp_path_factory.mktemp("learnable") / "tiny", sharpness=lco.SHARPNESS, small_vocab=True)


@pytest.mark.parametrize("check", list(lco.ONLINE_CHECK))
def test_online_trainers_reach_the_optimum_of_a_one_decision_game(tiny, tmp_path, check):
    verdict = lco.check_online(tiny, tmp_path / check, check)
    print(f"{check}:", verdict)
    assert verdict.passed, str(verdict)


def test_the_online_check_fails_when_the_policy_does_not_move(tiny, tmp_path):
    # 6 steps instead of 16 (it costs a third): at 1e-7 no number of steps moves the policy
    verdict = lco.check_online(tiny, tmp_path / "grpo", "grpo", learning_rate=1e-7, max_steps=6)
    print("GRPO at lr 1e-7:", verdict)
    assert not verdict.passed
    assert verdict.numbers["final_rate"] < 0.8


def test_ppo_critic_learns_fixed_returns(tiny, tmp_path):
    verdict = lco.check_value(tiny, tmp_path / "ppo-value")
    print("PPO value:", verdict)
    assert verdict.passed, str(verdict)


def test_expert_iteration_raises_the_mean_reward_over_two_iterations(tiny, tmp_path):
    verdict = lco.check_expert_iteration(tiny, tmp_path)
    print("expert iteration:", verdict)
    assert verdict.passed, str(verdict)
