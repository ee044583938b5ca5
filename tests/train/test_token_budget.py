"""`micro_batch_tokens: auto` (issue #59): the token budget per forward is measured on the policy
as it trains — what one forward keeps for its backward, per position — and leaves the model as it
found it; the setting takes a number, `auto` or null and nothing else."""

from __future__ import annotations

import pytest
from pydantic import ValidationError


def test_the_budget_is_measured_per_position_and_leaves_no_gradients():
    import torch
    from peft import LoraConfig, get_peft_model

    from sparring.models.tiny import tiny_model
    from sparring.train.online.trainer.budget import PROBE, SHARE, bytes_per_position, token_budget

    model, _ = tiny_model(seed=0, vocab=1024)
    model = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    model.eval()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    per = bytes_per_position(model, "cpu")
    assert per >= 1024 * 4  # at least the fp32 log-softmax over the vocabulary, a position
    assert bytes_per_position(model, "cpu") == per  # exact: the same on a second probe
    assert bytes_per_position(model, "cpu", positions=512) == pytest.approx(per, rel=0.05)  # flat in the length
    assert all(p.grad is None for p in model.parameters()) and not model.training
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())
    budget = token_budget(model, "cpu")
    assert budget.positions is not None and budget.positions >= PROBE
    assert budget.positions == max(PROBE, int(SHARE * budget.available_bytes / budget.bytes_per_position))
    assert "token budget per forward" in budget.describe()


def test_the_setting_takes_a_number_auto_or_null():
    from sparring.train.online.config import OnlineConfig

    base = {"name": "x", "experiment": {"game": "dond"}}
    assert OnlineConfig.model_validate(base).micro_batch_tokens == "auto"
    assert OnlineConfig.model_validate({**base, "micro_batch_tokens": 4096}).micro_batch_tokens == 4096
    assert OnlineConfig.model_validate({**base, "micro_batch_tokens": None}).micro_batch_tokens is None
    for bad in (0, "big"):
        with pytest.raises(ValidationError, match="micro_batch_tokens"):
            OnlineConfig.model_validate({**base, "micro_batch_tokens": bad})


def test_recomputed_activations_cost_a_fraction_a_position_and_the_same_gradients():
    """`gradient_checkpointing: true` (`prepare_training`): a forward keeps only each layer's input
    for the backward, so the measured cost a position falls (the budget grows with it), and the
    backward recomputes the layers to the same gradients."""
    import torch
    from peft import LoraConfig, get_peft_model

    from sparring.models.tiny import tiny_model
    from sparring.train.online.trainer.budget import bytes_per_position
    from sparring.train.policy import prepare_training

    grads, per = {}, {}
    for on in (False, True):
        torch.manual_seed(0)
        model, _ = tiny_model(seed=0, vocab=1024, num_layers=4)
        model = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], lora_dropout=0.1))
        prepare_training(model, no_dropout=True, checkpointing=on)
        assert {m.p for m in model.modules() if isinstance(m, torch.nn.Dropout)} == {0.0}
        per[on] = bytes_per_position(model, "cpu")
        model.train()
        ids = torch.randint(0, 1024, (2, 40), generator=torch.Generator().manual_seed(1))
        torch.log_softmax(model(input_ids=ids).logits, -1)[..., 7].sum().backward()
        grads[on] = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    assert per[True] < 0.6 * per[False]
    assert torch.allclose(grads[True], grads[False], atol=1e-6)
