"""Sweep the learning rate of each trainer's learning check (`learning_checks*.py`) and print which
rates pass: the numbers behind "Learning checks" in docs/training/trainers.md.

    python tests/train/sweep_learning_rates.py --only sft,dpo --rates 1e-4,1e-3,1e-2,3e-2
    python tests/train/sweep_learning_rates.py --only grpo --full   # full fine-tuning instead of LoRA

Each line: the check, the rate, passed or why not, and the numbers the check measured. Run it
alone at two threads (`OMP_NUM_THREADS=2`); every check takes seconds to a minute.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

CHECKS = ("sft", "dpo", "ipo", "soft", "kto", "grpo", "grpo-sparring", "ppo", "ppo-value", "expert-iteration")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(CHECKS), help=f"comma-separated checks of: {', '.join(CHECKS)}")
    parser.add_argument("--rates", default="1e-4,1e-3,1e-2,3e-2", help="comma-separated learning rates")
    parser.add_argument("--full", action="store_true", help="full fine-tuning (lora: null) instead of LoRA r=8")
    parser.add_argument("--set", default="{}", help="other settings of every run as JSON, e.g. '{\"max_steps\": 20}'")
    parser.add_argument("--bundled-vocab", action="store_true",
                        help="the bundled 49,152-token tokenizer instead of the checks' 409-token one (as the tests)")
    parser.add_argument("--sharpness", type=float, default=None,
                        help="the online checks' model sharpness (default: the checks' own)")
    return parser


def run(check: str, tiny: Path, out: Path, overrides: dict) -> str:
    from tests.train import learning_checks as lc
    from tests.train import learning_checks_online as lco

    if check == "sft":
        return str(lc.check_sft(tiny, out, **overrides))
    if check in lc.PREFERENCE:
        return str(lc.check_preference(tiny, out, check, **overrides)[0])
    if check in lco.ONLINE_CHECK:
        return str(lco.check_online(tiny, out, check, **overrides))
    if check == "ppo-value":
        return str(lco.check_value(tiny, out, **overrides))
    return str(lco.check_expert_iteration(tiny, out, **overrides))


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # `tests.train` as a namespace package
    from tests.train import learning_checks as lc
    from tests.train import one_decision_game  # noqa: F401  (registers the game)

    checks = [c.strip() for c in args.only.split(",") if c.strip()]
    unknown = sorted(set(checks) - set(CHECKS))
    if unknown:
        raise SystemExit(f"unknown check(s) {unknown}; choose from {', '.join(CHECKS)}")
    extra = json.loads(args.set)
    with tempfile.TemporaryDirectory() as tmp:
        from tests.train import learning_checks_online as lco

        small = not args.bundled_vocab
        tiny = lc.learnable_tiny(Path(tmp) / "tiny", small_vocab=small)
        sharp = args.sharpness if args.sharpness is not None else lco.SHARPNESS
        online = lc.learnable_tiny(Path(tmp) / "sharp", sharpness=sharp, small_vocab=small)
        for check in checks:
            for rate in [float(r) for r in args.rates.split(",")]:
                overrides = {"learning_rate": rate, **extra}
                if args.full:
                    overrides["lora"] = None
                start = time.time()
                out = Path(tmp) / f"{check}-{rate}-{time.time_ns()}"
                try:
                    verdict = run(check, tiny if check in ("sft", *lc.PREFERENCE) else online, out, overrides)
                except Exception as e:  # a run that crashes at some rate is a result too
                    verdict = f"ERROR {type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
                print(f"SWEEP {check} lr={rate:g} {'full' if args.full else 'lora'} "
                      f"{time.time() - start:.0f}s {verdict}", flush=True)


if __name__ == "__main__":
    main()
