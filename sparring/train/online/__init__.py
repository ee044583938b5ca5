"""Online RL through the engine: the learner plays whole games with its current weights and trains
on what it sampled. `grpo/` (TRL's GRPOTrainer with episode rollouts, episode- or turn-level
credit), `ppo/` (an actor-critic with a value head and GAE over the learner's turns), and what both
share: `credit.py` (turn rewards, returns, advantages). `scripts/run_grpo.py` runs either
(`algorithm: grpo | ppo`)."""
