#!/usr/bin/env python
"""Does playing make the model better on instances it never trained on? The learning suite
(the same as `sparring learning`; the suite lives in `sparring/learning/`).

    python scripts/run_learning.py --suite quick --output /tmp/learning-quick   # toy size, minutes
    python scripts/run_learning.py --suite full --output runs/learning          # bundled model, hours
    python scripts/run_learning.py --suite full --only debate-dpo --output runs/learning-debate
    python scripts/run_learning.py --compare BEFORE/learning.json AFTER/learning.json  # same held-out figures?

Experiments (sparring/learning/): textworld-sft (SFT on gold demos → held-out success),
dond-selfplay (warm start on human dialogues, then self-play filtered SFT), debate-dpo (iterative
DPO against the deterministic scripted quote judge, then the bundled judge), grpo (online GRPO on
Deal or No Deal), transfer (every trained adapter on the other games of the bench suite). Each
has a held-out instance set checked disjoint from its training set, the baseline measured in the
same run, 95% intervals and paired differences. Writes OUTPUT/learning.json, OUTPUT/learning.md
and OUTPUT/curves/<experiment>.png, and prints per experiment the stage wall times and the two
speed ratios (engine rollout ÷ raw generate; training tokens/s ÷ matmul ceiling).
`--suite quick` uses a tiny random model with the bundled tokenizer (it checks that everything
runs, not a gain); `--suite full` uses the bundled SmolLM2-135M.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def build_parser() -> argparse.ArgumentParser:
    """The command line (tests/test_doc_commands.py checks the documented ones against it)."""
    from sparring.learning.suite import ORDER

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", choices=["quick", "full"], default="quick")
    ap.add_argument("--output", type=Path, help="the suite's output folder (required unless --compare)")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"), help="compare the held-out "
                    "figures of two learning.json files (metrics, intervals, paired comparisons, instance ids); "
                    "exit 1 if any differs")
    ap.add_argument("--check", action="store_true", help="exit 1 unless every experiment ran and every "
                    "held-out set is non-empty and disjoint from its training set (CI)")
    ap.add_argument("--only", default=None, help=f"comma-separated experiments (default all: {','.join(ORDER)})")
    ap.add_argument("--dond-data", default=None, help="the Deal or No Deal human dialogues (data.txt, or a folder "
                    "holding it); default: $SPARRING_DATA_DIR or `sparring data fetch dond-dialogues`")
    ap.add_argument("--dond-contexts", default=None, help="lm-selfplay's Deal or No Deal scenarios (selfplay.txt, or a "
                    "folder holding it; dond-selfplay-rl's second held-out set); default: beside --dond-data, "
                    "$SPARRING_DATA_DIR or `sparring data fetch dond-contexts`")
    return ap


def main() -> int:
    from sparring.errors import SparringError
    from sparring.learning.report import check_results
    from sparring.learning.suite import ORDER, run_suite

    parser = build_parser()
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    if args.output is None:
        parser.error("--output is required (or --compare BEFORE AFTER)")
    only = [x.strip() for x in args.only.split(",") if x.strip()] if args.only else None
    data = {k: v for k, v in (("dond-dialogues", args.dond_data), ("dond-contexts", args.dond_contexts)) if v} or None
    try:
        paths = run_suite(args.suite, args.output, only, data=data)
    except SparringError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {paths['json']} and {paths['md']}")
    if args.check:
        problems = check_results(paths["json"], only or list(ORDER))
        for p in problems:
            print(f"check: {p}", file=sys.stderr)
        if problems:
            return 1
        print("check: every experiment ran; held-out sets are disjoint from training sets")
    return 0


def compare(before: Path, after: Path) -> int:
    import json

    from sparring.learning.report import compare_figures

    same, lines = compare_figures(*(json.loads(p.read_text(encoding="utf-8")) for p in (before, after)))
    for line in lines:
        print(line)
    print(f"{same} held-out figures identical, {len(lines)} not")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
