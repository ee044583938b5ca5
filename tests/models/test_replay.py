"""Replay backend: recorded speeches looked up by instance, player, tag and turn."""

from __future__ import annotations

import json

import pytest

from sparring.errors import BackendError, ConfigError, ScoringNotSupported
from sparring.models.registry import backend_class
from sparring.models.replay import ReplayModel
from sparring.types import GenerateRequest, Message, ScoreRequest


def episode(instance_id, flip=False, speeches=("A1", "B1", "A2", "B2")):
    events = [{"index": i, "player": s[0], "tag": "speech", "content": f"{s} of {instance_id} flip={flip}",
               "round": i // 2} for i, s in enumerate(speeches)]
    events.append({"index": len(events), "player": "judge", "tag": "verdict", "content": "A: 70%"})
    return {"id": f"ep-{instance_id}-{flip}", "instance": {"id": instance_id}, "flip": flip,
            "seats": {"A": {"role": "debater"}, "B": {"role": "debater"}, "judge": {"role": "judge"}},
            "events": events}


def ask(model, **context) -> str:
    request = GenerateRequest(messages=[Message(role="user", content="your turn")], context=context)
    return model.generate([request])[0][0].text


def test_registered_and_cannot_score():
    assert backend_class("replay") is ReplayModel
    m = ReplayModel.from_records([episode("q1")])
    assert m.can_score is False
    with pytest.raises(ScoringNotSupported):
        m.score([ScoreRequest(messages=[Message(role="user", content="x")], options=["A", "B"])])


def test_lookup_by_player_tag_and_turn_index():
    m = ReplayModel.from_records([episode("q1"), episode(7)])
    assert ask(m, instance_id="q1", player="A", tag="speech", index=0) == "A1 of q1 flip=False"
    assert ask(m, instance_id="q1", player="A", tag="speech", index=1) == "A2 of q1 flip=False"
    assert ask(m, instance_id="q1", player="B", tag="speech", round=1) == "B2 of q1 flip=False"
    # ids compare as text: the int instance id 7 matches the context string "7".
    assert ask(m, instance_id="7", player="judge", tag="verdict", index=0) == "A: 70%"
    [[c]] = m.generate([GenerateRequest(messages=[Message(role="user", content="a b")],
                                        context={"instance_id": "q1", "player": "B", "tag": "speech", "index": 0})])
    assert c.usage.completion_tokens == 4 and c.usage.prompt_tokens == 2


def test_missing_speech_names_key_and_source(tmp_path):
    path = tmp_path / "episodes.jsonl"
    path.write_text(json.dumps(episode("q1")) + "\n")
    m = ReplayModel(path=str(path))
    with pytest.raises(BackendError) as info:
        ask(m, instance_id="q1", player="A", tag="speech", index=5)
    msg = str(info.value)
    assert "instance_id=q1" in msg and "player=A" in msg and "index=5" in msg and str(path) in msg
    with pytest.raises(BackendError, match="no 'player'"):
        ask(m, instance_id="q1", tag="speech", index=0)


def test_run_directory_input_and_flip_matching(tmp_path):
    lines = [json.dumps(episode("q1", flip=False)), "", json.dumps(episode("q1", flip=True))]
    (tmp_path / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    ambiguous = ReplayModel(path=str(tmp_path))
    with pytest.raises(BackendError, match="add 'flip'"):
        ask(ambiguous, instance_id="q1", player="A", tag="speech", index=0)
    # The verdict is the same text in both records, so it is not ambiguous.
    assert ask(ambiguous, instance_id="q1", player="judge", tag="verdict", index=0) == "A: 70%"
    m = ReplayModel(path=str(tmp_path), match=["instance_id", "flip", "player", "tag", "index"])
    assert ask(m, instance_id="q1", flip=True, player="A", tag="speech", index=0) == "A1 of q1 flip=True"
    assert ask(m, instance_id="q1", flip=False, player="A", tag="speech", index=0) == "A1 of q1 flip=False"
    first = ReplayModel(path=str(tmp_path), duplicates="first")
    assert ask(first, instance_id="q1", player="A", tag="speech", index=0) == "A1 of q1 flip=False"


def test_match_on_role_uses_seat_role():
    m = ReplayModel.from_records([episode("q1")], match=["instance_id", "role", "tag", "index"])
    assert ask(m, instance_id="q1", role="judge", tag="verdict", index=0) == "A: 70%"


def test_assistant_prefix_is_not_repeated():
    m = ReplayModel.from_records([episode("q1")])
    request = GenerateRequest(messages=[Message(role="user", content="verdict?")], assistant_prefix="A:",
                              context={"instance_id": "q1", "player": "judge", "tag": "verdict", "index": 0})
    assert m.generate([request])[0][0].text == " 70%"


def test_bad_inputs_give_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="no episode records"):
        ReplayModel(path=str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="needs 'path'"):
        ReplayModel()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(episode("q1")) + "\n{not json\n")
    with pytest.raises(ConfigError, match="line 2: invalid JSON") as info:
        ReplayModel(path=str(bad))
    assert str(bad) in str(info.value)
    with pytest.raises(ConfigError, match="instance_id"):
        ReplayModel.from_records([{"events": []}])
    with pytest.raises(ConfigError, match=r"events\[0\]"):
        ReplayModel.from_records([{"instance_id": "x", "events": [{"content": "no player"}]}])


def test_accepts_pydantic_episode_records():
    from sparring.gameapi.game import Event
    from sparring.records.record import EpisodeRecord, SeatRecord

    rec = EpisodeRecord(id="e", experiment="x", game="debate", instance_id="q9", seed=0, status="complete",
                        seats={"A": SeatRecord(agent="a", model="m", role="debater")},
                        events=[Event(index=0, player="A", tag="speech", content="recorded")])
    m = ReplayModel.from_records([rec], match=["instance_id", "role", "tag", "index"])
    assert ask(m, instance_id="q9", role="debater", tag="speech", index=0) == "recorded"
