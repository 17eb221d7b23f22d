"""Fixtures for the Slurm adapter tests.

Parser tests need nothing. Tests marked ``slurm`` talk to the real lab cluster
(``scripts/labcluster up``); they are skipped when it does not answer, unless
LABQUEUE_REQUIRE_SLURM=1 makes that a failure (CI brings the cluster up).
"""

from __future__ import annotations

import os
import pwd
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from django.conf import settings

from jobs import slurm
from jobs.slurm import runner

if not settings.configured and not os.environ.get("DJANGO_SETTINGS_MODULE"):
    settings.configure(USE_TZ=True)  # the adapter only reads SLURM_* with defaults

TEST_ROOT = Path("/var/lib/labqueue/test-adapter")
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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slurm: talks to the real lab Slurm cluster")


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
    """Poll sacct (one call per poll) until the job has a final state."""

    def final() -> slurm.AcctRecord | None:
        record = slurm.accounting(job_ids=[job_id]).get(job_id)
        return record if record and record.state in FINAL_STATES else None

    return wait_for(final, timeout=timeout, interval=1)


@pytest.fixture(scope="session")
def cluster() -> None:
    """Skip (or fail, with LABQUEUE_REQUIRE_SLURM=1) when the lab cluster is down."""
    try:
        pwd.getpwnam(STUDENT)
        runner.run(["scontrol", "ping"], timeout=15)
    except (KeyError, slurm.SlurmError) as exc:
        if os.environ.get("LABQUEUE_REQUIRE_SLURM") == "1":
            pytest.fail(f"the lab Slurm cluster is required but unavailable: {exc}")
        pytest.skip(f"lab Slurm cluster unavailable ({exc}); run scripts/labcluster up")


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
        _give_to_student(path)
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


def _give_to_student(path: Path) -> None:
    user = pwd.getpwnam(STUDENT)
    os.chown(path, user.pw_uid, user.pw_gid)


@pytest.fixture(scope="session")
def submitted(cluster: None) -> Iterator[list[str]]:
    """Job ids the tests submitted; whatever is left is cancelled at the end."""
    ids: list[str] = []
    yield ids
    if ids:
        try:
            runner.run(["scancel", *ids])  # as root: any job, finished ones ignored
        except slurm.SlurmError:
            pass


@pytest.fixture
def job_dir(submitted: list[str]) -> Iterator[JobDir]:
    TEST_ROOT.mkdir(parents=True, exist_ok=True)
    TEST_ROOT.chmod(0o755)
    _give_to_student(TEST_ROOT)
    path = TEST_ROOT / uuid.uuid4().hex[:12]
    path.mkdir()
    _give_to_student(path)
    yield JobDir(path, submitted)
    shutil.rmtree(path, ignore_errors=True)
