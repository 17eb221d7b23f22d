"""The adapter's operations: one Slurm command each (find_by_name: at most two)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import BinaryIO

from . import parsers, runner
from .errors import SlurmRejected, SlurmUnavailable
from .records import AcctRecord, JobSpec, LiveJob, check_cluster, check_clusters, check_job_id, check_job_name

logger = logging.getLogger(__name__)

#: squeue/sacct print epochs; TZ=UTC makes the -S/-E we pass (and any ISO output) UTC.
TIME_ENV = {"SLURM_TIME_FORMAT": "%s", "TZ": "UTC"}
#: A start far enough back that sacct finds any job by id or name.
WIDE_START = "2000-01-01T00:00:00"
#: scancel answers that mean "there is nothing left to cancel".
ALREADY_FINISHED = ("already completing or completed", "invalid job id specified")


def submit(
    spec: JobSpec, *, through: Sequence[str] = (), stdin: BinaryIO | None = None, timeout: float | None = None
) -> str:
    """Submit the batch script as ``spec.run_as``; return the Slurm job id.

    ``through`` is a program (with its first arguments) that runs as the student, does its part and then
    runs sbatch itself with the arguments that follow its own: the job-directory helper, which writes the
    job directory from ``stdin`` first, so that a submission is one run-as call. Its path to sbatch is
    :func:`sbatch_path`.
    """
    argv = [
        "sbatch",
        "--parsable",
        "--export=NONE",
        f"--account={spec.account}",
        f"--job-name={spec.job_name}",
        f"--chdir={spec.workdir}",
        f"--output={spec.stdout}",
        f"--error={spec.stderr}",
    ]
    for option, value in (
        ("partition", spec.partition),
        ("reservation", spec.reservation),
        ("qos", spec.qos),
        ("comment", spec.comment),
        ("dependency", spec.dependency),
        ("clusters", spec.cluster and check_cluster(spec.cluster)),
    ):
        if value:
            argv.append(f"--{option}={value}")
    argv.append(spec.script_path)
    if through:
        argv = [*through, *argv[1:]]
    stdout = runner.run(argv, run_as=spec.run_as, stdin=stdin, timeout=timeout, tool="sbatch")
    try:
        return parsers.parse_sbatch(stdout)
    except parsers.ParseError as exc:
        # sbatch said yes but we cannot read the id: find_by_name will recover it.
        raise SlurmUnavailable(str(exc), argv) from exc


def sbatch_path() -> str:
    """The absolute path of the sbatch that submit() runs (for a program that runs sbatch itself)."""
    return runner.absolute("sbatch")


def queue(*, cluster: str = "") -> dict[str, LiveJob]:
    """Every job slurmctld knows (all users, all states), keyed by job id: ONE squeue (of `cluster`'s
    controller with -M, which with -h prints no `CLUSTER:` line on 22.05 and 24.11; a cluster that does not
    answer raises SlurmUnavailable, never an empty queue)."""
    marker = parsers.framing_marker()
    stdout = runner.run(
        ["squeue", *_on(cluster), "-h", "-a", "-r", "-t", "all", "-o", parsers.SQUEUE_FORMAT],
        env_extra=_framed_time_env(marker),
    )
    return parsers.parse_squeue(stdout, marker=marker)


def accounting(
    *,
    job_ids: Sequence[str] = (),
    since: datetime | None = None,
    until: datetime | None = None,
    accounts: Sequence[str] = (),
    cluster: str = "",
) -> dict[str, AcctRecord]:
    """Allocation records from slurmdbd, keyed by job id: ONE sacct (of `cluster`, or of several: "lab,lab2").

    With neither ``job_ids`` nor ``since`` sacct's own default window applies
    (since midnight UTC today).
    """
    argv = [
        "sacct",
        *(["-M", check_clusters(cluster)] if cluster else []),
        "-X",
        "-P",
        "-n",
        "-a",
        f"--delimiter={parsers.DELIMITER}",
        "-o",
        parsers.SACCT_FORMAT,
    ]
    if job_ids:
        argv += ["-j", ",".join(check_job_id(job_id) for job_id in job_ids)]
    if since is not None:
        argv += ["-S", _slurm_time(since)]
    elif job_ids:
        argv += ["-S", WIDE_START]
    if until is not None:
        argv += ["-E", _slurm_time(until)]
    if accounts:
        argv += ["-A", ",".join(_check_name(account) for account in accounts)]
    marker = parsers.framing_marker()
    return parsers.parse_sacct(runner.run(argv, env_extra=_framed_time_env(marker)), marker=marker)


def find_by_name(job_name: str, *, cluster: str = "") -> str | None:
    """The newest job with this name, from squeue, else from sacct; None if none."""
    check_job_name(job_name)
    stdout = runner.run(["squeue", *_on(cluster), "-h", "-a", "-t", "all", "-n", job_name, "-o", "%i"])
    found = parsers.newest_job_id(parsers.parse_job_ids(stdout))
    if found:
        return found
    # Only job ids are read, from a start in 2000: no time format or zone matters here.
    argv = ["sacct", *_on(cluster), "-X", "-n", "-P", "-a", "--name", job_name, "-S", WIDE_START, "-o", "JobID"]
    return parsers.newest_job_id(parsers.parse_job_ids(runner.run(argv)))


def cancel(job_id: str, *, run_as: str, cluster: str = "") -> None:
    """scancel as the job's owner. A job that already ended is not an error."""
    check_job_id(job_id)
    try:
        runner.run(["scancel", *_on(cluster), job_id], run_as=run_as)
    except SlurmRejected as exc:
        if any(marker in exc.message.lower() for marker in ALREADY_FINISHED):
            logger.info("slurm: job %s already finished: %s", job_id, exc.message)
            return
        raise


def _on(cluster: str) -> list[str]:
    """`-M <cluster>`: the command goes to that cluster's controller (slurmdbd knows where it is)."""
    return ["-M", check_cluster(cluster)] if cluster else []


def _framed_time_env(marker: str) -> dict[str, str]:
    """Times as epochs followed by the marker that ends each record (see slurm.parsers, "Framing")."""
    return {**TIME_ENV, "SLURM_TIME_FORMAT": parsers.TIME_FORMAT.format(marker=marker)}


def _slurm_time(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise ValueError("pass an aware datetime")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _check_name(name: str) -> str:
    if not name or "," in name or name.startswith("-"):
        raise ValueError(f"not a valid Slurm name: {name!r}")
    return name
