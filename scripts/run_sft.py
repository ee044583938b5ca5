#!/usr/bin/env python
"""SFT on exported rows (runs or human data):

    sparring export sft runs/qs -o data/qs-sft --role debater --keep winners
    python scripts/run_sft.py data/qs-sft -o adapters/qs-sft [--config configs/train/sft.yaml] [--max-steps N]
        [--max-minutes M] [--dry-run] [--restart]

Same as `sparring train sft`.
"""

import sys

from sparring.cli import main

if __name__ == "__main__":
    main(["train", "sft", *sys.argv[1:]])
