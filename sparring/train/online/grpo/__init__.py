"""Online GRPO where a rollout is a whole game: the learner seat plays through the engine with
the trainer's current weights, partners and judges are fixed, the episode outcome is the reward."""
