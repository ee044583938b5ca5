#!/usr/bin/env python
"""Self-play SFT (lm-selfplay, "Efficacy of LM Self-Play in Non-Zero-Sum Games"):

    python scripts/run_selfplay_sft.py --configuration selfplay-sft-quickstart [--dry-run] [--max-minutes M]
        [--restart-from STAGE]

For k = 1..K: Deal or No Deal games of the current policy -> keep the games above the average
reward -> SFT on the policy's turns -> the next policy; evaluated on held-out scenarios each
iteration. Resumable stage by stage. Same as `sparring train loop CONFIG` (method: sft).
"""

import sys

try:  # Ctrl-C while the libraries load: exit quietly, like the command itself
    from sparring.cli.train import selfplay_main
except KeyboardInterrupt:
    sys.exit(130)

if __name__ == "__main__":
    selfplay_main()
