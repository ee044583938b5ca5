"""sparring's own online trainer: PPO (value head, GAE) and GRPO-style group or per-role baselines
(self-play with RAE), one process, every pass counted (`cost.py`)."""
