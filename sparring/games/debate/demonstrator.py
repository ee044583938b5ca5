"""A scripted debater that argues the way the scripted quote judge rewards: it names its answer
and quotes the shortest story sentence that mentions it (a scripted model's `function`).

Why: the bundled model never writes a `<quote>` on its own (0 in 256 sampled speeches), so the
judge's main reward is never sampled and DPO has nothing to prefer. Its speeches on training
stories are SFT demonstrations — a warm start, like TextWorld's gold policy — after which
sampled speeches sometimes quote and sometimes do not, which DPO can learn from. It reads its
position and the story from the game's private request labels (`DebateGame.request_labels`),
never from the prompt's wording, so it works with every prompt variant.
"""

from __future__ import annotations

import re

from sparring.errors import BackendError
from sparring.games.debate.scripted_judge import content_words
from sparring.types import GenerateRequest

POSITION_LABEL = "debate_position"
STORY_LABEL = "debate_story"
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def supporting_sentence(story: str, position: str) -> str | None:
    """The shortest story sentence sharing the most words (of 3+ letters, the judge's own rule)
    with `position`."""
    words = content_words(position)
    best: tuple[int, int] | None = None
    found = None
    for sentence in (s.strip() for s in _SENTENCE.split(story)):
        overlap = len(words & content_words(sentence))
        if sentence and overlap and (best is None or (-overlap, len(sentence)) < best):
            best, found = (-overlap, len(sentence)), sentence
    return found


def quoting_speech(request: GenerateRequest) -> str:
    """`The answer is X. <quote>sentence</quote>` (no quote when no sentence mentions X)."""
    position = request.context.get(POSITION_LABEL)
    story = request.context.get(STORY_LABEL)
    if not isinstance(position, str) or not isinstance(story, str):
        raise BackendError("the debate demonstrator only plays debaters' speeches in debate episodes")
    sentence = supporting_sentence(story, position)
    speech = f"The answer is {position}."
    return f"{speech} The story says: <quote>{sentence}</quote>" if sentence else speech
