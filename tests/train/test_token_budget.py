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


def test_a_checkpointed_pass_is_priced_as_kept_where_the_allocator_keeps_freed_memory():
    """On a CPU whose allocator keeps what a pass frees, recomputed activations stay resident as if
    kept (8 checkpointed TicTacToe games: 8.0 GiB against 7.6 without checkpointing), so the budget
    prices such a pass without checkpointing — and leaves checkpointing on; where freed memory goes
    back (`return_freed_memory`, a GPU) it prices the checkpointed pass."""
    import torch
    from peft import LoraConfig, get_peft_model

    from sparring.models.tiny import tiny_model
    from sparring.train.online.trainer.budget import bytes_per_position, checkpointing, token_budget
    from sparring.train.policy import prepare_training

    model, _ = tiny_model(seed=0, vocab=1024, num_layers=4)
    model = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    kept = bytes_per_position(model, "cpu")
    prepare_training(model, no_dropout=True, checkpointing=True)
    assert checkpointing(model)
    recomputed = bytes_per_position(model, "cpu")
    assert recomputed < 0.6 * kept
    keeps = token_budget(model, "cpu", keeps_freed=True)
    # (the probe of a model that was checkpointed keeps a little more: the embedding's output hook)
    assert keeps.bytes_per_position == pytest.approx(kept, rel=0.05) and keeps.priced_as_kept
    assert "priced without activation checkpointing" in keeps.describe()
    assert checkpointing(model)  # on again after the probe
    assert bytes_per_position(model, "cpu") == recomputed
    gives_back = token_budget(model, "cpu", keeps_freed=False)
    assert gives_back.bytes_per_position == recomputed and not gives_back.priced_as_kept
    assert "priced without" not in gives_back.describe()
    # a model without checkpointing is priced as it is either way
    plain, _ = tiny_model(seed=0, vocab=1024, num_layers=4)
    plain = get_peft_model(plain, LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    assert not checkpointing(plain)
    assert token_budget(plain, "cpu", keeps_freed=True).bytes_per_position == kept
    model.train()
    ids = torch.randint(0, 1024, (2, 12), generator=torch.Generator().manual_seed(1))
    model(input_ids=ids).logits.sum().backward()  # still trains after the toggle
