"""The parsers on values at the edge of what Slurm prints: heterogeneous and array job ids, empty or
odd numeric fields, and pending jobs whose order is not their id order. Inputs are captured real output
(tests/slurm/captured, Slurm 22.05) with one field changed.
"""

from __future__ import annotations

import pytest

from slurm import parsers
from slurm.records import check_job_id
from tests.slurm.helpers import captured

D = parsers.DELIMITER


SACCT = captured("sacct.txt")


def sacct_line(job_id: str, **changes: str) -> str:
    line = next(line for line in SACCT.splitlines() if line.startswith(job_id + D))
    parts = line.split(D, len(parsers.SACCT_FIELDS) - 1)
    for name, value in changes.items():
        parts[parsers.SACCT_FIELDS.index(name)] = value
    return D.join(parts)


def pending(job_id: str, priority: str, submit: str) -> str:
    """A pending job as 22.05's squeue prints it (the fields of SQUEUE_FIELDS)."""
    return D.join(
        [job_id, "student1", "cs101", "gpu", "PENDING", "Priority", priority, submit, "N/A", "", "(null)", "lq-x"]
    )


def test_a_heterogeneous_job_is_newer_than_the_jobs_before_it() -> None:
    # squeue -o %i prints each component of het job 140 as 140+0, 140+1.
    newest = parsers.newest_job_id(parsers.parse_job_ids("140+0\n140+1\n139\n"))

    assert newest in {"140+0", "140+1"}


def test_the_newest_id_of_an_array_is_a_started_task_not_the_pending_rest() -> None:
    # squeue without -r (as find_by_name runs it) prints an array's waiting tasks as one 139_[2-5]; the id the
    # portal keeps must be one it can ask about later.
    newest = parsers.newest_job_id(parsers.parse_job_ids("139_[2-5]\n139_0\n"))

    assert newest == "139_0"
    assert check_job_id(newest) == "139_0"


def test_an_exit_code_with_an_empty_signal_part_has_its_code_and_no_signal() -> None:
    record = parsers.parse_sacct(sacct_line("9", ExitCode="3:"))["9"]

    assert (record.exit_code, record.signal) == (3, None)


def test_an_empty_elapsed_time_counts_no_gpu_seconds() -> None:
    record = parsers.parse_sacct(sacct_line("8", ElapsedRaw=""))["8"]

    assert (record.gpus, record.elapsed_seconds, record.gpu_seconds) == (1, 0, 0)


def test_an_empty_squeue_priority_is_zero() -> None:
    job = parsers.parse_squeue(pending("150", "", "1795980300"))["150"]

    assert (job.priority, job.queue_position) == (0, 1)


@pytest.mark.parametrize(("mem", "mb"), [("4g", 4096), ("1000m", 1000), ("2048k", 2)])
def test_memory_units_are_read_in_either_case(mem: str, mb: int) -> None:
    record = parsers.parse_sacct(sacct_line("9", AllocTRES=f"billing=1,cpu=1,mem={mem},node=1"))["9"]

    assert record.mem_mb == mb


def test_a_tres_item_without_an_amount_is_no_resource() -> None:
    record = parsers.parse_sacct(sacct_line("8", AllocTRES="billing=1,cpu=1,gres/gpu"))["8"]

    assert record.alloc_tres == {"billing": "1", "cpu": "1"}
    assert (record.gpus, record.cpus, record.billing) == (0, 1, 1)


def test_a_requeued_job_waits_behind_jobs_of_its_priority_submitted_before_its_requeue() -> None:
    # Slurm resets a requeued job's submit time: 150 (requeued) now has a later one than 151.
    jobs = parsers.parse_squeue(pending("150", "83", "1795980400") + "\n" + pending("151", "83", "1795980300"))

    assert (jobs["151"].queue_position, jobs["150"].queue_position) == (1, 2)


def test_a_pending_job_without_a_submit_time_goes_after_those_with_one() -> None:
    jobs = parsers.parse_squeue(pending("150", "83", "N/A") + "\n" + pending("151", "83", "1795980300"))

    assert jobs["150"].submit_time is None
    assert (jobs["151"].queue_position, jobs["150"].queue_position) == (1, 2)


def test_sbatch_output_that_is_not_a_job_id_is_quoted_in_the_error() -> None:
    with pytest.raises(parsers.ParseError) as caught:
        parsers.parse_sbatch("Submitted batch job\n")

    assert str(caught.value) == "sbatch printed 'Submitted batch job', not a job id"


def test_sbatch_that_printed_nothing_says_so_in_the_error() -> None:
    with pytest.raises(parsers.ParseError) as caught:
        parsers.parse_sbatch("\n")

    assert str(caught.value) == "sbatch printed no job id"
