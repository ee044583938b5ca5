#!/usr/bin/env python
"""Run a negotiation (Deal or No Deal) experiment.

    python scripts/run_negotiation.py --configuration dond-quickstart [--num-iters N] [--dry-run]
        [--resume RUN_DIR] [--retry-failed] [--shard I/N] [--output-dir D] [--models-file F]

Same as `sparring run NAME`; configurations live in configs/experiments/NAME.yaml.
"""

import sys

try:  # Ctrl-C while the libraries load: exit quietly, like the command itself
    from sparring.cli.run import script_main
except KeyboardInterrupt:
    sys.exit(130)

if __name__ == "__main__":
    script_main(family="negotiation", prog="run_negotiation.py")
