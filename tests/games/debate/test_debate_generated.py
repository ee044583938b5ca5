"""The bundled story generator: deterministic, answerable, plausible distractors, disjoint splits."""

from __future__ import annotations

import pytest

from sparring.errors import ConfigError
from sparring.games.debate.datasets import load_dataset
from sparring.games.debate.datasets.generated import KINDS, generate_story


def test_deterministic_per_seed():
    assert generate_story(123) == generate_story(123)
    assert generate_story(123) != generate_story(124)
    a = load_dataset("generated", {"n": 20}, split="test")
    b = load_dataset("generated", {"n": 20}, split="test")
    assert [x.model_dump() for x in a] == [x.model_dump() for x in b]
    assert a[0].id != load_dataset("generated", {"n": 1}, split="test", seed=1)[0].id


def test_answer_is_stated_and_distractor_is_another_fact_of_the_story():
    xs = load_dataset("generated", {"n": 300, "multi_hop": 0.5}, split="train")
    for x in xs:
        m = x.metadata
        assert m["answer_value"] in x.background, x.id
        assert m["distractor_value"] in x.background, x.id
        assert m["answer_value"] != m["distractor_value"]
        assert x.answers[0] != x.answers[1]
        assert m["answer_value"] in x.answers[x.correct] and m["distractor_value"] in x.answers[1 - x.correct]
    assert {x.correct for x in xs} == {0, 1}
    assert {x.metadata["hops"] for x in xs} == {"single", "multi"}


def test_multi_hop_chain_holds_in_story():
    for seed in range(200):
        g = generate_story(seed, multi_hop=1.0, kinds=["multi_town"])
        if "owner of the" not in g["question"]:
            continue
        item = g["question"].split("owner of the ")[1].rstrip("?").removesuffix(" live")
        owner = g["about"].split()[0]
        sentences = g["story"].replace("\n", " ").split(". ")
        assert any(owner in s and item in s for s in sentences), g
        assert any(g["about"] in s and g["answer_value"] in s for s in sentences), g
        return
    pytest.fail("no owner-of question generated")


def test_splits_are_disjoint_by_seed_range():
    ids = {s: {x.id for x in load_dataset("generated", {"n": 200}, split=s)} for s in ("train", "val", "test")}
    stories = {s: {x.background for x in load_dataset("generated", {"n": 200}, split=s)}
               for s in ("train", "val", "test")}
    assert not (ids["train"] & ids["val"] or ids["train"] & ids["test"] or ids["val"] & ids["test"])
    assert not (stories["train"] & stories["test"] or stories["val"] & stories["test"])
    assert len(load_dataset("generated", {"n": 5}, split="all")) == 15


def test_default_length_fits_small_models_and_knobs_change_difficulty():
    xs = load_dataset("generated", {"n": 100})
    words = [x.metadata["words"] for x in xs]
    assert 130 <= min(words) and max(words) <= 320
    long = load_dataset("generated", {"n": 20, "filler_sentences": 20, "people": 6})
    assert min(x.metadata["words"] for x in long) > max(words)
    assert all(x.id.startswith("gen-test-") and len(x.id.split("-")) == 4 for x in long)  # knob tag in id
    only = load_dataset("generated", {"n": 30, "kinds": ["pet", "multi_job"]})
    assert {x.metadata["kind"] for x in only} <= {"pet", "multi_job"}
    with pytest.raises(ConfigError, match="unknown question kinds"):
        load_dataset("generated", {"kinds": ["colour"]})
    assert "person_by_item" in KINDS


def test_stories_read_as_text():
    g = generate_story(7)
    assert g["story"].count("\n\n") >= 3  # intro + one paragraph per person
    assert all(s[0].isupper() for s in g["story"].replace("\n\n", " ").split(". ") if s)
    assert "{" not in g["story"] and "{" not in g["question"]


def test_export_round_trips_through_the_custom_loader(tmp_path, capsys):
    from sparring.games.debate.datasets.generated import main

    main(["val", "4"])
    path = tmp_path / "gen.jsonl"
    path.write_text(capsys.readouterr().out)
    back = load_dataset("custom", {"path": str(path)})
    orig = load_dataset("generated", {"n": 4}, split="val")
    assert [x.model_dump() for x in back] == [x.model_dump() for x in orig]
