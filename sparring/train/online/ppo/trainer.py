"""`algorithm: ppo` of `scripts/run_grpo.py`: PPO with a value head and turn-level credit, over
whole games played by the engine.

Each step plays `prompts_per_step` x `num_generations` episodes with the learner's current
weights (every other seat its fixed model), then:
1. one no-grad pass gives each sampled token's log-probability under the policy and under the
   reference (the starting policy: the base with the adapter off, or `adapter` as it was loaded),
   and each turn's value;
2. each turn's reward (its step reward; the last turn also what the outcome adds) minus kl_coef x
   the turn's KL to the reference; optionally whitened;
3. GAE over the learner's turns (γ = `gamma`, λ = `ppo.lam`) gives each turn an advantage (applied
   to exactly the tokens that turn sampled) and a value target;
4. `ppo.ppo_epochs` passes of minibatches: clipped policy loss, clipped value loss (x vf_coef),
   minus ent_coef x entropy; gradient clipping; AdamW on the LoRA weights and the value head.
Every `ppo.eval.every` steps the held-out instances are played (greedy by default) and the best
checkpoint is kept in `OUT/best`; checkpoints (adapter, value head, optimizer, step) go to
`OUT/trainer/checkpoint-N`, and a rerun resumes from the last one, reproducing the steps (every
episode's sampling seed and every minibatch order derive from the seed and the step). One process.
The run around this trainer (steps, evaluations, resume, report) is `run.py`.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from sparring.errors import SparringError
from sparring.train.online.grpo.config import GRPOConfig
from sparring.train.online.ppo.batch import Item, forward, items_of


def _seed(*parts: Any) -> int:
    import hashlib

    return int(hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:15], 16)


def prompts_for_step(rows: list[dict[str, Any]], per_step: int, step: int, seed: int) -> list[Any]:
    """The prompts of step `step` (0-based): consecutive slices of seeded permutations of the
    dataset, one permutation per pass (epoch) over it."""
    out: list[Any] = []
    start = step * per_step
    for k in range(start, start + per_step):
        epoch, index = divmod(k, len(rows))
        order = list(range(len(rows)))
        random.Random(_seed(seed, "epoch", epoch)).shuffle(order)
        out.append(rows[order[index]]["prompt"])
    return out


class PPOTrainer:
    def __init__(self, config: GRPOConfig, file: str, arena: Any, out: Path, console: Console | None = None):
        import torch

        from sparring.models.hf import HFModel
        from sparring.train.config import TrainSettings
        from sparring.train.online.grpo.rollout import LEARNER, EpisodeRollout, prompt_rows
        from sparring.train.online.learner import experiment_models_file, learner_temperature
        from sparring.train.online.ppo.value import ValueHead, hidden_size, load_head
        from sparring.train.policy import load_policy, lora_config, with_new_adapter

        self.config, self.file, self.arena, self.out = config, file, arena, out
        self.ppo = config.ppo
        self.console = console or Console(stderr=True, soft_wrap=True)
        self.temperature = learner_temperature(arena, config, file)
        if self.temperature <= 0:
            from sparring.errors import ConfigError

            raise ConfigError("PPO learns from the policy's own samples: the learner's sampling temperature must "
                              "be > 0 (e.g. 1.0)", file=file,
                              key=f"experiment.agents.{config.learner_agent}.sampling.temperature")
        self.rows = prompt_rows(sorted(arena.instances), config.seats)
        if not self.rows:
            raise SparringError(f"{file}: the experiment's dataset has no instances")
        settings = TrainSettings(model=config.model, lora=config.lora, adapter=config.adapter,
                                 models_file=experiment_models_file(config, file))
        model, self.tokenizer = load_policy(settings)
        torch.manual_seed(_seed(config.seed, "init"))
        if config.adapter:  # continue this adapter; a frozen copy of it is the reference
            model.load_adapter(config.adapter, adapter_name="ref", is_trainable=False)
            model.set_adapter("default")
        else:
            model = with_new_adapter(model, lora_config(settings))
        if not hasattr(model, "peft_config"):
            raise SparringError("PPO trains a LoRA adapter: set `lora` (or `adapter`)")
        self.model = model
        self.device = next(model.parameters()).device
        self.head = ValueHead(hidden_size(model)).to(self.device)
        if config.adapter:
            load_head(self.head, config.adapter)
        policy_params = [p for n, p in model.named_parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(
            [{"params": policy_params, "lr": config.learning_rate},
             {"params": list(self.head.parameters()), "lr": self.ppo.value_lr or config.learning_rate * 10}],
            weight_decay=config.weight_decay)
        self.params = policy_params + list(self.head.parameters())
        self.learner = HFModel.from_objects(model, self.tokenizer, name=LEARNER,
                                            default_adapter="default")
        self.arena.pool.add(LEARNER, self.learner)
        self.rollout = EpisodeRollout(arena, config.learner_agent, self.tokenizer, config.num_generations,
                                      config.format_penalty, config.seed, train_rejected=config.train_rejected)
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        self.step = 0
        self.best: dict[str, Any] | None = None

    # -- one step ---------------------------------------------------------------------------
    def collect(self, step: int) -> tuple[list[Any], list[Item], dict[int, list[float]], dict[int, Any]]:
        """Play this step's episodes; (records, items, turn rewards by episode, records by episode)."""
        from sparring.train.online.credit import turn_rewards

        prompts = prompts_for_step(self.rows, self.config.prompts_per_step, step, self.config.seed)
        self.rollout.calls = step  # the episodes' seeds derive from the step
        records, sequences = self.rollout.play(prompts, self.learner.prompt_ids)
        items: list[Item] = []
        rewards: dict[int, list[float]] = {}
        kept: dict[int, Any] = {}
        for e, (rec, seqs, job) in enumerate(zip(records, sequences, self.rollout.last_jobs, strict=True)):
            reward = self.rollout.reward(rec, self.rollout.player_of(job))
            if reward is None or not seqs:
                continue
            calls = [i for s in seqs for i in s.calls]
            rewards[e] = turn_rewards(rec, calls, reward)
            kept[e] = rec
            items += items_of(e, seqs)
        return records, items, rewards, kept

    def _batches(self, items: list[Item], generator: random.Random | None = None) -> list[list[Item]]:
        order = list(range(len(items)))
        if generator is not None:
            generator.shuffle(order)
        size = self.ppo.minibatch_size
        return [[items[i] for i in order[k:k + size]] for k in range(0, len(order), size)]

    def score(self, items: list[Item]) -> None:
        """Old and reference log-probabilities and old values, without gradients."""
        import torch

        self.model.eval()
        with torch.no_grad():
            for batch in self._batches(items):
                logprobs, values, _ = forward(self.model, self.head, batch, self.temperature, self.pad_id)
                for it, lp, v in zip(batch, logprobs, values, strict=True):
                    it.old_logprobs, it.old_values = lp.tolist(), v.tolist()
                with self._reference():
                    ref, _, _ = forward(self.model, None, batch, self.temperature, self.pad_id)
                for it, lp in zip(batch, ref, strict=True):
                    it.ref_logprobs = lp.tolist()

    def _reference(self) -> Any:
        import contextlib

        if "ref" in self.model.peft_config:
            @contextlib.contextmanager
            def swap() -> Any:
                self.model.set_adapter("ref")
                try:
                    yield
                finally:
                    self.model.set_adapter("default")
            return swap()
        return self.model.disable_adapter()

    def advantages(self, items: list[Item], rewards: dict[int, list[float]]) -> dict[str, Any]:
        """KL-penalised turn rewards -> GAE advantages and returns, stored per (episode, turn)."""
        from sparring.train.online.credit import gae, whiten

        values: dict[int, list[float]] = {e: [0.0] * len(r) for e, r in rewards.items()}
        kl: dict[int, list[float]] = {e: [0.0] * len(r) for e, r in rewards.items()}
        for it in items:
            for t, v in zip(it.turns, it.old_values, strict=True):
                values[it.episode][t] = v
            for t, old, ref in zip(it.token_turn, it.old_logprobs, it.ref_logprobs, strict=True):
                kl[it.episode][t] += old - ref
        shaped = {e: [r - self.ppo.kl_coef * k for r, k in zip(rewards[e], kl[e], strict=True)] for e in rewards}
        if self.ppo.whiten_rewards:
            flat = whiten([r for e in sorted(shaped) for r in shaped[e]])
            n = 0
            for e in sorted(shaped):
                shaped[e], n = flat[n:n + len(shaped[e])], n + len(shaped[e])
        adv: dict[int, list[float]] = {}
        ret: dict[int, list[float]] = {}
        for e in shaped:
            adv[e], ret[e] = gae(shaped[e], values[e], self.config.gamma, self.ppo.lam)
        if self.ppo.whiten_advantages:
            flat = whiten([a for e in sorted(adv) for a in adv[e]])
            n = 0
            for e in sorted(adv):
                adv[e], n = flat[n:n + len(adv[e])], n + len(adv[e])
        self._adv, self._ret = adv, ret
        turns_kl = [k for e in kl for k in kl[e]]
        return {"kl": sum(turns_kl) / len(turns_kl) if turns_kl else 0.0,
                "turn_reward": sum(r for e in rewards for r in rewards[e]) / max(1, sum(map(len, rewards.values())))}

    def optimise(self, items: list[Item], step: int) -> dict[str, float]:
        import torch

        cfg, ppo = self.config, self.ppo
        stats: dict[str, list[float]] = {"pg_loss": [], "vf_loss": [], "entropy": [], "clipfrac": [], "approx_kl": []}
        self.model.train()
        for epoch in range(ppo.ppo_epochs):
            for batch in self._batches(items, random.Random(_seed(cfg.seed, "minibatch", step, epoch))):
                logprobs, values, entropies = forward(self.model, self.head, batch, self.temperature, self.pad_id,
                                                      with_entropy=True)
                pg, vf, ent, clipped, approx = [], [], [], [], []
                for it, lp, v, en in zip(batch, logprobs, values, entropies, strict=True):
                    old = torch.tensor(it.old_logprobs, device=lp.device)
                    a = torch.tensor([self._adv[it.episode][t] for t in it.token_turn], device=lp.device)
                    ratio = torch.exp(lp - old)
                    pg.append(torch.max(-a * ratio, -a * ratio.clamp(1 - ppo.cliprange, 1 + ppo.cliprange)))
                    clipped.append(((ratio - 1).abs() > ppo.cliprange).float())
                    approx.append(0.5 * (lp - old) ** 2)
                    ent.append(en)
                    old_v = torch.tensor(it.old_values, device=v.device)
                    target = torch.tensor([self._ret[it.episode][t] for t in it.turns], device=v.device)
                    v_clip = old_v + (v - old_v).clamp(-ppo.cliprange_value, ppo.cliprange_value)
                    vf.append(0.5 * torch.max((v - target) ** 2, (v_clip - target) ** 2))
                pg_loss, vf_loss = torch.cat(pg).mean(), torch.cat(vf).mean()
                entropy = torch.cat(ent).mean()
                loss = pg_loss + ppo.vf_coef * vf_loss - ppo.ent_coef * entropy
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if cfg.max_grad_norm > 0:
                    torch.nn.utils.clip_grad_norm_(self.params, cfg.max_grad_norm)
                self.optimizer.step()
                stats["pg_loss"].append(float(pg_loss.detach()))
                stats["vf_loss"].append(float(vf_loss.detach()))
                stats["entropy"].append(float(entropy.detach()))
                stats["clipfrac"].append(float(torch.cat(clipped).mean()))
                stats["approx_kl"].append(float(torch.cat(approx).detach().mean()))
        self.model.eval()
        return {k: sum(v) / len(v) for k, v in stats.items() if v}

    def train_step(self, step: int) -> dict[str, Any]:
        import torch

        torch.manual_seed(_seed(self.config.seed, "step", step))  # dropout: the same on a resumed run
        t = time.perf_counter()
        records, items, rewards, kept = self.collect(step)
        rollout_s = time.perf_counter() - t
        outcome = [float(sum(r)) for r in rewards.values()]
        point: dict[str, Any] = {"step": step + 1, "episodes": len(records), "failed": len(records) - len(kept),
                                 "reward": sum(outcome) / len(outcome) if outcome else None,
                                 "turns": sum(map(len, rewards.values())),
                                 "trained_tokens": sum(len(it.positions) for it in items)}
        point.update(self._game_metrics(kept.values()))
        if items:
            t2 = time.perf_counter()
            self.score(items)
            point.update(self.advantages(items, rewards))
            point.update(self.optimise(items, step))
            point["train_s"] = round(time.perf_counter() - t2, 2)
        point["rollout_s"] = round(rollout_s, 2)
        return point

    def _game_metrics(self, records: Any) -> dict[str, float]:
        """The learner's games' numeric outcome metrics (score, success, ...), averaged."""
        sums: dict[str, list[float]] = {}
        for r in records:
            for k, v in (r.outcome.metrics if r.outcome else {}).items():
                if isinstance(v, bool | int | float) and not isinstance(v, str):
                    sums.setdefault(f"game/{k}", []).append(float(v))
        return {k: sum(v) / len(v) for k, v in sums.items()}

    # -- evaluation, checkpoints ----------------------------------------------------------------
    def evaluate(self, step: int, eval_arena: Any) -> dict[str, Any]:
        from sparring.train.online.grpo.rollout import LEARNER

        ev = self.ppo.eval
        assert ev is not None
        eval_arena.pool.add(LEARNER, self.learner)
        jobs = [eval_arena.job(i, self.rollout.seating(seat), seed=_seed(self.config.seed, "eval", i, seat))
                for i in sorted(eval_arena.instances) for seat in self.config.seats]
        records = eval_arena.play(jobs)
        players = eval_arena.exp.seat_players
        rewards, metric = [], []
        for job, rec in zip(jobs, records, strict=True):
            player = players[[job.seats[p] for p in players].index(self.config.learner_agent)]
            reward = self.rollout.reward(rec, player)
            rewards.append(reward if reward is not None else 0.0)
            m = rec.outcome.metrics if rec.outcome else {}
            metric.append(float(m.get(ev.metric, 0.0)) if ev.metric != "reward" else rewards[-1])
        value = sum(metric) / len(metric) if metric else 0.0
        return {"step": step, "episodes": len(records), "reward": sum(rewards) / len(rewards) if rewards else 0.0,
                ev.metric: value, "value": value}

    def save(self, directory: Path) -> Path:
        from sparring.train.online.ppo.value import save_head

        directory.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(str(directory), selected_adapters=["default"])
        self.tokenizer.save_pretrained(str(directory))
        save_head(self.head, directory)
        return directory

    def checkpoint(self, step: int) -> Path:
        import torch

        directory = self.out / "trainer" / f"checkpoint-{step}"
        tmp = directory.with_name(directory.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        self.save(tmp)
        torch.save(self.optimizer.state_dict(), tmp / "optimizer.pt")
        (tmp / "trainer_state.json").write_text(json.dumps({"step": step, "best": self.best}), encoding="utf-8")
        shutil.rmtree(directory, ignore_errors=True)
        tmp.rename(directory)
        kept = checkpoints(self.out)
        for old in kept[: -self.config.save_total_limit]:
            shutil.rmtree(old, ignore_errors=True)
        return directory

    def resume(self, directory: Path) -> int:
        import torch
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        from sparring.train.online.ppo.value import load_head

        set_peft_model_state_dict(self.model, load_file(str(directory / "adapter_model.safetensors")),
                                  adapter_name="default")
        load_head(self.head, directory)
        self.optimizer.load_state_dict(torch.load(directory / "optimizer.pt", weights_only=True))
        state = json.loads((directory / "trainer_state.json").read_text(encoding="utf-8"))
        self.best = state.get("best")
        return int(state["step"])


def checkpoints(out: Path) -> list[Path]:
    """The run's checkpoints, oldest first."""
    root = out / "trainer"
    found = [p for p in root.glob("checkpoint-*") if p.is_dir() and p.name.split("-")[1].isdigit()] \
        if root.is_dir() else []
    return sorted(found, key=lambda p: int(p.name.split("-")[1]))
