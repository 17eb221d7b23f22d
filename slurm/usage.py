"""What finished jobs really used, from sacct's step lines: ONE sacct for many jobs.

Called by the worker's job-status sync (jobs.dispatch.jobs_sync), never by a web request. With -X (the
allocation lines slurm.accounting reads) TotalCPU is 0 and MaxRSS empty. Without it the step lines (`123.batch`,
`123.extern`, `123.0`) carry what jobacct_gather measured, and the job line the TotalCPU of its steps summed
(tests/slurm/captured/22.05/sacct-usage.txt); this module folds them into one figure per job. GPU utilisation
and GPU memory appear only where the cluster accounts the `gres/gpuutil` and `gres/gpumem` TRES
(AccountingStorageTRES with AcctGatherGpu, NVML); elsewhere they stay None: not measured.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from . import parsers, runner
from .records import check_clusters, check_job_id

logger = logging.getLogger(__name__)

#: sacct -o fields, in order. None of them is free text (no job name, no comment), so a record is one line.
USAGE_FIELDS = ("JobID", "TotalCPU", "MaxRSS", "TRESUsageInTot")
#: A start far enough back that sacct finds any job by id (as slurm.commands.accounting asks).
WIDE_START = "2000-01-01T00:00:00"
#: TotalCPU as sacct prints it: [DD-[HH:]]MM:SS[.mmm].
_CPU_TIME_RE = re.compile(r"(?:(?:(\d+)-)?(\d+):)?(\d+):(\d+)(?:\.(\d+))?")


@dataclass(frozen=True)
class JobUsage:
    """What one job used, folded over its steps. None: the cluster did not measure it."""

    job_id: str
    cpu_seconds: float
    max_rss_mb: int | None
    gpu_util_percent: float | None = None
    gpu_mem_mb: int | None = None


def job_usage(job_ids: Sequence[str], *, cluster: str = "") -> dict[str, JobUsage]:
    """Usage of these jobs (of `cluster`, with -M), keyed by job id: ONE sacct without -X. A job sacct does not
    know is left out."""
    if not job_ids:
        return {}
    argv = [
        "sacct",
        *(["-M", check_clusters(cluster)] if cluster else []),
        "-P",
        "-n",
        "-a",
        f"--delimiter={parsers.DELIMITER}",
        "-o",
        ",".join(USAGE_FIELDS),
        "-j",
        ",".join(check_job_id(job_id) for job_id in job_ids),
        "-S",
        WIDE_START,
    ]
    return parse_usage(runner.run(argv, env_extra={"TZ": "UTC"}))


def parse_usage(stdout: str) -> dict[str, JobUsage]:
    """Parse ``sacct -P -n --delimiter=DELIMITER -o USAGE_FIELDS``: a job line, then its step lines."""
    lines: dict[str, list[tuple[bool, list[str]]]] = {}
    for line in stdout.split("\n"):
        if not line.strip():
            continue
        parts = line.split(parsers.DELIMITER)
        job_id, dot, _step = parts[0].strip().partition(".")
        if len(parts) != len(USAGE_FIELDS) or not parsers.JOB_ID_RE.fullmatch(job_id):
            logger.warning("slurm: skipping unreadable usage line %r", line[:500])
            continue
        lines.setdefault(job_id, []).append((bool(dot), parts))
    return {job_id: _fold(job_id, rows) for job_id, rows in lines.items()}


def _fold(job_id: str, rows: list[tuple[bool, list[str]]]) -> JobUsage:
    """One job's figures: the job line's TotalCPU (sacct sums its steps into it; without a job line, the steps'
    sum), the largest resident memory and GPU figures of any step (the job line has neither)."""
    job_lines = [parts for is_step, parts in rows if not is_step]
    steps = [parts for is_step, parts in rows if is_step] or job_lines
    tres = [parsers.parse_tres(parts[3]) for parts in steps]
    rss = [parsers.parse_mem_mb(parts[2]) for parts in steps if parts[2].strip()]
    return JobUsage(
        job_id=job_id,
        cpu_seconds=round(sum(cpu_time_seconds(parts[1]) for parts in job_lines[:1] or steps), 3),
        max_rss_mb=max(rss) if rss else None,
        gpu_util_percent=_largest(float(t["gres/gpuutil"]) for t in tres if _number(t.get("gres/gpuutil"))),
        gpu_mem_mb=_largest(parsers.parse_mem_mb(t["gres/gpumem"]) for t in tres if t.get("gres/gpumem")),
    )


def cpu_time_seconds(value: str) -> float:
    """``00:00.004`` -> 0.004, ``01:02:03`` -> 3723.0, ``1-00:00:00`` -> 86400.0; 0.0 for anything else."""
    match = _CPU_TIME_RE.fullmatch(value.strip())
    if not match:
        return 0.0
    days, hours, minutes, seconds, fraction = match.groups()
    whole = int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds)
    return whole + (float(f"0.{fraction}") if fraction else 0.0)


def _number(value: str | None) -> bool:
    try:
        float(value or "")
    except ValueError:
        return False
    return True


def _largest(values) -> float | int | None:
    found = list(values)
    return max(found) if found else None
