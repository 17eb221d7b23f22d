"""Frozen dataclasses that go in and out of the Slurm adapter."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from .states import PENDING

# A cluster username: no leading "-" (it would read as an option) and no spaces.
USERNAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@-]*$")
# A job id as squeue/sacct print it: 123, or 123_4 for an array task.
JOB_ID_RE = re.compile(r"^\d+(?:_\d+)?$")


def check_username(user: str) -> str:
    if not USERNAME_RE.match(user or ""):
        raise ValueError(f"not a valid cluster username: {user!r}")
    return user


def check_job_id(job_id: str) -> str:
    if not JOB_ID_RE.match(job_id or ""):
        raise ValueError(f"not a valid Slurm job id: {job_id!r}")
    return job_id


#: In a federation a job id is the origin cluster's id (sacctmgr show cluster format=cluster,id) shifted left by
#: these bits, plus the job's id on that cluster: lab (id 1) numbers its job 24 as 67108888.
FEDERATION_ID_BITS = 26


def federated_job_id_parts(job_id: str) -> tuple[int, int] | None:
    """(origin cluster's id, local job id) of a federation-wide job id; None for an id without a cluster's bits."""
    number = job_id.split("_", 1)[0]
    if not number.isdigit() or int(number) >> FEDERATION_ID_BITS == 0:
        return None
    return int(number) >> FEDERATION_ID_BITS, int(number) & ((1 << FEDERATION_ID_BITS) - 1)


def check_job_name(name: str) -> str:
    # squeue -n and sacct --name take comma-separated lists: a comma would split it.
    if not name or "," in name or "\n" in name:
        raise ValueError(f"job name must be non-empty, one line, without commas: {name!r}")
    return name


_CLUSTER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}")


def check_cluster(name: str) -> str:
    """A cluster's name as slurmdbd keeps it (ClusterName): letters, digits, "_" and "-", never an option."""
    if not _CLUSTER_NAME.fullmatch(name):
        raise ValueError(f"not a cluster name: {name!r}")
    return name


def check_clusters(names: str) -> str:
    """One cluster's name, or several separated by commas (`sacct -M lab,lab2` reads each one's records)."""
    return ",".join(check_cluster(name) for name in names.split(","))


@dataclass(frozen=True)
class JobSpec:
    """One batch submission. The script already holds its own #SBATCH resource lines."""

    script_path: str
    run_as: str
    account: str
    job_name: str
    workdir: str
    stdout: str
    stderr: str
    partition: str = ""
    reservation: str = ""
    qos: str = ""
    comment: str = ""
    #: e.g. "afterok:123": the job waits for that one to complete (a check after its job).
    dependency: str = ""
    #: Another cluster of the same slurmdbd (`sbatch -M`); empty: the local one (or its federation).
    cluster: str = ""

    def __post_init__(self) -> None:
        if not self.script_path.startswith("/"):
            raise ValueError(f"script_path must be absolute: {self.script_path!r}")
        check_username(self.run_as)
        check_job_name(self.job_name)
        if not self.account:
            raise ValueError("account is required")


@dataclass(frozen=True)
class LiveJob:
    """A job as squeue sees it now.

    ``start_time`` is the actual start, or for a PENDING job Slurm's estimate
    (None when it has none). ``reservation`` is the reservation the job runs in or
    waits for ("" for none). ``queue_position`` is the 1-based rank among PENDING
    jobs of the same partition and reservation (higher priority first, then earlier
    submission); None when the job is not pending.
    """

    job_id: str
    name: str
    user: str
    account: str
    partition: str
    state: str
    reason: str
    priority: int
    submit_time: datetime | None
    start_time: datetime | None
    nodes: str
    reservation: str = ""
    queue_position: int | None = None

    @property
    def is_pending(self) -> bool:
        return self.state == PENDING


@dataclass(frozen=True)
class AcctRecord:
    """One allocation row of sacct (-X): the final word on a job."""

    job_id: str
    name: str
    user: str
    account: str
    partition: str
    qos: str
    reservation: str
    state: str
    cancelled_by: str
    exit_code: int | None
    signal: int | None
    reason: str
    submit: datetime | None
    start: datetime | None
    end: datetime | None
    elapsed_seconds: int
    alloc_tres: dict[str, str] = field(default_factory=dict, hash=False)
    gpus: int = 0
    cpus: int = 0
    mem_mb: int = 0
    billing: int = 0
    comment: str = ""
    node_list: str = ""

    @property
    def gpu_seconds(self) -> int:
        return self.gpus * self.elapsed_seconds

    @property
    def provisional(self) -> bool:
        """slurmdbd's placeholder for a job that started right after submission.

        Slurm 22.05 may show such a job for about a second with JobName
        "allocation", no partition and QOS "Unknown" (state, exit code and times
        are already right); the next sacct call has the full row.
        """
        return not self.partition
