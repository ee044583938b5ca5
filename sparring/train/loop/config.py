"""Schema of an iterative-DPO loop (`configs/train/*.yaml`, `scripts/run_iterative_dpo.py`), and
loading one by path or name."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from sparring.config_io import load_yaml_model
from sparring.errors import SparringError
from sparring.train.config import TrainSettings
from sparring.types import Strict


class ExportSettings(Strict):
    """Which rows each iteration's self-play yields (see `sparring export`): DPO pairs from branched
    rollouts or best-of-N candidates, or SFT rows of the games that pass `keep` (lm-selfplay keeps `above_avg`)."""

    keep: Literal["all", "winners", "correct", "above_avg", "nonzero", "top_k"] = "above_avg"
    k: int = Field(100, ge=1, description="top_k: how many (episode, player) pairs")
    cumulative: bool = Field(False, description="SFT: train on every iteration's rows so far, not only the last")
    include_aborted: bool = Field(False, description="SFT: also rows of aborted games (their accepted turns)")
    require: list[str] = Field(default_factory=list, description="outcome metrics that must be true for a player's "
                               "turns to be kept (a pair failing one counts as no gain), e.g. [scored_both] for Deal "
                               "or No Deal: a deal worth nothing to one side is not learnt from")
    target: Literal["prob", "log_prob", "logit", "binary"] = "prob"
    gamma: float = Field(1.0, gt=0.0)
    min_gap: float = Field(0.0, ge=0.0, description="DPO: drop pairs whose values differ by less (NYU: 0.10)")
    rejected: Literal["each", "worst"] = Field(
        "each", description="DPO: the best alternative against each one min_gap below it, or only against its "
        "lowest-valued one (NYU)")
    max_similarity: float | None = Field(
        None, ge=0.0, le=1.0, description="DPO: drop pairs whose two replies are more alike (word similarity "
        "0..1): shared words cancel in DPO's margin")
    seed: int = Field(0, description="DPO: the shuffle that breaks ties between equally valued alternatives")
    max_pairs: int | None = Field(None, ge=1, description="keep the pairs with the largest margins")
    held_back: float = Field(0.0, ge=0.0, lt=1.0, description="DPO: the share of pairs kept out of training (a "
                             "seeded draw): the trained adapter's accuracy on them says whether it learnt the "
                             "preference or the pairs")


class WarmStart(Strict):
    """Where ALIAS@0 starts: SFT on human games before the first iteration (the lm-selfplay warm
    start, `file`), SFT on a demonstrator's games (`demonstrator`: the self-play games with that
    model in the policy's seat, e.g. the scripted `debate-demonstrator`, so that DPO starts from a
    policy that already samples what the judge rewards: docs/learning/debate-dpo-contrast.md), or a
    LoRA adapter trained elsewhere (`adapter`). `train` changes the loop's trainer settings for the
    warm start only (e.g. `{learning_rate: 5.0e-4, max_steps: 42, batch_size: 4}`)."""

    human: str = "dond"  # a game's human-data source (`Game.hooks.human_data`): dond, nyu, ...
    file: str | None = Field(None, description="data.txt (dond) or the NYU readable JSONL")
    demonstrator: str | None = Field(None, description="a model name: it plays the policy's seat in the self-play "
                                                       "games (no branching) and its turns are the SFT rows")
    adapter: str | None = Field(None, description="a LoRA adapter of the base model: ALIAS@0 is the base with it")
    split: str = "train"
    limit: int | None = Field(None, ge=1)
    train: dict[str, Any] = Field(default_factory=dict, description="trainer settings (`train:` keys) that differ "
                                                                    "for the warm start's SFT")

    @model_validator(mode="after")
    def _one_source(self) -> WarmStart:
        if sum(x is not None for x in (self.file, self.demonstrator, self.adapter)) != 1:
            raise ValueError("warm_start needs exactly one of `file` (human games to train on), `demonstrator` (a "
                             "model whose self-play games to train on) or `adapter`")
        unknown = sorted(set(self.train) - set(TrainSettings.model_fields) - {"method", "model", "adapter"})
        if unknown:
            raise ValueError(f"warm_start.train: unknown trainer setting(s) {', '.join(unknown)}")
        fixed = sorted(set(self.train) & {"method", "model", "adapter"})
        if fixed:
            raise ValueError(f"warm_start.train: {', '.join(fixed)} cannot differ for the warm start (it is SFT of "
                             "`train.model` from scratch)")
        if self.adapter is not None and self.train:
            raise ValueError("warm_start.train applies to a warm start that trains (`file` or `demonstrator`), not "
                             "to a given `adapter`")
        return self

    def settings(self, base: TrainSettings, **update: Any) -> TrainSettings:
        """The loop's trainer settings with this warm start's changes, as SFT (validated)."""
        data = {**base.model_dump(), **self.train, "method": "sft", "adapter": None, **update}
        return TrainSettings.model_validate(data)


class EvalSettings(Strict):
    """Held-out cross-play after each iteration: the new policy against the base and the previous one."""

    dataset: dict[str, Any] = Field(description="the `dataset:` block of the evaluation games (held-out split)")
    flip: bool = True
    repeats: int = Field(1, ge=1)
    heldout_judges: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="judges never used in training (agent name -> agent config, e.g. "
        "{model: evidence-judge}): every evaluation is also judged by each, so a gain that appears only under "
        "the training judge shows as such")


class CheckSettings(Strict):
    """The greedy check on training prompts after each training (`loop/check.py`)."""

    instances: int = Field(8, ge=1, description="the first N training instances of `selfplay`, played once each "
                           "(with its flips and matchups) by the new policy and by the one it started from, greedily")


class LoopConfig(Strict):
    name: str = ""
    description: str = ""
    alias: str = Field("policy", description="adapters are registered as ALIAS@1, ALIAS@2, ...")
    method: Literal["dpo", "sft"] = Field("dpo", description="dpo: iterative DPO; sft: self-play SFT (lm-selfplay)")
    warm_start: WarmStart | None = None
    iterations: int = Field(2, ge=1)
    output_dir: str | None = Field(None, description="default: runs/<name>")
    models_file: str | None = Field(None, description="your models file (the base model's spec)")
    policy_agent: str = Field("policy", description="the agent of `selfplay` that is trained")
    selfplay: dict[str, Any] = Field(description="an experiment config (game, dataset, agents, tournament); the "
                                                 "policy's turns yield pairs from `branch:` (branched "
                                                 "rollouts) or from the agent's best_of_n")
    export: ExportSettings = Field(default_factory=ExportSettings)
    pair_fit: bool = Field(True, description="DPO: after each training, the trained adapter against its "
                           "reference on the pairs, token by token (shared / differing tokens), printed and saved (LoRA only)")
    check: CheckSettings | None = Field(None, description="after each training, before the held-out games: "
                                        "the new and the previous policy play training prompts greedily; their "
                                        "reward and the game's behaviour measures (e.g. debate: valid quotes per "
                                        "speech) compared, printed and saved. {} for the defaults")
    train: TrainSettings = Field(default_factory=TrainSettings)
    evaluation: EvalSettings


def load_loop(name_or_path: str) -> tuple[LoopConfig, str]:
    """A loop config by path or by name (`configs/train/NAME.yaml`, yours first, then shipped)."""
    from importlib import resources

    path = Path(name_or_path).expanduser()
    if not path.is_file():
        candidates = [Path.cwd() / "configs" / "train" / f"{name_or_path}.yaml",
                      Path(str(resources.files("sparring") / "configs" / "train" / f"{name_or_path}.yaml"))]
        found = next((p for p in candidates if p.is_file()), None)
        if found is None:
            raise SparringError(f"no loop configuration {name_or_path!r} (looked in configs/train/ and the shipped ones)")
        path = found
    config = load_yaml_model(LoopConfig, path)
    if not config.name:
        config = config.model_copy(update={"name": path.stem})
    if config.models_file:  # relative: the working directory, beside the config, the shipped configs
        from sparring.engine.loader import find_models_file

        models_file = find_models_file(config.models_file, path.parent)
        if Path(models_file).is_file():
            config = config.model_copy(update={"models_file": models_file})
    return config, str(path)
