"""The debate experiments of the learning suite: both arms build valid loops from one pipeline
(`debate-dpo` trains against the quote judge in self-play; `debate-dpo-evidence` against the
evidence judge, the policy debating the base model), and the behaviour analysis reads what a
speech does."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sparring.learning.context import Context, shipped_scripted
from sparring.learning.debate_behaviour import speech_features
from sparring.learning.experiments import debate_dpo as debate
from sparring.learning.experiments import debate_dpo_contrast as debate_contrast
from sparring.learning.experiments import debate_dpo_contrast_extras as debate_contrast_extras
from sparring.learning.experiments import debate_dpo_evidence as debate_evidence


@pytest.mark.parametrize("size", ["quick", "full"])
def test_the_evidence_arm_trains_against_the_evidence_judge_and_holds_out_two_others(tmp_path, size):
    ctx = Context(out=tmp_path, size=size, model="smollm2-135m", label="smollm2-135m")
    arm = debate_evidence.ARM
    cfg = debate.loop_config(ctx, arm.sizes[size], str(tmp_path / "warm"), arm)
    assert cfg.name == "debate-dpo-evidence" and cfg.output_dir.endswith("debate-dpo-evidence")
    play = cfg.selfplay
    assert play["agents"]["judge"]["model"] == "evidence-judge"
    held = {j.model for j in arm.judges.held_out}
    assert held == {"quote-judge", "proof-judge"} and arm.judges.training not in held
    assert {a["model"] for a in cfg.evaluation.heldout_judges.values()} == held
    # the policy debates the greedy base model in both seats; only its own turns branch
    assert play["tournament"]["matchups"] == [["policy", "opponent"], ["opponent", "policy"]]
    assert play["agents"]["opponent"] == {"role": "debater", "model": "smollm2-135m",
                                          "sampling": {"temperature": 0.0, "max_new_tokens": arm.sizes[size]["tokens"]}}
    assert play["branch"]["target"] == "policy"
    assert play["dataset"]["split"] == "train" and cfg.evaluation.dataset["split"] == "test"
    assert cfg.train.dpo.loss_type == ["sigmoid"] and cfg.train.learning_rate == arm.train["learning_rate"]
    assert cfg.warm_start is not None and cfg.warm_start.adapter == str(tmp_path / "warm")
    # debate-dpo keeps its own loop: self-play judged by the quote judge, IPO
    old = debate.loop_config(ctx, debate.SIZES[size], str(tmp_path / "warm"))
    assert old.name == "debate-dpo" and old.selfplay["tournament"]["type"] == "self_play"
    assert old.selfplay["agents"]["judge"]["model"] == "quote-judge" and old.train.dpo.loss_type == ["ipo"]


@pytest.mark.parametrize("size", ["quick", "full"])
def test_the_contrast_arm_pairs_each_best_speech_with_its_worst_sibling_and_trains_rpo_gently(tmp_path, size):
    """Issue 58's recipe, from the pre-check: k = 4 siblings, the lowest-valued as rejected with a
    judge gap (0.1 at full size) and near copies dropped, 20% held back, RPO at 1e-4, the pair fit
    measured; design 3: the warm start trained to convergence (42 steps, 1.75 epochs) and the
    branches sampled at temperature 0.7; the controls and the model judge on."""
    from sparring.train.loop.config import LoopConfig

    ctx = Context(out=tmp_path, size=size, model="smollm2-135m", label="smollm2-135m")
    arm = debate_contrast.ARM
    cfg = debate.loop_config(ctx, arm.sizes[size], str(tmp_path / "warm"), arm)
    assert isinstance(cfg, LoopConfig) and cfg.name == "debate-dpo-contrast"
    assert cfg.selfplay["branch"]["k"] == 4 and cfg.selfplay["agents"]["judge"]["model"] == "evidence-judge"
    assert cfg.export.rejected == "worst" and cfg.export.max_similarity == 0.9 and cfg.export.held_back == 0.2
    assert cfg.export.min_gap == (0.1 if size == "full" else 0.0)
    assert cfg.train.dpo.loss_type == ["sigmoid", "sft"] and cfg.train.dpo.loss_weights == [1.0, 1.0]
    assert cfg.train.learning_rate == 1e-4 and cfg.pair_fit
    assert arm.controls == ("extra-sft",) and arm.model_judge and not arm.accuracy_table  # the rest: extras (below)
    assert cfg.train.gradient_checkpointing is False
    # the greedy check on training prompts runs in the extras experiment (8 questions at full size)
    assert cfg.check is None
    checked = debate.loop_config(ctx, arm.sizes[size], str(tmp_path / "warm"), replace(arm, check=True))
    assert checked.check is not None and checked.check.instances == (8 if size == "full" else 1)
    assert cfg.selfplay["agents"]["policy"]["sampling"]["temperature"] == 0.7
    if size == "full":
        assert arm.sizes[size]["demo_steps"] == 42 and arm.sizes[size]["heldout"] * 4 == 96


def test_the_contrast_extras_need_the_contrast_runs_adapters_and_say_which(tmp_path):
    """SFT on the chosen speeches, Best-of-4 and the judge-accuracy table are their own experiment
    over what `debate-dpo-contrast` stored: without it, one clear error naming the models file and
    the run to do first, before any model loads."""
    from sparring.errors import SparringError

    ctx = Context(out=tmp_path, size="quick", model="smollm2-135m", label="tiny")
    ctx.adapters["tiny@debate-contrast-warm"] = str(tmp_path / "warm")
    with pytest.raises(SparringError, match=r"tiny@debate-dpo-contrast-2.*--only debate-dpo-contrast"):
        debate_contrast_extras.run(ctx)
    ctx.adapters["tiny@debate-dpo-contrast-2"] = str(tmp_path / "final")  # adapters, but no loop state
    with pytest.raises(SparringError, match=r"of iteration 1.*--only debate-dpo-contrast"):
        debate_contrast_extras.run(ctx)


def test_rejection_sampling_rows_are_the_chosen_speeches_of_the_pairs():
    from sparring.learning.debate_controls import chosen_rows

    prompt = [{"role": "system", "content": "Debate."}, {"role": "user", "content": "Your speech?"}]
    pairs = [{"prompt": prompt, "chosen": [{"role": "assistant", "content": "The answer is A. <quote>x</quote>"}],
              "rejected": [{"role": "assistant", "content": "A."}], "meta": {"instance_id": "q1"}}]
    (row,) = chosen_rows(pairs)
    assert row["messages"] == [*prompt, {"role": "assistant", "content": "The answer is A. <quote>x</quote>"}]
    assert row["meta"] == {"instance_id": "q1", "source": "chosen"}


def test_every_judge_of_both_arms_is_in_the_suites_models_file():
    shipped = shipped_scripted()
    for arm in (debate.DEBATE_DPO, debate_evidence.ARM, debate_contrast.ARM):
        for model in (arm.judges.training, *(j.model for j in arm.judges.held_out)):
            assert model in shipped


def test_speech_features_read_quotes_names_and_the_demonstrators_opening():
    speech = ("The answer is a brewer. The story says: <quote>Osric earns a living as a brewer.</quote> "
              "<quote>Osric earns a living as a brewer.</quote> <invalid_quote>Corwin is no teacher</invalid_quote>")
    f = speech_features(speech, "a brewer", "a schoolteacher")
    assert f["valid_quotes"] == 2 and f["invalid_quotes"] == 1 and f["repeated_quote"] == 1
    assert f["names_own"] == 1 and f["names_other"] == 0 and f["opening"] == 1
    assert f["own_in_quote"] == 1 and f["other_in_quote"] == 0
    assert f["quoted_words"] == 7 + 7 + 4 and f["words"] == len(speech.split())
    plain = speech_features("My opponent says schoolteacher, but no.", "a brewer", "a schoolteacher")
    assert plain["names_own"] == 0 and plain["names_other"] == 1 and plain["valid_quotes"] == 0
    assert plain["opening"] == 0 and plain["repeated_quote"] == 0
