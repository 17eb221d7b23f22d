"""Times between the adapter and Slurm: squeue and sacct print each time followed by the command's own marker
(slurm/parsers.py, "Framing"), and the times given to sacct are UTC, as it reads them (TZ=UTC).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from slurm import commands, parsers
from tests.slurm.helpers import captured

CAPTURE_MARKER = "~Capture1"  # the marker fixed in the captures


def test_squeue_run_with_the_framed_time_environment_prints_records_its_parser_reads() -> None:
    marker = parsers.framing_marker()
    env = commands._framed_time_env(marker)
    recorded = captured("24.11/squeue.txt")
    # The capture was printed with SLURM_TIME_FORMAT=%s~Capture1: the same output in this environment's format.
    printed = recorded.replace(CAPTURE_MARKER, env["SLURM_TIME_FORMAT"].removeprefix("%s"))

    jobs = parsers.parse_squeue(printed, marker=marker)

    assert env["SLURM_TIME_FORMAT"].startswith("%s")
    assert env["TZ"] == "UTC"
    assert jobs and jobs == parsers.parse_squeue(recorded, marker=CAPTURE_MARKER)


@pytest.mark.usefixtures("worker_behind_utc")
def test_a_time_for_sacct_is_written_in_utc_whatever_the_workers_time_zone() -> None:
    since = datetime(2026, 12, 1, 10, 0, tzinfo=timezone(timedelta(hours=1)))

    assert commands._slurm_time(since) == "2026-12-01T09:00:00"
