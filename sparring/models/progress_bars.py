"""The model libraries' own progress bars off for a quiet run (`sparring run -q`): transformers'
"Loading weights" bar and huggingface_hub's download bars, through their public switches
(`transformers.utils.logging.disable_progress_bar`, `huggingface_hub.utils.disable_progress_bars`).

Nothing changes unless asked (no import-time effect), and both libraries are left as they were
afterwards, so a notebook that runs one quiet experiment keeps its bars for the next thing it does.
Worker processes the run starts import the libraries afresh: for them `HF_HUB_DISABLE_PROGRESS_BARS`
is set for the duration of the run (both libraries read it when they are imported).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

ENV = "HF_HUB_DISABLE_PROGRESS_BARS"


@contextmanager
def no_progress_bars(quiet: bool = True) -> Iterator[None]:
    """Within the block, no progress bar from transformers or huggingface_hub (when `quiet`)."""
    if not quiet:
        yield
        return
    try:
        from huggingface_hub import utils as hub
        from transformers.utils import logging as tf_logging
    except ImportError:  # no model library installed: nothing of theirs can draw a bar
        hub = tf_logging = None  # type: ignore[assignment]
    env = os.environ.get(ENV)
    os.environ[ENV] = "1"
    hub_off = tf_on = False
    if hub is not None and tf_logging is not None:
        hub_off, tf_on = hub.are_progress_bars_disabled(), tf_logging.is_progress_bar_enabled()
        with warnings.catch_warnings():  # HF_HUB_DISABLE_PROGRESS_BARS=0 at import wins over the switch
            warnings.simplefilter("ignore")
            tf_logging.disable_progress_bar()  # transformers' bars, and huggingface_hub's with them
            hub.disable_progress_bars()
    try:
        yield
    finally:
        if env is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = env
        if hub is not None and tf_logging is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if tf_on:
                    tf_logging.enable_progress_bar()
                if hub_off:
                    hub.disable_progress_bars()
                else:
                    hub.enable_progress_bars()
