"""`sparring.train.pair_fit`: the trained adapter against its reference on DPO pairs, token by token,
with each side's log-ratio split into the tokens the two replies share and those that differ."""

from __future__ import annotations

import pytest

from sparring.train.pair_fit import fit_adapter, fit_line, pair_figures, shared_tokens


def test_shared_tokens_follow_the_longest_common_runs():
    a, b = [5, 6, 7, 8, 9], [5, 6, 1, 8, 9, 2]
    in_a, in_b = shared_tokens(a, b)
    assert in_a == [True, True, False, True, True]
    assert in_b == [True, True, False, True, True, False]
    assert shared_tokens([], [1]) == ([], [False])


def test_the_figures_split_each_side_and_count_a_pair_right_by_its_margin():
    ratios = [{"chosen": [-1.0, -1.0, 0.5], "rejected": [-1.0, -3.0]},   # margin -1.5 - (-4) = +2.5
              {"chosen": [0.2, 0.2], "rejected": [0.1, 0.5]}]            # margin 0.4 - 0.6 = -0.2
    shared = [{"chosen": [True, True, False], "rejected": [True, False]},
              {"chosen": [False, False], "rejected": [False, False]}]
    f = pair_figures(ratios, shared)
    assert f["pairs"] == 2 and f["accuracy"] == 0.5
    assert f["margin"] == pytest.approx((2.5 - 0.2) / 2)
    assert f["chosen_logratio"] == pytest.approx((-1.5 + 0.4) / 2)
    assert f["chosen_logratio_shared"] == pytest.approx(-2.0 / 2)   # what both said fell: displacement
    assert f["chosen_logratio_differing"] == pytest.approx((0.5 + 0.4) / 2)
    assert f["rejected_logratio_shared"] == pytest.approx(-1.0 / 2)
    assert f["rejected_logratio_differing"] == pytest.approx((-3.0 + 0.6) / 2)
    assert f["shared_token_share"] == pytest.approx(2 / 5)
    assert pair_figures([], []) == {"pairs": 0.0}
    line = fit_line("trained pairs", f)
    assert "accuracy 0.50" in line and "shared tokens -1.00" in line and "40% of chosen tokens shared" in line
    assert fit_line("held back pairs", {"pairs": 0.0}) == "held back pairs: no pairs"


PROMPT = [{"role": "user", "content": "Which answer does the story support? Argue for A."}]


def pairs(n: int) -> list[dict]:
    return [{"prompt": PROMPT, "chosen": [{"role": "assistant", "content": f"A, because the story says {i} boats."}],
             "rejected": [{"role": "assistant", "content": f"B, because the story says {i} boats."}]}
            for i in range(n)]


@pytest.mark.slow
def test_an_adapter_trained_on_the_chosen_replies_raises_them_against_the_base(tmp_path):
    """The signs, on a case with a known answer: SFT on the chosen replies raises the chosen side
    against the base model on every pair, on the tokens where it differs from the rejected side
    too, so every pair is ranked right; an adapter against itself moves nothing."""
    from sparring.models.tiny import save_tiny_model
    from sparring.train.config import TrainSettings
    from sparring.train.trainers import train_sft

    tiny = save_tiny_model(tmp_path / "tiny", seed=0, vocab=1024)
    rows = pairs(4)
    sft = [{"messages": r["prompt"] + r["chosen"]} for r in rows]
    settings = TrainSettings(method="sft", model=str(tiny), max_steps=12, batch_size=4, learning_rate=3e-3,
                             max_length=256, lora={"r": 8, "alpha": 16, "dropout": 0.0})
    adapter = str(train_sft(sft, settings, tmp_path / "sft").adapter)
    fit = fit_adapter(settings, adapter, None, {"trained": rows, "none": []})
    assert set(fit) == {"trained"}
    f = fit["trained"]
    assert f["pairs"] == 4 and f["accuracy"] == 1.0 and f["margin"] > 0
    assert f["chosen_logratio"] > 0 and f["chosen_logratio_differing"] > 0
    assert 0.5 < f["shared_token_share"] < 1  # the replies differ in one word
    same = fit_adapter(settings, adapter, adapter, {"trained": rows})["trained"]
    assert same["margin"] == pytest.approx(0.0, abs=1e-4) and same["chosen_logratio"] == pytest.approx(0.0, abs=1e-4)
