"""Run the parts of the GPU self-check, each in its own process with its own time cap, and write
`gpu_check.json` and `gpu_check.md`: versions, GPU, every part's pass/fail with its traceback, and
the figures (the matmul ceiling, the backend's ratios, training speeds as model FLOP utilisation,
peak GPU memory)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from sparring.gpucheck.parts import PARTS, Ctx

TOTAL_CAP_S = 480  # the whole check on a GPU: 8 minutes


def run_part(name: str, work: Path, cpu: bool) -> None:
    """In the part's own process: run it and write `work/parts/NAME.json`."""
    fn, _ = PARTS[name]
    out = work / "parts" / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    try:
        figures = fn(Ctx(work=work, cpu=cpu))
        result: dict[str, Any] = {"status": "skipped" if "skipped" in figures else "pass", "figures": figures}
    except Exception:
        result = {"status": "fail", "traceback": traceback.format_exc()[-6000:], "figures": {}}
    result["seconds"] = round(time.perf_counter() - t, 1)
    out.write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")


def run_all(out: Path, cpu: bool, only: list[str] | None = None, work: Path | None = None,
            echo: bool = True) -> dict[str, Any]:
    """Every part (or `only` those, after `setup`) in order; the report in `out`."""
    import tempfile

    work = work or Path(tempfile.mkdtemp(prefix="sparring-gpu-check-"))
    names = list(PARTS) if not only else ["setup", *[n for n in only if n != "setup"]]
    unknown = [n for n in names if n not in PARTS]
    if unknown:
        raise SystemExit(f"unknown part(s) {unknown}; parts: {', '.join(PARTS)}")
    start = time.perf_counter()
    results: dict[str, Any] = {}
    for name in names:
        cap = PARTS[name][1] * (2 if cpu else 1)  # CPUs are slower; CI's runner has the time
        left = TOTAL_CAP_S - (time.perf_counter() - start)
        if not cpu and left < 10:
            results[name] = {"status": "not run", "reason": "the 8-minute budget was spent"}
            continue
        cap = int(cap if cpu else min(cap, left))
        t = time.perf_counter()
        cmd = [sys.executable, "-m", "sparring.gpucheck", "part", name, "--work", str(work), *(["--cpu"] if cpu else [])]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=cap, env=dict(os.environ))
            path = work / "parts" / f"{name}.json"
            if path.is_file():
                results[name] = json.loads(path.read_text())
            else:
                results[name] = {"status": "fail", "traceback": (done.stdout + done.stderr)[-6000:]}
        except subprocess.TimeoutExpired:
            results[name] = {"status": "fail", "traceback": f"timed out after its cap of {cap} s"}
        results[name]["wall_s"] = round(time.perf_counter() - t, 1)
        if echo:
            print(f"gpu check: {name}: {results[name]['status']} ({results[name]['wall_s']} s)", flush=True)
    report = {"date": time.strftime("%Y-%m-%d %H:%M"), "mode": "cpu (toy size)" if cpu else "gpu",
              "total_s": round(time.perf_counter() - start, 1), "work": str(work),
              "passed": sum(r["status"] == "pass" for r in results.values()),
              "failed": [n for n, r in results.items() if r["status"] in ("fail", "not run")], "parts": results}
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_check.json").write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    (out / "gpu_check.md").write_text(markdown(report), encoding="utf-8")
    return report


def _fmt(figures: dict[str, Any]) -> str:
    def one(k: str, v: Any) -> str:
        if isinstance(v, dict):
            return f"{k}: {{{', '.join(one(a, b) for a, b in v.items())}}}"
        return f"{k} {v}"
    return "; ".join(one(k, v) for k, v in figures.items() if k not in ("traceback",))


def markdown(report: dict[str, Any]) -> str:
    parts = report["parts"]
    v = parts.get("versions", {}).get("figures", {})
    lines = [f"# sparring GPU check ({report['mode']}), {report['date']}", "",
             f"{v.get('gpu') or v.get('device', '?')}; torch {v.get('torch')} (CUDA {v.get('cuda')}), transformers "
             f"{v.get('transformers')}, trl {v.get('trl')}, peft {v.get('peft')}, accelerate {v.get('accelerate')}, "
             f"bitsandbytes {v.get('bitsandbytes')}; sparring {v.get('sparring_commit')}", "",
             f"{report['passed']} of {len(parts)} parts passed in {report['total_s']} s"
             + (f"; failed: {', '.join(report['failed'])}" if report["failed"] else ""), "",
             "| part | status | s | figures |", "|---|---|---|---|"]
    for name, r in parts.items():
        lines.append(f"| {name} | {r['status']} | {r.get('wall_s', '')} | {_fmt(r.get('figures') or {})} |")
    for name, r in parts.items():
        if r.get("traceback"):
            lines += ["", f"## {name}: {r['status']}", "", "```", r["traceback"].rstrip(), "```"]
    return "\n".join(lines) + "\n"
