"""The engine side of the integrations, without verifiers or TRL: seats answered from outside the
engine (`SeatRouter`, `HeldArena`) give exactly the engine's outcomes, and `sparring verifiers package`
writes a complete package for any experiment."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib
import yaml
from held_games import dond_experiment, engine_rewards, kuhn_experiment, reply
from typer.testing import CliRunner

from sparring.errors import ConfigError, SparringError
from sparring.integrations.seats import SEAT_MODEL, SeatRouter, experiment_data, hold_seats
from sparring.integrations.verifiers.arena import HeldArena, field_name, seating
from sparring.integrations.verifiers.package import write_package
from sparring.models.chat import as_dicts
from sparring.models.remote import instruct_prefix
from sparring.types import GenerateRequest, Message


def request(episode: str, player: str, prefix: str = "") -> GenerateRequest:
    return GenerateRequest(messages=[Message(role="user", content="hi")], assistant_prefix=prefix,
                           context={"episode_id": episode, "player": player})


def test_router_answers_each_seat_by_episode_and_player():
    router = SeatRouter()
    router.hold("e1", {"A": lambda r: "from A", "B": lambda r: "[propose] (1 books)"})
    router.hold("e2", {"A": lambda r: "other episode"})
    out = router.generate([request("e1", "A"), request("e1", "B", prefix="[propose] ("), request("e2", "A")])
    assert [c[0].text for c in out] == ["from A", "1 books)", "other episode"]  # an echoed prefix is stripped
    router.release("e1")
    assert [c[0].text for c in router.generate([request("e2", "A")])] == ["other episode"]
    with pytest.raises(SparringError, match="no holder for seat 'A' of episode 'e1'"):
        router.generate([request("e1", "A")])
    assert not router.can_score


def test_hold_seats_marks_agents_and_names_bad_ones():
    data, _ = experiment_data("scripted-debate")
    held = hold_seats(data, ["plain"])
    assert held["agents"]["plain"]["model"] == SEAT_MODEL and held["agents"]["judge"]["model"] == "scripted-judge"
    assert Path(held["models_file"]).is_absolute()  # the experiment's models file, wherever it is read from
    with pytest.raises(ConfigError, match="unknown agent.*'nobody'.*plain, quoting, judge"):
        hold_seats(data, ["nobody"])


def test_seat_fields_are_identifiers():
    taken: set[str] = set()
    assert [field_name(p, taken) for p in ("Player 0", "Debater_A", "Judge", "1st", "id", "Player-0")] == \
        ["player_0", "debater_a", "judge", "seat_1st", "id_2", "player_0_2"]


@pytest.mark.parametrize("make, held", [(dond_experiment, ["negotiator"]), (kuhn_experiment, ["smol"])])
def test_held_seats_give_the_engines_outcomes(server, make, held):
    """Every scheduled episode played with its held seats answered from outside has the rewards the
    engine gives with those agents' model served (the same replies: a function of the messages)."""
    if make is kuhn_experiment:
        pytest.importorskip("textarena")
    experiment = make()
    data = hold_seats(experiment, held)
    arena = HeldArena(data, Path.cwd() / "x.yaml")
    try:
        def holder(req: GenerateRequest) -> str:
            return reply({"messages": instruct_prefix(as_dicts(req.messages), req.assistant_prefix)})

        got = {}
        for job in arena.jobs():
            episode = arena.job(job.instance_id, arena.agents_of(job), job.seed, job.flip)
            record = arena.play(episode, dict.fromkeys(arena.held(episode), holder))
            got[(record.instance_id, record.matchup, record.flip)] = dict(record.outcome.rewards)
    finally:
        arena.close()
    expected = engine_rewards(experiment, server, held)
    assert got == expected
    assert any(v != 0 for rewards in got.values() for v in rewards.values())  # the games were decided


def test_package_is_complete_for_any_experiment(tmp_path):
    pkg = write_package("scripted-debate", tmp_path / "pkg", seats=["plain"])
    assert (pkg.name, pkg.module, pkg.agents) == ("sparring-scripted-debate", "sparring_scripted_debate", ["plain"])
    assert pkg.seats == ["debater_a", "debater_b"]  # the judge stays the engine's scripted judge
    project = tomllib.loads((tmp_path / "pkg" / "pyproject.toml").read_text())["project"]
    assert project["name"] == pkg.name and project["dependencies"][0].startswith("sparring[verifiers]>=")
    module = tmp_path / "pkg" / pkg.module
    experiment = yaml.safe_load((module / "experiment.yaml").read_text())
    assert experiment["models_file"] == "models.yaml" and (module / "models.yaml").is_file()
    assert experiment["agents"]["plain"]["model"] == SEAT_MODEL
    facts = seating(*experiment_data(module / "experiment.yaml"))  # it resolves from the package itself
    assert facts.held_roles == {"debater"} and facts.evaluators == {"Judge"}
    init = (module / "__init__.py").read_text()
    assert "environment(Path(__file__).with_name(\"experiment.yaml\"), 'sparring-scripted-debate', __name__)" in init
    assert '"load_environment"' in init
    with pytest.raises(SparringError, match="not empty"):
        write_package("scripted-debate", tmp_path / "pkg")
    with pytest.raises(SparringError, match="'dond' is a game; package one of its experiments.*dond-quickstart"):
        write_package("dond", tmp_path / "other")


def test_cli_writes_the_package(tmp_path):
    from sparring.cli import app

    result = CliRunner().invoke(app, ["verifiers", "package", "textarena-kuhnpoker", "--seat", "smol",
                                      "-o", str(tmp_path / "k"), "--name", "kuhn-env"])
    assert result.exit_code == 0, result.output
    assert "kuhn-env" in result.output and (tmp_path / "k" / "kuhn_env" / "__init__.py").is_file()


def test_seat_metrics_leave_the_episodes_facts_out():
    """What the other engine averages is measures: a debate's prompt variant number, its rounds and
    its seat order are facts of the episode (issue #61: `variant 598643451.00` in vf-eval)."""
    from sparring.gameapi.game import Outcome
    from sparring.integrations.rewards import seat_metrics
    from sparring.records.record import EpisodeRecord

    outcome = Outcome(rewards={"A": 1.0, "B": 0.0},
                      metrics={"variant": 598643451, "rounds": 2, "flip": True, "order": "sequential",
                               "judge_accuracy": 1.0, "points": {"A": 7, "B": 3}, "format": "debate"})
    record = EpisodeRecord(id="e", experiment="x", game="debate", instance_id="i", seats={}, seed=0,
                           status="complete", outcome=outcome)
    assert seat_metrics(record, "A") == {"rejected": 0.0, "judge_accuracy": 1.0, "points": 7.0}
