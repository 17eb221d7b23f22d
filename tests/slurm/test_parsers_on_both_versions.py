"""The parsers on output captured from both supported Slurm versions (tests/slurm/captured/<version>/).

22.05 is a read-only capture of the host's lab cluster while other tests used it; 24.11 is the cluster of
scripts/slurm24 after `scripts/capture_slurm_output jobs` (see the notes at the top of each file). Every
record of every capture must parse; the 24.11 jobs are checked one by one as test_slurm_parsers.py checks
the 22.05 ones. squeue and sacct were run exactly as the adapter runs them, framed by a time marker
(slurm/parsers.py, "Framing"): the marker is fixed in the captures, ~Capture1.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from slurm import accounts, parsers, reservations, states

CAPTURED = Path(__file__).parent / "captured"
VERSIONS = ["22.05", "24.11"]
MARKER = "~Capture1"


def captured(version: str, name: str) -> str:
    """A capture file: "#" lines are notes, "^_" (as cat -v shows it) is the delimiter."""
    lines = (CAPTURED / version / name).read_text().splitlines(keepends=True)
    return "".join(line.replace("^_", "\x1f") for line in lines if not line.startswith("#"))


def records(version: str, name: str) -> list[str]:
    """The records of a capture: one a line (the names in these captures hold no line break)."""
    return [line for line in captured(version, name).split("\n") if line]


def epoch(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


KNOWN_STATES = states.LIVE_STATES | {
    "COMPLETED",
    "CANCELLED",
    "FAILED",
    "TIMEOUT",
    "OUT_OF_MEMORY",
    "NODE_FAIL",
    "BOOT_FAIL",
    "PREEMPTED",
    "DEADLINE",
}


@pytest.mark.parametrize("version", VERSIONS)
def test_every_squeue_line_of_either_version_becomes_a_live_job_in_a_known_state(version: str) -> None:
    lines = records(version, "squeue.txt")

    jobs = parsers.parse_squeue(captured(version, "squeue.txt"), marker=MARKER)

    assert len(lines) > 0 and len(jobs) == len(lines)
    assert {job.state for job in jobs.values()} <= KNOWN_STATES
    assert all(job.submit_time and job.submit_time.tzinfo is UTC for job in jobs.values())
    pending = [job for job in jobs.values() if job.state == "PENDING"]
    assert all(job.start_time is None and job.nodes == "" for job in pending)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_sacct_line_of_either_version_becomes_a_record_in_a_known_state(version: str) -> None:
    lines = records(version, "sacct.txt")

    found = parsers.parse_sacct(captured(version, "sacct.txt"), marker=MARKER)

    assert len(lines) > 0 and len(found) == len(lines)
    assert {record.state for record in found.values()} <= KNOWN_STATES
    assert all(record.exit_code is not None for record in found.values())
    finished = [record for record in found.values() if record.state == "COMPLETED"]
    assert finished and all(record.end and record.end >= record.start for record in finished)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_association_of_either_version_parses(version: str) -> None:
    lines = records(version, "sacctmgr-assoc.txt")

    assocs = accounts.parse_assocs(captured(version, "sacctmgr-assoc.txt"))

    assert len(assocs) == len(lines) > 0
    assert {assoc.account for assoc in assocs} <= {"cs101", "cs102", "research"}  # what was asked for
    assert ("cs101", "") in {(assoc.account, assoc.user) for assoc in assocs}  # the account's own association


def test_no_reservation_in_22_05_is_an_empty_list() -> None:
    assert captured("22.05", "scontrol-reservations.txt").strip() == "No reservations in the system"
    assert reservations.parse_reservations(captured("22.05", "scontrol-reservations.txt")) == {}


def test_a_24_11_reservation_of_two_gpus_keeps_its_tres_among_the_core_fields() -> None:
    # 24.11 prints "NodeName=gpu1 CoreIDs=0-7" between Flags and TRES for a reservation by TRES count.
    found = reservations.parse_reservations(captured("24.11", "scontrol-reservations.txt"))

    reservation = found["lq-capture"]
    assert reservation.tres == "cpu=8,gres/gpu=2"
    assert (reservation.nodes, reservation.accounts, reservation.flags) == ("gpu1", "cs102", "IGNORE_JOBS")
    assert reservation.end - reservation.start == epoch(600) - epoch(0)
    assert reservation.state == "INACTIVE"


SACCT_24 = captured("24.11", "sacct-jobs.txt")
SQUEUE_24 = captured("24.11", "squeue.txt")


def test_24_11_a_completed_gpu_job_has_exit_zero_its_gpu_name_and_comment() -> None:
    record = parsers.parse_sacct(SACCT_24, marker=MARKER)["347"]

    assert (record.state, record.exit_code, record.signal) == ("COMPLETED", 0, 0)
    assert (record.gpus, record.cpus, record.mem_mb, record.billing) == (1, 1, 1000, 1)
    assert (record.name, record.comment, record.node_list) == ("cap|ok name", "cmt|ok", "gpu2")
    assert (record.submit, record.start, record.end) == (epoch(1796044186), epoch(1796044187), epoch(1796044187))
    assert not record.provisional


def test_24_11_exit_three_sigkill_and_the_time_limit() -> None:
    found = parsers.parse_sacct(SACCT_24, marker=MARKER)

    assert (found["348"].state, found["348"].exit_code, found["348"].signal) == ("FAILED", 3, 0)
    assert (found["349"].state, found["349"].exit_code, found["349"].signal) == ("FAILED", 0, 9)
    assert (found["350"].state, found["350"].elapsed_seconds, found["350"].comment) == ("TIMEOUT", 72, "cmt|to")


def test_24_11_a_job_over_its_memory_is_failed_by_sigkill_not_out_of_memory() -> None:
    # Without cgroups, OverMemoryKill kills the step: FAILED 0:9 on 24.11 (the explanation reads the log).
    record = parsers.parse_sacct(SACCT_24, marker=MARKER)["354"]

    assert (record.state, record.exit_code, record.signal, record.mem_mb) == ("FAILED", 0, 9, 200)


def test_24_11_a_held_job_cancelled_before_it_started_names_the_canceller_and_no_start() -> None:
    record = parsers.parse_sacct(SACCT_24, marker=MARKER)["351"]

    assert (record.state, record.cancelled_by) == ("CANCELLED", "1001")
    assert record.start is None and record.end == epoch(1796044186)
    assert record.node_list == "" and record.gpus == 0
    # 22.05 kept the last pending reason (JobHeldUser) in sacct; 24.11 says None.
    assert record.reason == ""


def test_24_11_pending_and_running_jobs_in_sacct_have_no_end() -> None:
    found = parsers.parse_sacct(SACCT_24, marker=MARKER)

    assert (found["352"].state, found["352"].start, found["352"].end) == ("PENDING", None, None)
    assert (found["353"].state, found["353"].gpus, found["353"].end) == ("RUNNING", 2, None)


def test_24_11_squeue_shows_held_running_and_finished_jobs_with_reasons() -> None:
    jobs = parsers.parse_squeue(SQUEUE_24, marker=MARKER)

    assert (jobs["352"].state, jobs["352"].reason, jobs["352"].start_time) == ("PENDING", "JobHeldUser", None)
    assert (jobs["353"].state, jobs["353"].nodes, jobs["353"].name) == ("RUNNING", "gpu2", "cap|running")
    assert (jobs["350"].state, jobs["350"].reason) == ("TIMEOUT", "TimeLimit")
    assert jobs["349"].reason == "RaisedSignal:9(Killed)"
    assert jobs["352"].queue_position == 1
    # A job cancelled before it started: 24.11's squeue prints the cancel time as its start (%S).
    assert jobs["351"].start_time == jobs["351"].submit_time
