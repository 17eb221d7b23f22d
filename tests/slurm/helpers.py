"""Helpers for the Slurm adapter tests: bounded waiting and student-owned job dirs."""

from __future__ import annotations

import os
import pwd
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import slurm

TEST_ROOT = Path("/var/lib/labqueue/test-adapter")
CAPTURED = Path(__file__).parent / "captured"


def captured(name: str) -> str:
    """A capture file of real Slurm output: "#" lines are notes, "^_" (as cat -v shows it) is the delimiter."""
    lines = (CAPTURED / name).read_text().splitlines(keepends=True)
    return "".join(line.replace("^_", "\x1f") for line in lines if not line.startswith("#"))


def shell(script: str) -> list[str]:
    """A command that runs a shell script, for tests that put an ordinary program where a Slurm tool goes."""
    return ["sh", "-c", script]


STUDENT = "student1"
COURSE_ACCOUNT = "cs101"
FINAL_STATES = {
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "OUT_OF_MEMORY",
    "NODE_FAIL",
    "BOOT_FAIL",
    "PREEMPTED",
    "DEADLINE",
}

T = TypeVar("T")


def wait_for(check: Callable[[], T], *, timeout: float = 60, interval: float = 0.5) -> T:
    """Call ``check`` until it returns something truthy; fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout} s; last value: {value!r}")
        time.sleep(interval)


def wait_for_final(job_id: str, timeout: float = 60) -> slurm.AcctRecord:
    """Poll sacct (one call per poll) until the job has a final state.

    Slurm 22.05's slurmdbd may first show a placeholder row for a job that started
    quickly (JobName "allocation", no partition, sometimes still PENDING) and fill
    it in about a second later: wait until the row is no longer provisional.
    """

    def final() -> slurm.AcctRecord | None:
        record = slurm.accounting(job_ids=[job_id]).get(job_id)
        return record if record and record.state in FINAL_STATES and not record.provisional else None

    return wait_for(final, timeout=timeout, interval=1)


class JobDir:
    """A directory owned by the student, with helpers to write scripts and specs."""

    def __init__(self, path: Path, submitted: list[str]) -> None:
        self.path = path
        self.submitted = submitted

    def script(self, body: str, *sbatch: str, name: str = "job.sh") -> Path:
        lines = ["#!/bin/bash", "#SBATCH --time=00:02:00", "#SBATCH --ntasks=1"]
        lines += [f"#SBATCH {option}" for option in sbatch]
        path = self.path / name
        path.write_text("\n".join([*lines, body, ""]))
        give_to_student(path)
        return path

    def spec(self, script: Path, **overrides: str) -> slurm.JobSpec:
        fields = {
            "script_path": str(script),
            "run_as": STUDENT,
            "account": COURSE_ACCOUNT,
            "job_name": f"lq-test-{uuid.uuid4()}",
            "workdir": str(self.path),
            "stdout": str(self.path / "out.txt"),
            "stderr": str(self.path / "err.txt"),
        }
        fields.update(overrides)
        return slurm.JobSpec(**fields)

    def submit(self, spec: slurm.JobSpec) -> str:
        job_id = slurm.submit(spec)
        self.submitted.append(job_id)
        return job_id

    def read(self, name: str) -> str:
        return (self.path / name).read_text()


def give_to_student(path: Path) -> None:
    user = pwd.getpwnam(STUDENT)
    os.chown(path, user.pw_uid, user.pw_gid)
