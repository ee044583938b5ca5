#!/usr/bin/env python
"""Online GRPO where a rollout is a whole game played through the engine:

    python scripts/run_grpo.py --configuration grpo-quickstart

Same as `sparring train grpo CONFIG`.
"""

from sparring.cli.train import grpo_main

if __name__ == "__main__":
    grpo_main()
