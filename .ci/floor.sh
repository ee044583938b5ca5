#!/usr/bin/env bash
# Prove the lower bounds of pyproject.toml: build a second virtual environment with trl,
# transformers, peft and verifiers at exactly their lower bounds (read from pyproject.toml, so the bounds and
# this check cannot drift apart) and run the training and verifiers tests there. Called by .ci/run; run it alone
# with `bash .ci/floor.sh` (about 3-5 minutes on 2 CPU cores). FLOOR_VENV moves the environment.
# `floor.sh prepare` only builds the environment (.ci/run does it in the background while the main
# tests run), `floor.sh test` only runs the tests in it; no argument does both.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${FLOOR_VENV:-.ci-floor-venv}"
mode="${1:-all}"
case "$mode" in
  prepare|test|all) ;;
  *) echo "usage: bash .ci/floor.sh [prepare|test]" >&2; exit 2 ;;
esac
if [ "$mode" != test ]; then
  # sparring's dependencies from pyproject.toml, trl / transformers / peft / verifiers pinned at their lower bounds;
  # sparring itself is installed by the test step (an install writes into the source tree)
  deps=$(python3 - <<'PY'
import re, tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
pins = []
extras = project["optional-dependencies"]
# web: test_grpo_vllm's stand-in server; verifiers: its environments' tests
for dep in project["dependencies"] + extras["web"] + extras["verifiers"]:
    m = re.fullmatch(r"(trl|transformers|peft|verifiers)>=([^,]+),<[^;]*(;.*)?", dep)
    pins.append(f"{m[1]}=={m[2]}{m[3] or ''}" if m else dep)
print("\n".join(pins))
PY
  )
  [ "$(echo "$deps" | grep -cE '^(trl|transformers|peft|verifiers)==')" = 4 ] \
    || { echo "floor.sh: expected trl, transformers, peft, verifiers as 'name>=low,<high' in pyproject.toml" >&2; exit 1; }
  echo "== floor environment: $(echo "$deps" | grep -E '^(trl|transformers|peft|verifiers)==' | tr '\n' ' ')"
  rm -rf "$venv"
  python3 -m venv "$venv"
  # shellcheck disable=SC1091
  source "$venv/bin/activate"
  pip install -q torch==2.13.0  # first, so that no CUDA torch is pulled in
  echo "$deps" | tr '\n' '\0' | xargs -0 pip install -q pytest pytest-timeout pytest-xdist
  deactivate
fi
[ "$mode" = prepare ] && exit 0
# shellcheck disable=SC1091
source "$venv/bin/activate"
pip install -q --no-deps -e .
python - <<'PY'
import importlib.metadata as m
print("== floor versions:", ", ".join(f"{p} {m.version(p)}" for p in ("torch", "trl", "transformers", "peft",
                                                                       "verifiers")))
PY
echo "== training and verifiers tests at the lower bounds"
pytest tests/train/test_trainers.py tests/train/test_soft_dpo.py tests/train/test_trl_contract.py \
  tests/train/test_grpo.py tests/train/test_grpo_vllm.py tests/train/test_masks.py tests/train/test_trainer_settings.py \
  tests/integrations/test_verifiers_env.py tests/integrations/test_seats.py \
  -m "not bundled" -q -p no:cacheprovider
