"""The online trainer's TRL path (`trainer: trl`): TRL's `GRPOTrainer` with whole games as its
rollouts (`grpo.py`), and its vLLM integration for GPUs (`vllm.py`)."""
