"""Fixtures for the Slurm adapter tests.

Parser tests need nothing. Tests marked ``slurm`` talk to the real lab cluster
(``scripts/labcluster up``, which `make test` runs first); they fail when it does not answer.
"""

from __future__ import annotations

import os
import pwd
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.conf import settings

from jobs import slurm
from jobs.slurm import runner

from .helpers import STUDENT, TEST_ROOT, JobDir, give_to_student

if not settings.configured and not os.environ.get("DJANGO_SETTINGS_MODULE"):
    settings.configure(USE_TZ=True)  # the adapter only reads SLURM_* with defaults


@pytest.fixture(scope="session")
def cluster() -> None:
    """Fail at once, with the fix, when the lab cluster is down."""
    try:
        pwd.getpwnam(STUDENT)
        runner.run(["scontrol", "ping"], timeout=15)
    except (KeyError, slurm.SlurmError) as exc:
        pytest.fail(f"the lab Slurm cluster is unavailable ({exc}); run scripts/labcluster up")


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


@contextmanager
def _student_dir(submitted: list[str]) -> Iterator[JobDir]:
    TEST_ROOT.mkdir(parents=True, exist_ok=True)
    TEST_ROOT.chmod(0o755)
    give_to_student(TEST_ROOT)
    path = TEST_ROOT / uuid.uuid4().hex[:12]
    path.mkdir()
    give_to_student(path)
    yield JobDir(path, submitted)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def job_dir(submitted: list[str]) -> Iterator[JobDir]:
    """A fresh directory owned by the student, removed after the test."""
    with _student_dir(submitted) as directory:
        yield directory


@pytest.fixture(scope="module")
def early_job(submitted: list[str]) -> Iterator[tuple[str, str]]:
    """(job id, job name) of a quick job submitted when the module starts.

    For tests that need a job that has already left squeue (MinJobAge): it ages
    while the other tests run.
    """
    with _student_dir(submitted) as directory:
        spec = directory.spec(directory.script("true"))
        yield directory.submit(spec), spec.job_name
