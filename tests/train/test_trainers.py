"""Trainers: the soft-preference loss against a hand computation; each trainer takes two steps on a
tiny random model from exported rows."""

from __future__ import annotations

import json
import math

import pytest
import torch

from sparring.train.soft_dpo import soft_preference_loss


def test_soft_preference_loss_matches_a_hand_computation():
    policy_c, policy_r = torch.tensor([-4.0, -9.0]), torch.tensor([-6.0, -8.0])
    ref_c, ref_r = torch.tensor([-5.0, -9.5]), torch.tensor([-5.0, -8.0])
    len_c, len_r = torch.tensor([2.0, 3.0]), torch.tensor([4.0, 1.0])
    pref = torch.tensor([0.9, 0.3])
    beta, alpha = 0.5, 0.2
    got = soft_preference_loss(policy_c, policy_r, ref_c, ref_r, len_c, len_r, pref, beta, alpha)

    def by_hand(pc, pr, rc, rr, lc, lr, p):
        delta = (pc - rc) / lc - (pr - rr) / lr
        sig = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
        return -p * math.log(sig(beta * delta)) - (1 - p) * math.log(sig(-beta * delta)) + alpha * (-pc / lc)

    # row 0: delta = (1/2) - (-1/4) = 0.75; row 1: delta = (0.5/3) - 0 = 1/6
    want = [by_hand(-4, -6, -5, -5, 2, 4, 0.9), by_hand(-9, -8, -9.5, -8, 3, 1, 0.3)]
    assert got.tolist() == pytest.approx(want, rel=1e-6)
    hard = soft_preference_loss(policy_c, policy_r, ref_c, ref_r, len_c, len_r, torch.ones(2), beta)
    assert hard[0].item() == pytest.approx(-math.log(1 / (1 + math.exp(-beta * 0.75))))  # p = 1: plain DPO


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    """Short SFT / DPO / KTO rows (hand-built, in the exporters' formats)."""
    sys_msg = {"role": "system", "content": "Negotiate."}
    prompt = [sys_msg, {"role": "user", "content": "Your turn."}]
    sft = [{"messages": prompt + [{"role": "assistant", "content": f"[message] offer {i}"}], "meta": {}}
           for i in range(4)]
    dpo = [{"prompt": prompt, "chosen": [{"role": "assistant", "content": f"[propose] {i} books"}],
            "rejected": [{"role": "assistant", "content": "no"}], "preference": 0.8, "margin": 0.3, "meta": {}}
           for i in range(4)]
    kto = [{"prompt": prompt, "completion": [{"role": "assistant", "content": f"reply {i}"}], "label": i % 2 == 0,
            "meta": {}} for i in range(4)]
    return {"sft": sft, "dpo": dpo, "kto": kto}


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    from sparring.models.tiny import save_tiny_model

    return save_tiny_model(tmp_path_factory.mktemp("tiny-base"), seed=0, vocab=1024)


@pytest.mark.slow
@pytest.mark.parametrize("method,extra", [("sft", {}), ("dpo", {}), ("dpo", {"dpo": {"loss_type": ["ipo"]}}),
                                          ("dpo", {"dpo": {"loss_type": ["sigmoid", "sft"], "loss_weights": [1.0, 0.5]}}),
                                          ("dpo", {"dpo": {"soft": True, "sft_weight": 0.1}}), ("kto", {})])
def test_each_trainer_takes_two_steps_and_saves_an_adapter_the_hf_backend_loads(tmp_path, rows, tiny_dir,
                                                                                  method, extra):
    from sparring.models.hf import HFModel
    from sparring.train.config import TrainSettings
    from sparring.train.trainers import train
    from sparring.types import GenerateRequest, Message, Sampling

    settings = TrainSettings(method=method, model=str(tiny_dir), max_steps=2, batch_size=2, max_length=256,
                             learning_rate=1e-3, **extra)
    result = train(rows[method], settings, tmp_path / "adapter")
    assert result.steps == 2 and result.loss is not None and math.isfinite(result.loss)
    assert (tmp_path / "adapter" / "adapter_config.json").is_file()
    assert not (tmp_path / "adapter" / "ref").exists()  # only the trained adapter is saved
    summary = json.loads((tmp_path / "adapter" / "train_summary.json").read_text())
    assert summary["steps"] == 2
    model = HFModel(name="tuned", model=str(tiny_dir), adapters={"v1": str(tmp_path / "adapter")},
                    default_adapter="v1")
    (out,) = model.generate([GenerateRequest(messages=[Message(role="user", content="hi")],
                                             sampling=Sampling(max_new_tokens=3))])
    assert out[0].finish_reason in ("stop", "length")


@pytest.mark.slow
def test_dpo_continuing_an_adapter_uses_it_as_the_reference(tmp_path, rows, tiny_dir):
    """Iteration k trains adapter k-1 further; TRL's frozen copy of it is the reference, and only
    the trained adapter is saved."""
    from sparring.train.config import TrainSettings
    from sparring.train.trainers import train

    first = train(rows["sft"], TrainSettings(model=str(tiny_dir), max_steps=1, max_length=256), tmp_path / "a1")
    second = train(rows["dpo"], TrainSettings(method="dpo", model=str(tiny_dir), adapter=str(first.adapter),
                                              max_steps=1, max_length=256), tmp_path / "a2")
    assert second.steps == 1 and (tmp_path / "a2" / "adapter_config.json").is_file()
    assert not (tmp_path / "a2" / "ref").exists()


def test_kto_rows_are_interleaved_so_that_neighbours_answer_different_prompts():
    """TRL's KTO pairs each row's prompt with its neighbour's completion for its KL reference
    point; rows of one prompt side by side pair a prompt with its own other reply (in the KTO
    learning check the reference point then equalled the desirable rows' log-ratio and the loss
    stopped at 0.26). Round-robin over prompts, each prompt's rows in their order."""
    from sparring.train.trainers import interleave_prompts

    def row(prompt, reply):
        return {"prompt": [{"role": "user", "content": prompt}], "completion": [{"role": "assistant", "content": reply}],
                "label": reply.startswith("good")}

    rows = [row("a", "good a"), row("a", "bad a"), row("b", "good b"), row("b", "bad b"), row("b", "bad b2"),
            row("c", "good c")]
    order = [r["completion"][0]["content"] for r in interleave_prompts(rows)]
    assert order == ["good a", "good b", "good c", "bad a", "bad b", "bad b2"]
    prompts = [r["prompt"][0]["content"] for r in interleave_prompts(rows)]
    assert prompts == ["a", "b", "c", "a", "b", "b"]  # neighbours differ until only b's rows are left
    assert interleave_prompts([]) == []


def test_rows_longer_than_max_length_are_dropped_and_counted(rows, tiny_dir):
    from sparring.models.tiny import tiny_tokenizer
    from sparring.train.trainers import _fit

    long = [{"messages": [{"role": "user", "content": "word " * 400}, {"role": "assistant", "content": "ok"}]}]
    kept, dropped = _fit(rows["sft"] + long, tiny_tokenizer(), 64, ("messages",))
    assert len(kept) == len(rows["sft"]) and dropped == 1


@pytest.mark.slow
def test_merge_adapter_gives_a_full_model_that_generates_like_base_plus_adapter(tmp_path, rows, tiny_dir):
    from sparring.models.hf import HFModel
    from sparring.train.config import TrainSettings
    from sparring.train.merge import merge_adapter
    from sparring.train.trainers import train
    from sparring.types import GenerateRequest, Message, Sampling

    trained = train(rows["sft"], TrainSettings(model=str(tiny_dir), max_steps=2, max_length=256,
                                               learning_rate=5e-2), tmp_path / "adapter")
    merged = merge_adapter(trained.adapter, tmp_path / "merged")
    request = GenerateRequest(messages=[Message(role="user", content="Your turn.")], sampling=Sampling(max_new_tokens=6))
    with_adapter = HFModel(name="a", model=str(tiny_dir), adapters={"v": str(trained.adapter)}, default_adapter="v")
    full = HFModel(name="m", model=str(merged))
    assert full.generate([request])[0][0].token_ids == with_adapter.generate([request])[0][0].token_ids


@pytest.mark.parametrize("method", ["sft", "dpo"])
def test_training_arguments_are_built_without_deprecated_keywords(tmp_path, method):
    """Activation checkpointing is passed under the name the installed transformers uses: no
    FutureWarning about `gradient_checkpointing`, and the setting takes effect (on for DPO, off for SFT)."""
    import warnings

    from trl import DPOConfig, SFTConfig

    from sparring.train.arguments import training_args
    from sparring.train.config import TrainSettings

    settings = TrainSettings(model="unused", method=method)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        config = (SFTConfig if method == "sft" else DPOConfig)(**training_args(settings, tmp_path))
    assert config.gradient_checkpointing is (method == "dpo")
