#!/usr/bin/env python
"""Benchmark: squeue and sacct as the adapter reads them (delimited text) against their `--json` output.

The sync reads the whole queue with one squeue and finished jobs with one sacct per cycle; this measures,
at N jobs in the queue, what each form costs the portal's worker: the command's wall time and CPU, the
bytes it prints, and reading them into records in Python. Both forms are asked of the same jobs in the same
run, alternately, and the ratio json/text is printed. Jobs are submitted held (they take no resources) as
researcher1 and cancelled at the end.

Run it as root against the host's cluster, or against the Slurm 24.11 one of scripts/slurm24 with that
cluster's tools:

    .venv/bin/python scripts/bench_slurm_formats.py [--jobs 300] [--repeat 15]
    LABQUEUE_SLURM_BIN_DIR=/usr/local/libexec/labqueue-slurm24/bin .venv/bin/python scripts/bench_slurm_formats.py
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib import percentile  # noqa: E402

from slurm import parsers  # noqa: E402

BIN = os.environ.get("LABQUEUE_SLURM_BIN_DIR", "")
ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "TZ": "UTC"}


def tool(name: str) -> str:
    return os.path.join(BIN, name) if BIN else name


def run(argv: list[str], env: dict[str, str] | None = None) -> tuple[str, float, float]:
    """stdout, wall seconds, CPU seconds of the command (its children included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env={**ENV, **(env or {})}, cwd="/tmp", check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return done.stdout, wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def squeue_text() -> tuple[int, int, float, float, float]:
    marker = parsers.framing_marker()
    env = {"SLURM_TIME_FORMAT": parsers.TIME_FORMAT.format(marker=marker)}
    out, wall, cpu = run([tool("squeue"), "-h", "-a", "-r", "-t", "all", "-o", parsers.SQUEUE_FORMAT], env)
    start = time.perf_counter()
    jobs = parsers.parse_squeue(out, marker=marker)
    return len(jobs), len(out), wall, cpu, time.perf_counter() - start


def _number(value) -> int | None:
    """24.11 wraps numbers as {"set": true, "number": N}; 22.05 prints them bare."""
    if isinstance(value, dict):
        return value.get("number") if value.get("set") else None
    return value


def squeue_json() -> tuple[int, int, float, float, float]:
    out, wall, cpu = run([tool("squeue"), "--json", "-a", "-t", "all"])
    start = time.perf_counter()
    jobs = {}
    for job in json.loads(out)["jobs"]:
        state = job.get("job_state")
        jobs[str(job["job_id"])] = (
            job.get("name"),
            job.get("user_name"),
            job.get("account"),
            job.get("partition"),
            state[0] if isinstance(state, list) else state,
            job.get("state_reason"),
            _number(job.get("priority")),
            _number(job.get("submit_time")),
            _number(job.get("start_time")),
            job.get("nodes"),
        )
    return len(jobs), len(out), wall, cpu, time.perf_counter() - start


def sacct_text(ids: str) -> tuple[int, int, float, float, float]:
    marker = parsers.framing_marker()
    env = {"SLURM_TIME_FORMAT": parsers.TIME_FORMAT.format(marker=marker)}
    argv = [tool("sacct"), "-X", "-P", "-n", "-a", f"--delimiter={parsers.DELIMITER}", "-o", parsers.SACCT_FORMAT]
    out, wall, cpu = run([*argv, "-j", ids, "-S", "2000-01-01"], env)
    start = time.perf_counter()
    records = parsers.parse_sacct(out, marker=marker)
    return len(records), len(out), wall, cpu, time.perf_counter() - start


def sacct_json(ids: str) -> tuple[int, int, float, float, float]:
    out, wall, cpu = run([tool("sacct"), "--json", "-X", "-a", "-j", ids, "-S", "2000-01-01"])
    start = time.perf_counter()
    records = {}
    for job in json.loads(out)["jobs"]:
        state = job.get("state", {})
        records[str(job["job_id"])] = (
            job.get("name"),
            job.get("user"),
            job.get("account"),
            state.get("current") if isinstance(state, dict) else state,
            job.get("exit_code"),
            job.get("time"),
            job.get("tres"),
        )
    return len(records), len(out), wall, cpu, time.perf_counter() - start


def measure(name: str, text, as_json, repeat: int) -> None:
    figures = {"text": [], "json": []}
    for _ in range(repeat):  # alternately, so both see the same load
        figures["text"].append(text())
        figures["json"].append(as_json())
    rows = {}
    for form, runs in figures.items():
        total = [wall + read for _, _, wall, _, read in runs]
        rows[form] = (
            runs[-1][0],
            runs[-1][1],
            percentile(total, 0.5) * 1000,
            percentile(total, 0.95) * 1000,
            percentile([cpu + read for _, _, _, cpu, read in runs], 0.5) * 1000,
            percentile([read for *_, read in runs], 0.5) * 1000,
        )
        records, size, p50, p95, cpu, read = rows[form]
        print(
            f"  {name} {form:4}: {records:4} records, {size / 1024:8.1f} KiB; command + reading p50 {p50:6.1f} ms, "
            f"p95 {p95:6.1f} ms; CPU p50 {cpu:6.1f} ms (reading alone {read:5.1f} ms)"
        )
    text, as_json = rows["text"], rows["json"]
    print(
        f"  {name} json/text: time {as_json[2] / text[2]:.2f}x, CPU {as_json[4] / text[4]:.2f}x,"
        f" bytes {as_json[1] / max(text[1], 1):.1f}x"
    )


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--jobs", type=int, default=300)
    options.add_argument("--repeat", type=int, default=15)
    args = options.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_slurm_formats: run as root (it submits and cancels jobs as researcher1)")
    version = run([tool("sinfo"), "--version"])[0].strip()
    print(f"{version}, {args.jobs} held jobs, {args.repeat} runs of each form")
    ids = []
    try:
        for _ in range(args.jobs):
            out = run(
                [
                    "runuser",
                    "-u",
                    "researcher1",
                    "--",
                    tool("sbatch"),
                    "--parsable",
                    "--hold",
                    "--account=research",
                    "-J",
                    "lq-bench-formats",
                    "-o",
                    "/dev/null",
                    "--wrap",
                    "true",
                ]
            )[0]
            ids.append(out.strip().split(";")[0])
        measure("squeue", squeue_text, squeue_json, args.repeat)
        measure("sacct ", lambda: sacct_text(",".join(ids)), lambda: sacct_json(",".join(ids)), args.repeat)
    finally:
        for start in range(0, len(ids), 100):
            subprocess.run([tool("scancel"), *ids[start : start + 100]], env=ENV, check=False)


if __name__ == "__main__":
    main()
