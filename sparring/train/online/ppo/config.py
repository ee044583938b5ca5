"""PPO's settings (`ppo:` of an online config with `algorithm: ppo`). Defaults are TRL's PPOConfig's,
the settings the TRL-based TextWorld tutorials start from."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from sparring.types import Strict


class PPOEval(Strict):
    """The held-out evaluation run every `every` steps (the best checkpoint is kept)."""

    dataset: dict[str, Any] = Field(description="the experiment's `dataset` block for held-out instances "
                                                "(e.g. the test split); checked disjoint from training")
    every: int = Field(10, ge=1, description="evaluate after every N steps (and after the last)")
    temperature: float = Field(0.0, ge=0.0, description="the learner's sampling temperature when evaluated")
    metric: str = Field("reward", description="what `best` maximises: reward (the learner's mean outcome) or an "
                                              "outcome metric of the game (e.g. score, success)")
    overrides: dict[str, Any] = Field(default_factory=dict, description="experiment keys replaced for the evaluation "
                                      "(e.g. `agents` and `tournament`: a held-out opponent never trained against)")


class PPOSettings(Strict):
    ppo_epochs: int = Field(4, ge=1, description="passes over each step's rollouts")
    minibatch_size: int = Field(4, ge=1, description="sequences per gradient step")
    lam: float = Field(0.95, ge=0.0, le=1.0, description="GAE lambda (gamma: the config's `gamma`)")
    cliprange: float = Field(0.2, gt=0.0, description="clipping of the policy ratio")
    cliprange_value: float = Field(0.2, gt=0.0, description="clipping of the value update")
    vf_coef: float = Field(0.1, ge=0.0, description="value loss coefficient")
    ent_coef: float = Field(0.0, ge=0.0, description="entropy bonus coefficient")
    kl_coef: float = Field(0.05, ge=0.0, description="KL to the starting policy, subtracted from each turn's reward")
    whiten_rewards: bool = Field(False, description="whiten the turn rewards of each step")
    whiten_advantages: bool = Field(True, description="whiten the advantages of each step (TRL does)")
    rollout_values: bool = Field(True, description="the old values from the hidden states the rollout computed "
                                 "(each turn's last prompt token, recorded by the hf backend while it generated): "
                                 "no values pass; false, or a turn without one: a values-only pass, as before")
    value_lr: float | None = Field(None, gt=0.0, description="the value head's learning rate (default: "
                                                             "learning_rate x 10: it starts from zero)")
    eval: PPOEval | None = Field(None, description="held-out evaluation every N steps; the best checkpoint is "
                                                   "kept in OUT/best")
