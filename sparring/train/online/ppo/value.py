"""The critic: a value head on the policy's last hidden state, saved beside the LoRA adapter.

V(s_t) is read at the last prompt token before the learner's turn t (the state it answers). The
head is one linear layer (TRL 1.x no longer ships its value-head model), initialised to zero so
the first advantages are the plain returns. It lives in `value_head.safetensors` next to the
adapter: loadable to continue training, ignored at play time (the `hf` backend loads the adapter).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

FILE = "value_head.safetensors"


class ValueHead(nn.Module):
    def __init__(self, hidden_size: int):
        super().__init__()
        self.summary = nn.Linear(hidden_size, 1)
        nn.init.zeros_(self.summary.weight)
        nn.init.zeros_(self.summary.bias)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.summary(hidden.to(self.summary.weight.dtype)).squeeze(-1)


def values_of(head: ValueHead, states: Any, device: Any) -> list[float]:
    """V at hidden states computed elsewhere (the rollout's, `Completion.hidden`), without a pass."""
    with torch.no_grad():
        return head(torch.tensor(states, dtype=torch.float32, device=device)).float().tolist()


def hidden_size(model: Any) -> int:
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    return int(config.hidden_size)


def save_head(head: ValueHead, directory: str | Path) -> Path:
    from safetensors.torch import save_file

    path = Path(directory) / FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().cpu().contiguous() for k, v in head.state_dict().items()}, str(path))
    return path


def load_head(head: ValueHead, directory: str | Path) -> bool:
    """Load the head saved in `directory`; False if there is none."""
    from safetensors.torch import load_file

    path = Path(directory) / FILE
    if not path.is_file():
        return False
    head.load_state_dict(load_file(str(path)))
    return True
