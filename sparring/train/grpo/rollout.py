"""The GRPO rollout function: each prompt (an instance and the learner's seat) becomes a group of
whole episodes played through the engine's batched runner, the learner generating with the
trainer's current weights, every other seat played by its fixed model (a scripted partner, a
teacher, a judge). Returns TRL's rollout dict: one sequence per episode with the learner's tokens
as the trained completion (`env_mask` 0 on partners' and the game's tokens) and the episode's
outcome for the learner as `episode_reward` (read by `episode_reward` below)."""

from __future__ import annotations

import json
import math
from typing import Any

from sparring.engine.play import Arena
from sparring.train import distributed
from sparring.train.grpo.sequence import learner_sequence

LEARNER = "learner"  # the model alias the learner agent's config names


class EpisodeRollout:
    """`rollout_func(prompts, trainer)` for `GRPOTrainer`. `arena` plays the games; its learner
    agent's model is the alias `learner`, replaced by the trainer's model at every call."""

    def __init__(self, arena: Arena, learner_agent: str, tokenizer: Any, num_generations: int,
                 format_penalty: float = 0.0, seed: int = 0):
        self.arena, self.learner_agent, self.tokenizer = arena, learner_agent, tokenizer
        self.num_generations, self.format_penalty, self.seed = num_generations, format_penalty, seed
        self.calls = 0
        self.last_records: list[Any] = []

    def _learner_model(self, trainer: Any) -> Any:
        from sparring.models.hf import HFModel
        from sparring.train.grpo.vllm_rollout import vllm_learner

        served = vllm_learner(trainer, self.tokenizer, LEARNER)  # TRL's vLLM (use_vllm), weights synced
        if served is not None:
            return served
        model = trainer.accelerator.unwrap_model(trainer.model) if trainer is not None else None
        peft = getattr(model, "peft_config", None)
        default = "default" if isinstance(peft, dict) and "default" in peft else None
        return HFModel.from_objects(model, self.tokenizer, name=LEARNER, prefix_cache_mb=0,
                                    **({"default_adapter": default} if default else {}))

    def jobs(self, prompts: list[Any], before: list[Any] | None = None) -> list[Any]:
        """One job per prompt entry. A prompt names its instance and the learner's seat (see
        `prompt_rows`); copies of one prompt (a GRPO group) get different seeds. `before`: the
        prompts of this step on the processes before this one (a group split over processes
        continues their numbering, so every episode is played once, as by one process)."""
        from sparring.engine.schedule import derive_seed

        out: list[Any] = []
        seen: dict[tuple[str, int], int] = {}
        for key in map(parse_prompt, before or []):
            seen[key] = seen.get(key, -1) + 1
        for prompt in prompts:
            instance_id, seat = parse_prompt(prompt)
            key = (instance_id, seat)
            copy = seen[key] = seen.get(key, -1) + 1
            seed = derive_seed(self.seed, "grpo", self.calls, instance_id, seat, copy)
            out.append(self.arena.job(instance_id, self._seating(seat), seed=seed,
                                      repeat=self.calls * 10_000 + copy))
        return out

    def _seating(self, seat: int) -> tuple[str, ...]:
        others = [a for a in self.arena.exp.participants if a != self.learner_agent] or [self.learner_agent]
        agents = [others[i % len(others)] for i in range(len(self.arena.exp.seat_players))]
        agents[seat] = self.learner_agent
        return tuple(agents)

    def __call__(self, prompts: list[dict[str, Any]], trainer: Any = None) -> dict[str, Any]:
        self.arena.pool.add(LEARNER, self._learner_model(trainer))
        jobs = self.jobs(prompts, before=distributed.preceding(prompts))
        records = self.arena.play(jobs)
        self.calls += 1
        self.last_records = records
        out: dict[str, list[Any]] = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": [],
                                     "episode_reward": [], "episode_id": []}
        players = self.arena.exp.seat_players
        for job, rec in zip(jobs, records, strict=True):
            player = players[self._seat_of(job)]
            seq = learner_sequence(rec, player, self.tokenizer) if rec.status != "failed" else None
            if seq is None or not seq.completion_ids:
                ids = self.tokenizer(self.tokenizer.eos_token, add_special_tokens=False)["input_ids"]
                seq_prompt, seq_completion, mask = ids, ids, [0] * len(ids)
            else:
                seq_prompt, seq_completion, mask = seq.prompt_ids, seq.completion_ids, seq.env_mask
            out["prompt_ids"].append(seq_prompt)
            out["completion_ids"].append(seq_completion)
            out["env_mask"].append(mask)
            out["logprobs"].append([math.nan] * len(seq_completion))  # not sampled by vLLM: no correction
            out["episode_reward"].append(self.reward(rec, player))
            out["episode_id"].append(rec.id)
        return out

    def _seat_of(self, job: Any) -> int:
        return [job.seats[p] for p in self.arena.exp.seat_players].index(self.learner_agent)

    def reward(self, record: Any, player: str) -> float:
        """The outcome for the learner (negotiation reward under the objective, the judge's
        probability for a debater's side, a game score), minus `format_penalty` per rejected reply."""
        if record.status == "failed" or record.outcome is None:
            return 0.0
        base = float(record.outcome.rewards.get(player, 0.0))
        rejected = sum(1 for c in record.calls if c.player == player and c.rejected)
        return base - self.format_penalty * rejected


def prompt_rows(instance_ids: list[str], seats: list[int]) -> list[dict[str, Any]]:
    """The GRPO dataset: one conversational prompt per (instance, learner seat). The game itself
    renders what the learner sees; the prompt only names the episode to play."""
    return [{"prompt": [{"role": "user", "content": json.dumps({"instance_id": i, "seat": s})}]}
            for i in instance_ids for s in seats]


def parse_prompt(prompt: Any) -> tuple[str, int]:
    text = prompt[-1]["content"] if isinstance(prompt, list) else str(prompt)
    data = json.loads(text)
    return str(data["instance_id"]), int(data["seat"])


def episode_reward(prompts: Any = None, completions: Any = None, episode_reward: list[float] | None = None,
                   **kwargs: Any) -> list[float]:
    """GRPO reward function: the episode outcomes the rollout computed."""
    return list(episode_reward or [])
