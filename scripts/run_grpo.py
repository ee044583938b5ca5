#!/usr/bin/env python
"""Online RL (GRPO, or PPO with `algorithm: ppo`) where a rollout is a whole game played through the engine:

    python scripts/run_grpo.py --configuration grpo-quickstart [--dry-run] [--max-minutes M] [--restart]
    python scripts/run_grpo.py --configuration ppo-textworld

Same as `sparring train online CONFIG` (`sparring train grpo`, its former name, still works).
"""

import sys

try:  # Ctrl-C while the libraries load: exit quietly, like the command itself
    from sparring.cli.train import grpo_main
except KeyboardInterrupt:
    sys.exit(130)

if __name__ == "__main__":
    grpo_main()
