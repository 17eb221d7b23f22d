"""Slurm reservations for lab sessions: scontrol create / show / delete reservation (root or SlurmUser).

Slurm 22.05-23.02 reserve whole nodes only (`tres=gres/gpu=N` -> "TRES type 'gres/gpu' not
supported with reservations"); 23.11+ can reserve GPUs by count. Both forms are built here;
the caller picks one with LABQUEUE_RESERVATION_STRATEGY.

Every function takes `cluster`: another cluster of the same slurmdbd, reached with `scontrol -M <cluster>`
(slurmdbd knows where its controller listens); empty, the local cluster, and no -M.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from . import runner
from .accounts import check_name
from .errors import SlurmRejected
from .records import check_cluster, check_job_id

logger = logging.getLogger(__name__)

#: scontrol prints times as epochs with this, and reads the times we pass as UTC.
TIME_ENV = {"SLURM_TIME_FORMAT": "%s", "TZ": "UTC"}
_NODE = re.compile(r"^[A-Za-z0-9_.\[\]-]+$")
GONE = ("requested reservation is invalid", "reservation not found", "invalid reservation")


@dataclass(frozen=True)
class Reservation:
    name: str
    start: datetime | None
    end: datetime | None
    nodes: str
    accounts: str
    flags: str
    state: str
    tres: str


def parse_reservations(stdout: str) -> dict[str, Reservation]:
    """`scontrol -o show reservation` (one reservation per line, key=value pairs), keyed by name."""
    result = {}
    for line in stdout.splitlines():
        if not line.startswith("ReservationName="):
            continue  # "No reservations in the system"
        fields = dict(item.split("=", 1) for item in line.split() if "=" in item)
        name = fields["ReservationName"]
        result[name] = Reservation(
            name=name,
            start=_epoch(fields.get("StartTime", "")),
            end=_epoch(fields.get("EndTime", "")),
            nodes=_value(fields.get("Nodes", "")),
            accounts=_value(fields.get("Accounts", "")),
            flags=_value(fields.get("Flags", "")),
            state=fields.get("State", ""),
            tres=_value(fields.get("TRES", "")),
        )
    return result


def _value(text: str) -> str:
    return "" if text == "(null)" else text


def _epoch(text: str) -> datetime | None:
    return datetime.fromtimestamp(int(text), tz=UTC) if text.isdigit() else None


def _on(cluster: str) -> list[str]:
    """`-M <cluster>` for another cluster's controller; nothing for the local one."""
    return ["-M", check_cluster(cluster)] if cluster else []


def _time(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise ValueError("pass an aware datetime")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")


def create_argv(
    *,
    name: str,
    account: str,
    start: datetime | None,
    end: datetime,
    nodes: Sequence[str] = (),
    gpus: int = 0,
    partition: str = "",
    cluster: str = "",
) -> list[str]:
    """`scontrol create reservation` for whole nodes (`nodes`) or, on Slurm 23.11+, a GPU count (`gpus`), on
    `cluster` (empty: the local one).

    `start` None means now. IGNORE_JOBS: jobs already running on the nodes may finish; nothing new
    outside the course starts there.
    """
    argv = [
        "scontrol",
        *_on(cluster),
        "create",
        "reservation",
        f"reservationname={check_name(name)}",
        f"starttime={_time(start) if start else 'now'}",
        f"endtime={_time(end)}",
        f"accounts={check_name(account)}",
        "flags=ignore_jobs",
    ]
    if nodes:
        if not all(_NODE.match(node) for node in nodes):
            raise ValueError(f"not node names: {nodes!r}")
        argv.append(f"nodes={','.join(nodes)}")
    elif gpus:
        # One core with each GPU: Slurm reserves only the cores asked for (one with a bare gres/gpu count),
        # so without this a lab's students could use one of its GPUs at a time.
        argv += [f"tres=cpu={int(gpus)},gres/gpu={int(gpus)}"]
        if partition:
            argv.append(f"partition={check_name(partition)}")
    else:
        raise ValueError("reserve nodes or GPUs")
    return argv


def reservation_list(*, cluster: str = "") -> dict[str, Reservation]:
    argv = ["scontrol", *_on(cluster), "-o", "show", "reservation"]
    return parse_reservations(runner.run(argv, env_extra=TIME_ENV))


def nodes_busy_until(nodes: str, *, cluster: str = "") -> datetime | None:
    """When the jobs running on these nodes (a Slurm host list, e.g. "gpu[1-2]") of `cluster` end at the latest,
    going by their time limits; None when nothing runs there. One squeue."""
    if not _NODE.match(nodes):
        raise ValueError(f"not a node list: {nodes!r}")
    argv = ["squeue", *_on(cluster), "-h", "-a", "-t", "RUNNING,COMPLETING", "-w", nodes, "-o", "%e"]
    stdout = runner.run(argv, env_extra=TIME_ENV)
    return max(filter(None, (_epoch(line.strip()) for line in stdout.splitlines())), default=None)


def reservation_create(argv: list[str]) -> Reservation | None:
    """Run a create_argv. If a reservation of that name already exists (a replayed task), that is success."""
    name = next(item for item in argv if item.startswith("reservationname=")).split("=", 1)[1]
    cluster = argv[2] if argv[1] == "-M" else ""  # the cluster create_argv was given
    try:
        runner.run(argv, env_extra=TIME_ENV)
    except SlurmRejected:
        existing = reservation_list(cluster=cluster).get(name)
        if existing is None:
            raise
        logger.info("slurm: reservation %s already exists", name)
    return reservation_list(cluster=cluster).get(name)


def reservation_delete(name: str, *, cluster: str = "") -> None:
    """Delete a reservation; one that is already gone (ended, deleted by hand) is not an error."""
    try:
        runner.run(["scontrol", *_on(cluster), "delete", f"reservationname={check_name(name)}"])
    except SlurmRejected as error:
        if any(marker in error.message.lower() for marker in GONE):
            return
        raise


def job_reservation_clear(job_id: str, *, cluster: str = "") -> None:
    """Let a pending job (of `cluster`) run outside the reservation it asked for (the lab ended before it started)."""
    try:
        runner.run(["scontrol", *_on(cluster), "update", f"jobid={check_job_id(job_id)}", "reservation="])
        # When the reservation ended first, Slurm holds the job (RESV_DEL_HOLD); a job not held is left as it is.
        runner.run(["scontrol", *_on(cluster), "release", job_id])
    except SlurmRejected as error:
        logger.info("slurm: could not clear the reservation of job %s: %s", job_id, error)


def jobs_release(job_ids: Sequence[str], *, cluster: str = "") -> None:
    """Release jobs (of `cluster`) Slurm held when a reservation they had left was deleted after all
    (RESV_DEL_HOLD): one call.

    Slurm holds a pending job whose reservation it deletes, and may do so after the job was moved out of it
    (the reservation's deletion, by Slurm at its end or by the portal, races the move)."""
    if job_ids:
        try:
            runner.run(["scontrol", *_on(cluster), "release", ",".join(check_job_id(job_id) for job_id in job_ids)])
        except SlurmRejected as error:
            logger.info("slurm: could not release jobs %s: %s", ",".join(job_ids), error)
