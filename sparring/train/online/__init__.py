"""Online RL through the engine: the learner plays whole games with its current weights and trains
on what it sampled. One config for both algorithms, `config.OnlineConfig` (`algorithm: grpo | ppo`);
`launch.py` loads, checks and runs it (`scripts/run_grpo.py`, `sparring train online`); the games
are played by `rollout.py` and turned into the exact sampled tokens by `sequence.py`; `trainer/` is
sparring's own trainer (GRPO and PPO), `trl/` the TRL path (`GRPOTrainer`, vLLM rollouts), `ppo/`
the critic and PPO's settings, `credit.py` the turn rewards, returns and advantages both share."""
