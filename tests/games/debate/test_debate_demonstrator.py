"""The scripted debate demonstrator (the learning suite's warm-start teacher): it reads its
position and the story from the game's private request labels, names its answer and quotes a
story sentence that mentions it; the quote judge prefers it, and the labels never reach records."""

from __future__ import annotations

import json

import pytest
import yaml

from sparring.errors import BackendError
from sparring.games.debate.demonstrator import quoting_speech, supporting_sentence
from sparring.types import GenerateRequest, Message

from .debate_helpers import STORY, game, start


def test_the_sentence_sharing_most_words_with_the_position_and_then_the_shortest():
    assert supporting_sentence(STORY, "Dunmere") == "Mara Quill lives in Dunmere, in a narrow house near the square."
    assert supporting_sentence(STORY, "a baker") == "Tobin Harrow lives in Kelderby and works as a baker."
    assert supporting_sentence("Ann lives in Oslo. Ann lives in Oslo with a cat.", "Oslo") == "Ann lives in Oslo."
    assert supporting_sentence(STORY, "Zanzibar") is None


def test_labels_give_each_debater_its_own_position_and_the_judge_nothing():
    g = game()
    st = start(g, flip=True)
    a, b = g.request_labels(st, "Debater_A"), g.request_labels(st, "Debater_B")
    assert {a["debate_position"], b["debate_position"]} == {"Dunmere", "Kelderby"}
    assert a["debate_story"] == st.background
    assert g.request_labels(st, "Judge") == {}


def test_without_labels_it_refuses_clearly():
    with pytest.raises(BackendError, match="only plays debaters"):
        quoting_speech(GenerateRequest(messages=[Message(role="user", content="hi")]))


def test_demonstrations_quote_validly_win_under_the_quote_judge_and_keep_labels_private(tmp_path):
    from importlib import resources

    from sparring.engine.run import RunOptions, run_experiment
    from sparring.records.reader import iter_records

    shipped = resources.files("sparring") / "configs" / "experiments" / "models" / "scripted.yaml"
    models = yaml.safe_load(shipped.read_text(encoding="utf-8"))["models"]  # as users get them
    (tmp_path / "models.yaml").write_text(yaml.safe_dump({"models": {
        "demo": models["debate-demonstrator"], "judge": models["quote-judge"],
        "plain": {"backend": "scripted", "args": {"mode": "fixed", "text": "I am right and my opponent is wrong."}}}}))
    config = {"name": "demo", "game": "debate", "game_args": {"format": "debate", "rounds": 1},
              "models_file": str(tmp_path / "models.yaml"),
              "dataset": {"name": "generated", "split": "train", "limit": 4,
                          "args": {"people": 2, "filler_sentences": 0}},
              "agents": {"demo": {"role": "debater", "model": "demo"}, "plain": {"role": "debater", "model": "plain"},
                         "judge": {"role": "judge", "model": "judge"}},
              "tournament": {"type": "custom", "matchups": [["demo", "plain"], ["plain", "demo"]],
                             "judges": ["judge"], "flip": True}}
    (tmp_path / "demo.yaml").write_text(yaml.safe_dump(config))
    result = run_experiment(RunOptions(configuration=str(tmp_path / "demo.yaml"), output_dir=str(tmp_path / "runs"),
                                       quiet=True))
    assert result.status == "complete"
    records = list(iter_records(result.run_dir))
    assert len(records) == 16
    for r in records:
        seat = next(p for p, s in r.seats.items() if s.agent == "demo")
        stats = r.outcome.metrics["quote_stats"][seat]
        assert stats["n_quotes"] == stats["n_valid"] == 1
        assert r.outcome.metrics["probs"][seat] > 0.9  # quotes and names its answer: the judge's rule
    stored = "".join(p.read_text() for p in result.run_dir.glob("*.jsonl"))
    assert "debate_story" not in stored and "debate_position" not in stored
    assert json.loads(stored.splitlines()[0])  # the records are plain JSONL
