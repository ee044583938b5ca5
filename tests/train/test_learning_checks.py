"""Learning checks of the offline trainers (`sparring train sft|dpo|kto`): each reaches a known
optimum on a task built to be learnable, through the public entry point `train(rows, settings, out)`
on a tiny random model with LoRA (the default), so that a trainer that silently updates nothing,
or the wrong tokens, fails here. Negative controls run the same checks with the loss put on the
wrong tokens and show that they then fail.

- SFT memorises four rows (reply NLL below a tenth of its start, greedy decoding reproduces every
  reply) with loss on the replies only (the prompt tokens' NLL does not fall).
- DPO (sigmoid), IPO, the soft-preference loss and KTO fit 16 pairs of their own whose preferred
  reply depends on the prompt: the saved adapter ranks the right reply first in >= 90% of them, the
  logged loss closes at least half the gap between its start value (ln 2; IPO (1/(2 beta))^2; KTO
  0.5) and its floor (0; the soft loss: the entropy of its target p), and the logged margin is > 0.

The learning rates are the ones the sweep in docs/training/trainers.md ("Learning checks") found
to fit in these few steps; each check prints its numbers (`pytest -s`).
"""

from __future__ import annotations

import pytest

from . import learning_checks as lc

pytestmark = pytest.mark.slow  # seconds each on 2 cores (tiny model, a few full-batch steps)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    # the checks' own small vocabulary: the same trainers and tasks at a fraction of the cost
    return lc.learnable_tiny(tmp_path_factory.mktemp("learnable") / "tiny", small_vocab=True)


def test_sft_memorises_its_rows_with_loss_on_the_replies_only(tiny, tmp_path):
    verdict = lc.check_sft(tiny, tmp_path / "sft")
    print("SFT:", verdict)
    assert verdict.passed, str(verdict)


@pytest.mark.parametrize("corruption", ["every token", "the prompt instead of the reply"])
def test_the_sft_check_fails_when_the_loss_is_on_the_wrong_tokens(tiny, tmp_path, monkeypatch, corruption):
    """Negative control: the same check, with the trainer's assistant mask replaced."""
    from sparring.train import trainers

    real = trainers.sft_example

    def wrong_mask(tokenizer, row):
        example = real(tokenizer, row)
        mask = example["assistant_masks"]
        example["assistant_masks"] = [1] * len(mask) if corruption == "every token" else [1 - m for m in mask]
        return example

    monkeypatch.setattr(trainers, "sft_example", wrong_mask)
    verdict = lc.check_sft(tiny, tmp_path / "sft")
    print(f"SFT with the loss on {corruption}:", verdict)
    assert not verdict.passed
    if corruption == "every token":  # the replies are still learnt: only the prompt check catches it
        assert "the prompt tokens' NLL fell: the prompt carried loss" in verdict.failures


@pytest.mark.parametrize("name", list(lc.PREFERENCE))
def test_each_preference_trainer_fits_its_own_pairs(tiny, tmp_path, name):
    verdict, result = lc.check_preference(tiny, tmp_path / name, name)
    print(f"{name}:", verdict)
    assert verdict.passed, str(verdict)
    if name == "soft":  # the trainer's own floor is the entropy of p
        assert result.metrics["soft/floor"] == pytest.approx(lc.entropy(0.8), abs=1e-4)


def test_the_preference_check_fails_when_both_replies_train_the_same_tokens(tiny, tmp_path, monkeypatch):
    """Negative control: sparring's token ids of each pair replaced so that the chosen and the
    rejected side train the same tokens (the end-of-turn token): nothing separates the pairs."""
    from sparring.train import trainers

    real = trainers.use_our_tokens

    def same_tokens(trainer, tokens):
        end = tokens[0]["chosen_ids"][-1:]
        real(trainer, [{**t, "chosen_ids": end, "rejected_ids": end} for t in tokens])

    monkeypatch.setattr(trainers, "use_our_tokens", same_tokens)
    verdict, _ = lc.check_preference(tiny, tmp_path / "dpo", "dpo")
    print("DPO with both sides on the same tokens:", verdict)
    assert not verdict.passed
