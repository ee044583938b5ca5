"""PPO for multi-turn games: an actor-critic over the engine's episodes (`algorithm: ppo`)."""
