"""DPO's loss settings are checked when the config loads, before any model does: an unknown loss
type (TRL itself rejects one only inside its first loss computation), weights that do not match
the losses, weights beside the soft loss; the names sparring accepts are the installed TRL's."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import ValidationError

from sparring.train.config import DPO_LOSS_TYPES, TrainSettings


def test_an_unknown_loss_type_is_one_message_naming_the_choices():
    with pytest.raises(ValidationError, match=r"unknown DPO loss type\(s\) \['sigmod'\]: choose from sigmoid, hinge"):
        TrainSettings(method="dpo", dpo={"loss_type": ["sigmod"]})
    with pytest.raises(ValidationError, match="loss_type is empty"):
        TrainSettings(method="dpo", dpo={"loss_type": []})


def test_loss_weights_must_match_the_losses_and_not_come_with_the_soft_loss():
    rpo = TrainSettings(method="dpo", dpo={"loss_type": ["sigmoid", "sft"], "loss_weights": [1.0, 0.2]})
    assert rpo.dpo.loss_weights == [1.0, 0.2]
    with pytest.raises(ValidationError, match=r"loss_weights has 1 weight\(s\) for 2 loss type\(s\)"):
        TrainSettings(method="dpo", dpo={"loss_type": ["sigmoid", "sft"], "loss_weights": [1.0]})
    with pytest.raises(ValidationError, match="loss_weights weigh TRL's loss types"):
        TrainSettings(method="dpo", dpo={"soft": True, "loss_weights": [1.0]})


def test_dpo_positive_is_a_term_of_the_soft_loss():
    dpop = TrainSettings(method="dpo", dpo={"soft": True, "positive": 5.0})
    assert dpop.dpo.positive == 5.0
    with pytest.raises(ValidationError, match="positive .* is a term of the soft-preference loss: set soft: true"):
        TrainSettings(method="dpo", dpo={"positive": 5.0})
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        TrainSettings(method="dpo", dpo={"soft": True, "positive": -1.0})


def test_dpo_positive_penalises_only_a_chosen_reply_below_the_reference():
    """DPOP's term (Smaug): the preferred term's margin loses lambda x how far the chosen reply's
    per-token log-prob fell below the reference; a chosen reply above it changes nothing."""
    import math

    import torch

    from sparring.train.soft_dpo import soft_preference_loss

    def loss(policy_c, positive):
        one = torch.tensor([1.0])
        return float(soft_preference_loss(torch.tensor([policy_c]), torch.tensor([-8.0]), torch.tensor([-4.0]),
                                          torch.tensor([-4.0]), 2 * one, 2 * one, one, beta=1.0,
                                          positive=positive)[0])

    # chosen rose by 1 per token (-2 vs -4 over 2 tokens): no penalty, the same loss as plain DPO
    assert loss(-2.0, 5.0) == pytest.approx(loss(-2.0, 0.0))
    # chosen fell by 1 per token while the rejected fell by 2: the margin is +1 a token, but DPOP
    # subtracts 5 x 1 and the loss is that of a margin of -4
    assert loss(-6.0, 0.0) == pytest.approx(-math.log(1 / (1 + math.exp(-1.0))))
    assert loss(-6.0, 5.0) == pytest.approx(-math.log(1 / (1 + math.exp(4.0))))


def test_a_loop_with_a_bad_loss_fails_at_load_naming_the_file_and_key(tmp_path):
    import yaml

    from sparring.errors import SparringError
    from sparring.train.loop.config import load_loop

    loop = {"alias": "x", "iterations": 1, "policy_agent": "policy",
            "selfplay": {"game": "debate", "agents": {"policy": {"role": "debater", "model": "ignored"}},
                         "tournament": {"type": "self_play", "participants": ["policy"]}},
            "train": {"method": "dpo", "model": "smollm2-135m", "dpo": {"loss_type": ["apo-zero"]}}}
    path = tmp_path / "bad-loss.yaml"
    path.write_text(yaml.safe_dump(loop))
    with pytest.raises(SparringError) as info:
        load_loop(str(path))
    message = str(info.value)
    assert "bad-loss.yaml" in message and "loss_type" in message and "apo_zero" in message


def test_every_accepted_loss_type_is_one_the_installed_trl_documents():
    from trl import DPOConfig

    field = next(f for f in dataclasses.fields(DPOConfig) if f.name == "loss_type")
    documented = field.metadata["help"]
    assert [name for name in DPO_LOSS_TYPES if f"'{name}'" not in documented] == []
    assert any(f.name == "loss_weights" for f in dataclasses.fields(DPOConfig))
