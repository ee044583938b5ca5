"""Debate DPO against the evidence judge, measured under judges never used in training (issue #48):
the `debate-dpo` pipeline (`debate.py`: demonstrator warm start, iterative DPO from branched
debates, held-out debates trained-vs-base) with the judges exchanged. The evidence judge trains
(it credits only verified quotes that hold the debater's answer and a word of the question); the
quote judge (any valid quote, naming the answer, length) and the proof judge (a stated answer with
one short quote about the question's subject that does not mention the other answer) re-judge
every held-out debate. Either held-out judge pays for what the evidence judge pays for when it is
evidence, and neither pays for its loopholes: the distractor's sentences share the questions' own
words ("earns a living as", "as a pet"), and a quote repeated counts twice.

What changed from `debate-dpo`, from what its run taught (docs/learning/debate-dpo.md):

- The policy debates the base model (greedy, both seats), not itself: the base never quotes, so
  the evidence judge scores it 0 and a sibling's value is a function of the policy's own speech
  alone. In self-play the second speaker answers each sibling anew, and its reply moves the
  first speaker's value (noise in the pairs: two equally good speeches ranked by the reply).
- DPO fits its pairs: the IPO run's loss stayed at its start (1.0) at learning rate 2e-4 (24 steps
  of 2 pairs). Standard sigmoid DPO (beta 0.1) at learning rate 1e-3, the LoRA rate at which the
  trainers' learning checks fit their pairs (tests/train/learning_checks.py: 1e-4 does not; 1e-3
  ranks every pair right) and at which a pilot on the bundled model fitted 14 of 16 demonstrator
  pairs in one epoch of 4-pair steps (docs/learning/debate-dpo-evidence.md); each iteration's fit is
  measured after training on its own pairs (`sparring/train/pair_fit.py`: accuracy and margins of the adapter
  against its reference).
- No judge-accuracy table (its 9 runs x 3 policies do not fit the hour beside the larger play
  stage); the behaviours by stage and side (`debate_behaviour.py`) say what was learnt instead.
"""

from __future__ import annotations

from typing import Any

from sparring.learning.context import Context
from sparring.learning.debate_eval import HeldOutJudge, Judges
from sparring.learning.experiments.debate_dpo import Arm, run_arm
from sparring.learning.registry import experiment
from sparring.learning.results import Experiment

SIZES: dict[str, dict[str, Any]] = {
    # quick: the tiny random model never quotes, so every sibling scores alike: keep every pair (min_gap 0)
    "quick": {"train": 2, "heldout": 2, "iterations": 2, "tokens": 16, "max_pairs": 2, "max_length": 1024,
              "min_gap": 0.0, "max_steps": 1, "demo_steps": 1, "accuracy": 2},
    # full: the warm start as in debate-dpo (32 steps of 4, ~8 min); DPO: 48 training questions x 2
    # answer assignments x 2 seat orders = 192 branched debates (2 sampled policy speeches each), the
    # pairs whose values differ (the judge's probabilities move in steps of ~0.23), the 48
    # best-separated: one epoch of 12 steps of 4 per iteration
    "full": {"train": 48, "heldout": 24, "iterations": 2, "tokens": 48, "max_pairs": 48, "max_length": 1024,
             "min_gap": 0.05, "max_steps": -1, "demo_steps": 32, "accuracy": 24},
}
JUDGES = Judges("evidence-judge", "evidence judge",
                (HeldOutJudge("quote", "quote judge, held out", "quote-judge"),
                 HeldOutJudge("proof", "proof judge, held out", "proof-judge")))
ARM = Arm(
    name="debate-dpo-evidence", runs="debate-evidence", judges=JUDGES, sizes=SIZES,
    dpo={"loss_type": ["sigmoid"], "beta": 0.1},
    train={"learning_rate": 1e-3, "epochs": 1, "batch_size": 4},
    opponent=True, accuracy_table=False, measure_fit=True,
    description="Debate: SFT warm start on a scripted demonstrator's quoting speeches, then iterative DPO "
                "against the scripted evidence judge (branched debates of the policy against the base model, "
                "hard labels: the sibling the judge preferred); held-out debates with both answer assignments and "
                "both seat orders, trained vs base, greedy, re-judged by the quote judge and the proof judge "
                "(never used in training).",
    target="the second DPO iteration above the warm start with the paired interval above 0 under each held-out "
           "judge (quote judge, proof judge), and the DPO step fitting its own pairs",
    notes=("held-out judges: quote-judge (+1 naming the answer, +2 per valid quote, +1 a quote holding the answer, "
           "-1 per invalid quote, +0.01 a word) and proof-judge (+1 one valid quote of <= 25 words holding the "
           "answer and the question's subject and not the other answer, +1 more if the answer is also stated, "
           "-1 per invalid quote); both re-judge the same debates (speeches replayed)",))


@experiment("debate-dpo-evidence")
def run(ctx: Context) -> Experiment:
    return run_arm(ctx, ARM)
