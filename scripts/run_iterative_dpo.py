#!/usr/bin/env python
"""Iterative DPO: self-play -> DPO pairs -> DPO -> ALIAS@k -> held-out cross-play, K times.

    python scripts/run_iterative_dpo.py --configuration dpo-quickstart [--dry-run] [--max-minutes M]
        [--restart-from STAGE]

Resumable stage by stage: rerun the same command after a crash or Ctrl-C. Same as
`sparring train loop CONFIG`. Multi-GPU: `accelerate launch --config_file
configs/accelerate/ddp.yaml scripts/run_iterative_dpo.py --configuration X`.
"""

import sys

try:  # Ctrl-C while the libraries load: exit quietly, like the command itself
    from sparring.cli.train import loop_main
except KeyboardInterrupt:
    sys.exit(130)

if __name__ == "__main__":
    loop_main()
