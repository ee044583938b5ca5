#!/usr/bin/env bash
# Prove the lower bounds of pyproject.toml: build a second virtual environment with trl,
# transformers and peft at exactly their lower bounds (read from pyproject.toml, so the bounds and
# this check cannot drift apart) and run the training tests there. Called by .ci/run; run it alone
# with `bash .ci/floor.sh` (about 3-5 minutes on 2 CPU cores). FLOOR_VENV moves the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${FLOOR_VENV:-.ci-floor-venv}"
pins=$(python3 - <<'PY'
import re, tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
for dep in deps:
    m = re.fullmatch(r"(trl|transformers|peft)>=([^,]+),<.*", dep)
    if m:
        print(f"{m[1]}=={m[2]}")
PY
)
[ "$(echo "$pins" | wc -l)" = 3 ] || { echo "floor.sh: expected trl, transformers, peft as 'name>=low,<high' in pyproject.toml" >&2; exit 1; }
echo "== floor environment: $(echo $pins)"
rm -rf "$venv"
python3 -m venv "$venv"
# shellcheck disable=SC1091
source "$venv/bin/activate"
pip install -q torch==2.13.0  # first, so that no CUDA torch is pulled in
# shellcheck disable=SC2086
pip install -q -e ".[web]" pytest pytest-timeout $pins  # web: the stand-in vLLM server of test_grpo_vllm
python - <<'PY'
import importlib.metadata as m
print("== floor versions:", ", ".join(f"{p} {m.version(p)}" for p in ("torch", "trl", "transformers", "peft")))
PY
echo "== training tests at the lower bounds"
pytest tests/train/test_trainers.py tests/train/test_soft_dpo.py tests/train/test_trl_contract.py \
  tests/train/test_grpo.py tests/train/test_grpo_vllm.py tests/train/test_masks.py tests/train/test_trainer_settings.py \
  -m "not bundled" -q -p no:cacheprovider
