"""The version is written once, as `sparring.__version__`; the installed metadata reads it from there
(pyproject.toml: `dynamic = ["version"]`, `[tool.setuptools.dynamic]`)."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest

import sparring

ROOT = Path(__file__).resolve().parents[1]


def test_the_installed_version_is_the_package_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+", sparring.__version__)
    assert importlib.metadata.version("sparring") == sparring.__version__


def test_pyproject_takes_the_version_from_the_package():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "sparring.__version__"}


def test_the_changelog_has_a_section_for_this_version():
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## \[{re.escape(sparring.__version__)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M)


@pytest.mark.slow
def test_the_wheel_installs_in_a_clean_venv_with_complete_metadata(tmp_path):
    """`python -m build --wheel` (issue #61: a generated environment package depends on sparring, so
    the wheel must carry its metadata and data files): name, version, requirements and extras in
    METADATA; the shipped configs, prompt sets and web assets inside; installed without its
    dependencies into a fresh venv, the metadata and the data files are there."""
    import shutil
    import subprocess
    import sys
    import venv
    import zipfile
    from email.parser import Parser

    pytest.importorskip("build")
    out = tmp_path / "dist"
    try:  # the build backend pyproject.toml asks for, when this environment has it; else build's isolated one
        ok = int(importlib.metadata.version("setuptools").split(".")[0]) >= 77
    except importlib.metadata.PackageNotFoundError:
        ok = False
    isolation = ["--no-isolation"] if ok else []
    src = tmp_path / "src"  # a copy: setuptools writes build/ and *.egg-info/ beside the sources
    shutil.copytree(ROOT / "sparring", src / "sparring", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    done = subprocess.run([sys.executable, "-m", "build", "--wheel", *isolation, "--outdir", str(out), str(src)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = out.glob("sparring-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = Parser().parsestr(z.read(f"sparring-{sparring.__version__}.dist-info/METADATA").decode())
    assert meta["Name"] == "sparring" and meta["Version"] == sparring.__version__
    assert meta["License-Expression"] == "Apache-2.0" and meta["Requires-Python"]
    requires = meta.get_all("Requires-Dist")
    assert any(r.startswith("transformers") for r in requires) and any(r.startswith("trl") for r in requires)
    assert {"verifiers", "textarena", "serve", "web", "statscore"} <= set(meta.get_all("Provides-Extra"))
    for path in ("sparring/configs/models.yaml", "sparring/configs/experiments/quickstart.yaml",
                 "sparring/configs/bench/static/facts.yaml", "sparring/configs/bench/static/facts.jsonl",
                 "sparring/configs/experiments/models/scripted.yaml", "sparring/configs/train/dpo-quickstart.yaml",
                 "sparring/games/negotiation/prompts/negotiation.yaml"):
        assert path in names, path
    assert any(n.startswith("sparring/web/static/") for n in names)

    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    probe = ("import importlib.metadata as m, importlib.resources as r; "
             "print(m.version('sparring')); print((r.files('sparring') / 'configs' / 'models.yaml').is_file())")
    done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.stdout.split() == [sparring.__version__, "True"], done.stderr[-2000:]
