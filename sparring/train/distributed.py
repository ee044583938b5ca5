"""Several processes under `accelerate launch`: one set of games, one state file, one checkpoint.

Launched with N processes, every process runs the same script. What plays games, exports rows,
writes files or registers models runs on the main process only and hands its result to the others
(`on_main`); training runs on every process (DDP or DeepSpeed through the Trainer) and ends at a
barrier (`everywhere`). The adapter is saved once, with complete weights (`save_trained`:
accelerate's `get_state_dict` gathers ZeRO-3 shards on every process, the main process writes).

Failures: an exception on the main process inside `on_main` reaches every other process as
`RankFailed` with its reason, so all of them stop at once with the same message. An exception
inside training ends that process; torchrun (the launcher behind `accelerate launch`) then stops
the others and names the failed rank.

Exit: `finish` tears the process group down before the interpreter does (`run_guarded` calls it
for every command). Left to interpreter shutdown, gloo's worker threads can be destroyed while
still joinable ("terminate called without an active exception"): SIGABRT on a run that finished.

Without a launcher (`WORLD_SIZE` unset or 1) everything is the plain single-process behaviour
and no process group is created.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from sparring.errors import SparringError

T = TypeVar("T")

# The main process may play games for hours while the others wait in a collective: the default
# 30-minute process-group timeout would kill a healthy run. Override with SPARRING_DIST_TIMEOUT_S.
DEFAULT_TIMEOUT_S = 24 * 3600


class RankFailed(SparringError):
    """Another process failed; this one stops with that process's reason."""


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE") or 1)


def launched() -> bool:
    """True under a launcher that started more than one process."""
    return world_size() > 1


def _state() -> Any:
    """accelerate's process state (creates the process group on first use: gloo on CPU, NCCL on
    CUDA, with a long timeout). The Trainer later finds and reuses this same shared state."""
    import torch
    from accelerate import PartialState

    timeout = int(os.environ.get("SPARRING_DIST_TIMEOUT_S") or DEFAULT_TIMEOUT_S)
    return PartialState(cpu=not torch.cuda.is_available(), timeout=timedelta(seconds=timeout))


def process_index() -> int:
    return _state().process_index if launched() else 0


def is_main() -> bool:
    return not launched() or bool(_state().is_main_process)


def barrier() -> None:
    if launched():
        _state().wait_for_everyone()


def _broadcast(obj: Any) -> Any:
    from accelerate.utils import broadcast_object_list

    _state()  # first: accelerate's helpers would otherwise create a state that ignores CPU ranks
    box = [obj]
    broadcast_object_list(box, from_process=0)
    return box[0]


def from_main(obj: T) -> T:
    """The main process's `obj` on every process (picklable objects)."""
    return _broadcast(obj) if launched() else obj


def on_main(fn: Callable[[], T], what: str) -> T:
    """Run `fn` on the main process only; every process returns its (picklable) result. If it
    raises, the main process re-raises and the others raise `RankFailed` with the reason."""
    if not launched():
        return fn()
    payload: tuple[str, Any] | None = None
    if is_main():
        try:
            payload = ("ok", fn())
        except BaseException as err:
            _broadcast(("error", f"{type(err).__name__}: {err}"))
            raise
    payload = _broadcast(payload)
    assert payload is not None
    if payload[0] == "error":
        raise RankFailed(f"{what} failed on the main process: {payload[1]}")
    return payload[1]


def everywhere(fn: Callable[[], T], what: str) -> T:
    """Run `fn` on every process (training), then agree on the main process's result, which is
    also the barrier before the next stage."""
    result = fn()
    return from_main(result) if launched() else result


def stage(fn: Callable[[], T], *, all_ranks: bool, what: str) -> T:
    """A loop stage: training stages run on every process, all others on the main one."""
    return everywhere(fn, what) if all_ranks else on_main(fn, what)


def preceding(items: list[T]) -> list[T]:
    """The items the processes before this one hold (in rank order); every process must call
    this at the same point (a collective). Used to number a GRPO group split over processes."""
    if not launched():
        return []
    from accelerate.utils import gather_object

    _state()
    everyone = gather_object([items])
    return [x for part in everyone[: process_index()] for x in part]


def finish() -> None:
    """Destroy this process's process group, if one was created (idempotent; a no-op without a
    launcher). Local to the process: it waits on no other rank, so it is safe after a failure."""
    if not launched():
        return
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def shared_dataset(dataset: Any, directory: str | Path) -> Any:
    """`dataset` backed by files in `directory` that every process sees. TRL caches DPO's
    precomputed reference log-probs next to the dataset's files; an in-memory dataset puts them
    in a per-process temporary directory, where the other processes cannot find them."""
    if not launched():
        return dataset
    import datasets

    directory = Path(directory)

    def write() -> None:
        if directory.exists():
            shutil.rmtree(directory)
        dataset.save_to_disk(str(directory))

    on_main(write, f"saving the training rows to {directory}")
    return datasets.load_from_disk(str(directory))


def save_trained(trainer: Any, tokenizer: Any, out: str | Path) -> Path:
    """Save the trained adapter (or model) once, complete: every process takes part in gathering
    the weights (ZeRO-3 shards them), the main process writes, then all meet at a barrier."""
    from sparring.train.policy import save_adapter

    out = Path(out)
    accelerator = trainer.accelerator
    state_dict = accelerator.get_state_dict(trainer.model_wrapped)
    if accelerator.is_main_process:
        save_adapter(accelerator.unwrap_model(trainer.model_wrapped), tokenizer, out, state_dict=state_dict)
    accelerator.wait_for_everyone()
    return out

