"""Fixtures for the Slurm adapter tests.

Parser tests need nothing: no cluster, no database, no root. Tests marked ``slurm`` talk to the real
lab cluster (``scripts/labcluster up``, which `make test` runs first) and ask for ``cluster``, which
fails at once when it does not answer; the job fixtures live in test_slurm_cluster.py, their only user.
"""

from __future__ import annotations

import os
import pwd
import time
from collections.abc import Iterator

import pytest
from django.conf import settings

import slurm
from slurm import runner

from .helpers import STUDENT

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


@pytest.fixture
def worker_behind_utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The worker's own time zone five hours behind UTC (a POSIX TZ, no tz database needed), restored after."""
    monkeypatch.setenv("TZ", "EST5")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def host_behind_utc(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Slurm commands run as on a host whose own time zone is five hours behind UTC.

    The runner gives a command no TZ of the worker's, so a command reads times in the host's zone (the lab
    host's is UTC) unless the adapter says which: this puts a zone in the command's base environment instead.
    """
    monkeypatch.setitem(runner.BASE_ENV, "TZ", "EST5")
