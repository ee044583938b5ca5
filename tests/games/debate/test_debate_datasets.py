"""Dataset loaders: QuALITY, NYU human debates (+ transcripts), custom JSONL; errors name file+line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparring.errors import ConfigError, UnknownNameError
from sparring.games.debate.datasets import DATASETS, load_dataset
from sparring.games.debate.datasets.nyu import nyu_transcripts

SAMPLE = Path(__file__).resolve().parents[3] / "../shared/data/quality/QuALITY.sample.htmlstripped.jsonl"


def _write(path: Path, rows: list) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def _question(gold: int, distractor_votes: list[int], speed: list[int] = (), difficult: int = 1, n: int = 4,
              qid: str | None = None) -> dict:
    q = {"question": f"Question {qid}?", "options": [f"option {i + 1} of {qid}" for i in range(n)],
         "gold_label": gold, "writer_label": gold, "difficult": difficult,
         "validation": [{"untimed_answer": gold, "untimed_eval1_answerability": 1, "untimed_eval2_context": 2,
                         "untimed_eval3_distractor": v} for v in distractor_votes],
         "speed_validation": [{"speed_answer": s} for s in speed]}
    if qid:
        q["question_unique_id"] = qid
    return q


def _article(aid: str, questions: list[dict]) -> dict:
    return {"article_id": aid, "set_unique_id": f"{aid}_SET", "title": f"Story {aid}", "author": "Someone",
            "article": f"The text of article {aid}.", "questions": questions, "batch_num": "1"}


def test_registry_names():
    assert {"quality", "nyu_human_debates", "custom", "generated"} <= set(DATASETS.names())
    with pytest.raises(UnknownNameError, match="quality"):
        DATASETS.get("qualty")


def test_quality_distractor_hard_filter_and_order(tmp_path):
    rows = [_article("1", [
        _question(2, [3, 3, 1], qid="1_a"),                      # most votes: option 3
        _question(1, [2, 4, 1], speed=[4, 4, 2], qid="1_b"),     # tie 2 vs 4 -> more timed votes: 4
        _question(3, [3, 3, 2], qid="1_c"),                      # votes for the gold are ignored -> 2
        _question(1, [], qid="1_d"),                             # no votes -> first wrong option (2)
        _question(1, [2], difficult=0, qid="1_e"),               # not hard
    ])]
    path = _write(tmp_path / "q.jsonl", rows)
    got = {i.id: i for i in load_dataset("quality", {"path": str(path)}, split="all")}
    assert set(got) == {"1_a", "1_b", "1_c", "1_d"}
    expect = {"1_a": (2, 3), "1_b": (1, 4), "1_c": (3, 2), "1_d": (1, 2)}
    for qid, (gold, dis) in expect.items():
        inst = got[qid]
        assert inst.answers[inst.correct] == f"option {gold} of {qid}"
        assert inst.answers[1 - inst.correct] == f"option {dis} of {qid}"
        assert inst.metadata["distractor_label"] == dis and inst.background == "The text of article 1."
    assert got["1_a"].metadata["distractor_votes"] == {1: 1, 3: 2}
    assert len(load_dataset("quality", {"path": str(path), "hard_only": False}, split="all")) == 5
    # seeded answer order: stable per seed, both orders occur over many questions
    many = _write(tmp_path / "many.jsonl", [_article(str(a), [_question(1, [2], qid=f"{a}_{k}") for k in range(5)])
                                           for a in range(10)])
    one = load_dataset("quality", {"path": str(many)}, split="all", seed=3)
    assert [i.answers for i in one] == [i.answers for i in load_dataset("quality", {"path": str(many)},
                                                                         split="all", seed=3)]
    assert {i.correct for i in one} == {0, 1}
    assert [i.correct for i in one] != [i.correct for i in load_dataset("quality", {"path": str(many)},
                                                                          split="all", seed=4)]


def test_quality_split_by_article_never_leaks(tmp_path):
    rows = [_article(f"art{a}", [_question(1, [2], qid=f"art{a}_{k}") for k in range(3)]) for a in range(60)]
    path = _write(tmp_path / "q.jsonl", rows)
    by_split = {s: load_dataset("quality", {"path": str(path)}, split=s) for s in ("train", "val", "test")}
    articles = {s: {i.metadata["article_id"] for i in xs} for s, xs in by_split.items()}
    assert not (articles["train"] & articles["val"] or articles["train"] & articles["test"]
                or articles["val"] & articles["test"])
    assert sum(len(xs) for xs in by_split.values()) == 180
    assert len(articles["train"]) > len(articles["test"]) > 0
    # questions of one article always travel together
    for xs in by_split.values():
        for art in {i.metadata["article_id"] for i in xs}:
            assert sum(i.metadata["article_id"] == art for i in xs) == 3
    other = load_dataset("quality", {"path": str(path), "fractions": {"train": 0.5, "val": 0.0, "test": 0.5}},
                         split="val")
    assert other == []


@pytest.mark.parametrize("row,needle", [
    ('{"article_id": "1", broken', "line 2: invalid JSON"),
    ({"article_id": "9", "set_unique_id": "9_S", "questions": []}, "line 2: field 'article': required"),
    (_article("9", [{"question": "q?", "options": ["a"], "gold_label": 1}]), "line 2: field 'questions.0.options'"),
    (_article("9", [_question(7, [1], qid="x")]), "line 2: questions[0].gold_label is 7"),
])
def test_quality_malformed_input_names_file_and_line(tmp_path, row, needle):
    path = _write(tmp_path / "bad.jsonl", [_article("1", [_question(1, [2], qid="ok")]), row])
    with pytest.raises(ConfigError) as e:
        load_dataset("quality", {"path": str(path)}, split="all")
    assert needle in str(e.value) and "bad.jsonl" in str(e.value)


def test_missing_file_and_bad_args(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_dataset("quality", {"path": str(tmp_path / "nope.jsonl")})
    with pytest.raises(ConfigError, match="hard_onyl"):
        load_dataset("quality", {"path": "x", "hard_onyl": True})
    with pytest.raises(ConfigError, match="sum to 1"):
        load_dataset("quality", {"path": "x", "fractions": {"train": 0.5, "val": 0.1, "test": 0.1}})


@pytest.mark.skipif(not SAMPLE.is_file(), reason="shared QuALITY sample not available")
def test_quality_official_sample():
    xs = load_dataset("quality", {"path": str(SAMPLE)}, split="all")
    assert [x.id for x in xs] == ["52845_YLZPNNYD_1", "52845_YLZPNNYD_2", "52845_YLZPNNYD_3", "52845_YLZPNNYD_4"]
    by = {x.id: x for x in xs}
    q1 = by["52845_YLZPNNYD_1"]
    assert q1.answers[q1.correct].startswith("Because Deirdre has fallen in love with Blake")  # gold_label 2
    assert q1.answers[1 - q1.correct].startswith("Because Blake is acting like he's her father")  # votes 3,3,1
    assert by["52845_YLZPNNYD_4"].answers[1 - by["52845_YLZPNNYD_4"].correct] == "Eldoria's alter ego"  # votes 2,4,4
    assert q1.title == "The Girl in His Mind" and len(q1.background.split()) > 4000
    assert len(load_dataset("quality", {"path": str(SAMPLE), "hard_only": False}, split="all")) == 5
    assert sum(len(load_dataset("quality", {"path": str(SAMPLE)}, split=s)) for s in ("train", "val", "test")) == 4


def _nyu_rows() -> list[dict]:
    story = "Mara lives in Dunmere. She keeps a copper kettle."
    return [
        {"storyTitle": "Kettle Story", "story": story, "question": "Where does Mara live?",
         "answers": ["Dunmere", "Kelderby"], "debateId": "d1", "judge": "Jo", "isJudgeCorrect": True,
         "turns": [{"role": "Debater", "index": 0, "text": "She lives in <quote>Dunmere</quote>.", "probabilities": None},
                   {"role": "Debater", "index": 1, "text": "Kelderby, clearly.", "probabilities": None},
                   {"role": "Judge", "index": None, "text": "Why Dunmere?", "probabilities": [0.6, 0.4]},
                   {"role": "Debater", "index": 0, "text": "Read the quote.", "probabilities": None},
                   {"role": "Debater", "index": 1, "text": "It is fake.", "probabilities": None},
                   {"role": "Judge", "index": None, "text": "Decided.", "probabilities": [0.9, 0.1]}]},
        {"storyTitle": "Kettle Story", "story": story, "question": "What does Mara keep?",
         "answers": ["a teapot", "a copper kettle"], "debateId": "d2", "isJudgeCorrect": False,
         "turns": [{"role": "Debater B", "text": "A copper kettle."},
                   {"role": "Judge", "text": "Hmm.", "probabilities": [0.7, 0.3]}]},   # consultancy by B
        {"storyTitle": "Other Story", "story": "Text.", "question": "Q?", "answers": ["x", "y"],
         "debateId": 3, "correctAnswer": "y", "turns": [{"role": "Debater A", "text": "x!"}]},
        {"storyTitle": "Other Story", "story": "Text.", "question": "Unknown?", "answers": ["x", "y"],
         "debateId": "d4", "turns": [{"role": "Debater", "index": 0, "text": "x"}]},   # no way to know
    ]


def test_nyu_instances(tmp_path):
    path = _write(tmp_path / "debates-readable.jsonl", _nyu_rows())
    xs = {x.id: x for x in load_dataset("nyu_human_debates", {"path": str(path)})}
    assert set(xs) == {"nyu-kettle-story-d1", "nyu-kettle-story-d2", "nyu-other-story-3"}
    d1 = xs["nyu-kettle-story-d1"]
    assert d1.answers == ["Dunmere", "Kelderby"] and d1.correct == 0  # judge right with 0.9 on answer 0
    assert d1.metadata["format"] == "debate" and d1.background.startswith("Mara")
    d2 = xs["nyu-kettle-story-d2"]  # consultant argued answers[1]: reordered to come first
    assert d2.answers == ["a copper kettle", "a teapot"] and d2.correct == 0 and d2.metadata["format"] == "consultancy"
    assert xs["nyu-other-story-3"].correct == 1
    only = load_dataset("nyu_human_debates", {"path": str(path), "formats": ["consultancy"]})
    assert [x.id for x in only] == ["nyu-kettle-story-d2", "nyu-other-story-3"]  # one debater = consultancy


def test_nyu_transcripts(tmp_path):
    path = _write(tmp_path / "debates-readable.jsonl", _nyu_rows())
    recs = {r["instance_id"]: r for r in nyu_transcripts(path)}
    r1 = recs["nyu-kettle-story-d1"]
    assert r1["instance"]["id"] == "nyu-kettle-story-d1" and r1["format"] == "debate"
    assert [(e["player"], e["tag"], e["round"]) for e in r1["events"]] == [
        ("Debater_A", "speech", 1), ("Debater_B", "speech", 1), ("Judge", "question", 1),
        ("Debater_A", "speech", 2), ("Debater_B", "speech", 2), ("Judge", "verdict", 2)]
    assert r1["events"][0]["content"] == "She lives in <quote>Dunmere</quote>."
    assert r1["events"][-1]["probs"] == {"Debater_A": 0.9, "Debater_B": 0.1}
    r2 = recs["nyu-kettle-story-d2"]
    assert r2["events"][0] == {"player": "Consultant", "tag": "speech", "content": "A copper kettle.", "round": 1}
    assert r2["events"][1]["probs"] == {"Answer_A": 0.3, "Answer_B": 0.7}
    json.dumps(list(recs.values()))


def test_nyu_malformed(tmp_path):
    rows = _nyu_rows()[:1] + [{"storyTitle": "S", "story": "t", "question": "q", "answers": ["a", "b"],
                               "turns": []}]
    path = _write(tmp_path / "bad.jsonl", rows)
    with pytest.raises(ConfigError, match=r"bad\.jsonl.*line 2: field 'debateId': required"):
        load_dataset("nyu_human_debates", {"path": str(path)})


def test_custom_jsonl(tmp_path):
    rows = [{"id": "c1", "question": "Where?", "answers": ["Dunmere", "Kelderby"], "correct": 1,
             "background": "Story one.", "title": "One"},
            {"question": "Which?", "answers": ["w", "x", "y", "z"], "correct": 2, "distractor": 0,
             "story": "Story two.", "metadata": {"k": 1}},
            {"id": 7, "question": "Default distractor?", "answers": ["p", "q", "r"], "correct": 0,
             "background": "Three.", "split": "train"}]
    path = _write(tmp_path / "mine.jsonl", rows)
    xs = load_dataset("custom", {"path": str(path)})
    assert [x.id for x in xs] == ["c1", "mine-2", "7"]
    assert xs[0].answers[xs[0].correct] == "Kelderby" and xs[0].background == "Story one."
    assert xs[1].answers == ["w", "y"] and xs[1].correct == 1 and xs[1].background == "Story two."
    assert xs[2].answers == ["p", "q"] and xs[2].correct == 0
    assert [x.id for x in load_dataset("custom", {"path": str(path)}, split="train") if x.id == "7"] == ["7"]
    assert load_dataset("custom", {"path": str(path), "shuffle": True, "seed": 1}, limit=2)[0].id in {"c1", "mine-2", "7"}
    assert len(load_dataset("custom", {"path": str(path)}, limit=2)) == 2


@pytest.mark.parametrize("bad,needle", [
    ({"question": "q", "answers": ["a", "b"], "correct": 2, "background": ""}, "correct is 2"),
    ({"question": "q", "answers": ["a", "b"], "background": ""}, "field 'correct': required"),
    ({"question": "q", "answers": ["a", "a"], "correct": 0}, "answers"),
    ({"question": "q", "answers": ["a", "b"], "correct": 0, "backgrund": "x"}, "backgrund"),
    ({"id": "c1", "question": "q", "answers": ["a", "b"], "correct": 0}, "already used on line 1"),
])
def test_custom_malformed_names_file_and_line(tmp_path, bad, needle):
    good = {"id": "c1", "question": "q", "answers": ["a", "b"], "correct": 0, "background": "s"}
    path = _write(tmp_path / "c.jsonl", [good, "", bad])
    with pytest.raises(ConfigError) as e:
        load_dataset("custom", {"path": str(path)})
    assert "c.jsonl" in str(e.value) and "line 3" in str(e.value) and needle in str(e.value)
