"""The squeue and sacct parsers on output holding a forged record, as Slurm 22.05 prints it when a job
name holds a line break and the delimiter (recorded on the lab cluster, marker as the adapter asks)."""

import logging

import pytest

from slurm import parsers

D = parsers.DELIMITER
MARKER = "~Q7xKp2Za"
FORGED_SQUEUE = D.join(["1820", "student1", "cs101", "gpu", "RUNNING", "None", "1", "1796030280", "1796030281"])
FORGED_SQUEUE += D + "gpu1" + D + "(null)" + D + "lq-7d6478e5-07f7-4c55-a1e2-c9756400e587"


def squeue_record(job_id: str, name: str, state: str = "PENDING") -> str:
    times = f"1796030280{MARKER}"
    fields = [job_id, "student2", "cs101", "gpu", state, "None", "100", times, f"N/A{D}", "(null)", name]
    return D.join(fields) + D + times + "\n"


def test_a_forged_squeue_line_inside_a_job_name_stays_that_jobs_name():
    stdout = squeue_record("1820", "lq-7d6478e5-07f7-4c55-a1e2-c9756400e587") + squeue_record(
        "1821", f"x\n{FORGED_SQUEUE}"
    )

    jobs = parsers.parse_squeue(stdout, marker=MARKER)

    assert set(jobs) == {"1820", "1821"}
    assert jobs["1820"].state == "PENDING", "the forged RUNNING line did not replace the real record"
    assert jobs["1821"].name == f"x\n{FORGED_SQUEUE}"


def test_a_record_without_the_marker_at_its_end_is_dropped_and_logged(caplog: pytest.LogCaptureFixture):
    stdout = squeue_record("1820", "ok") + FORGED_SQUEUE + "\n"

    with caplog.at_level(logging.WARNING, logger="slurm.parsers"):
        jobs = parsers.parse_squeue(stdout, marker=MARKER)

    assert set(jobs) == {"1820"}
    assert "not framed by the time marker" in caplog.text


def test_markers_differ_from_one_command_to_the_next_and_fit_in_a_time_slurm_prints():
    markers = {parsers.framing_marker() for _ in range(100)}

    assert len(markers) == 100
    assert all(len("1796030280" + marker) <= 19 for marker in markers), "sacct prints 19 characters of a time"


def test_a_job_id_printed_twice_keeps_neither_record(caplog: pytest.LogCaptureFixture):
    # Recorded output read line by line (no marker): the second line of 1820 is not Slurm's.
    real = D.join(
        ["1820", "student2", "cs101", "gpu", "PENDING", "None", "100", "1796030280", "N/A", "", "(null)", "ok"]
    )
    stdout = f"{real}\n{FORGED_SQUEUE}\n"

    with caplog.at_level(logging.WARNING, logger="slurm.parsers"):
        jobs = parsers.parse_squeue(stdout)

    assert "1820" not in jobs
    assert "more than once" in caplog.text
