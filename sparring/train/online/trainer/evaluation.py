"""The held-out evaluation during an online run (`ppo.eval`): the learner's current weights play
every held-out instance in each trained seat against the run's other agents (not its league
snapshots), and the step's mean reward and metric are logged beside the training steps. Kept out of
the step itself (`core.py`) because it plays its own arena and trains nothing."""

from __future__ import annotations

from typing import Any

from sparring.train.online.trainer.collect import seed_of


def evaluate(trainer: Any, step: int, eval_arena: Any) -> dict[str, Any]:
    """One evaluation of `trainer`'s learner on `eval_arena`: the mean reward (the rollout's, format
    penalty included) and the mean of `ppo.eval.metric` over the held-out games."""
    from sparring.train.online.rollout import LEARNER  # the engine, loaded with the run

    config = trainer.config
    ev = trainer.ppo.eval
    assert ev is not None
    eval_arena.pool.add(LEARNER, trainer.learner)
    players = eval_arena.exp.seat_players
    others = [a for a in eval_arena.exp.participants if a != config.learner_agent
              and a not in trainer.opponents.snapshot_agents] or [config.learner_agent]

    def seating(seat: int) -> tuple[str, ...]:
        agents = [others[i % len(others)] for i in range(len(players))]
        agents[seat] = config.learner_agent
        return tuple(agents)

    seats = config.seats if config.opponents.mode != "self_play" else list(range(len(players)))
    jobs = [eval_arena.job(i, seating(seat), seed=seed_of(config.seed, "eval", i, seat))
            for i in sorted(eval_arena.instances) for seat in seats]
    records = eval_arena.play(jobs)
    trainer.model.set_adapter("default")
    rewards, metric = [], []
    for job, rec in zip(jobs, records, strict=True):
        player = players[[job.seats[p] for p in players].index(config.learner_agent)]
        reward = trainer.rollout.reward(rec, player)
        rewards.append(reward if reward is not None else 0.0)
        m = rec.outcome.metrics if rec.outcome else {}
        metric.append(float(m.get(ev.metric, 0.0)) if ev.metric != "reward" else rewards[-1])
    value = sum(metric) / len(metric) if metric else 0.0
    return {"step": step, "episodes": len(records), "reward": sum(rewards) / len(rewards) if rewards else 0.0,
            ev.metric: value, "value": value}
