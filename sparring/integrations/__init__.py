"""sparring's games on the engines people scale RL with.

`verifiers/`: every registered game as a verifiers v1 environment (what prime-rl trains on), written
as an installable package by `sparring verifiers package`. `trl/`: TRL `environment_factory` classes
for games with one learner (every other seat fixed). Both drive the engine's in-memory play API
(`sparring.engine.play.Arena`): the seats they hold are answered from outside the engine
(`seats.SeatRouter`), so rules, turn order, visibility, re-prompts and rewards stay the engine's.
"""
