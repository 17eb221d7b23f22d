"""How a failed Slurm command is sorted and described: by its exit status when stderr says nothing known,
with every distinct error line Slurm printed, and with the command kept for the logs."""

from __future__ import annotations

import pytest

from slurm.errors import SlurmMisconfigured, SlurmRejected, SlurmUnavailable, classify


@pytest.mark.parametrize(
    ("returncode", "stderr"),
    [
        (126, "sh: 1: /opt/slurm/bin/sbatch: Permission denied\n"),  # dash: found but not executable
        (127, "sh: 1: sbatch: not found\n"),  # dash: not on PATH
    ],
)
def test_a_tool_the_shell_could_not_execute_or_find_is_misconfigured_not_rejected(returncode: int, stderr: str) -> None:
    error = classify(["sbatch", "job.sh"], returncode, stderr)

    assert isinstance(error, SlurmMisconfigured)
    assert error.message == f"sbatch could not be run on the worker: {stderr.strip()}"


def test_an_unavailable_controller_error_keeps_the_command_for_the_logs() -> None:
    error = classify(["squeue", "-h"], 1, "squeue: error: Socket timed out on send/recv operation\n")

    assert isinstance(error, SlurmUnavailable)
    assert error.argv == ["squeue", "-h"]


def test_several_refusals_are_all_kept_once_each_in_their_order() -> None:
    stderr = (
        "scancel: error: Kill job error on job id 12: Invalid job id specified\n"
        "scancel: error: Kill job error on job id 13: Access/permission denied\n"
        "scancel: error: Kill job error on job id 12: Invalid job id specified\n"
    )

    error = classify(["scancel", "12", "13"], 1, stderr)

    assert isinstance(error, SlurmRejected)
    assert error.message == (
        "Kill job error on job id 12: Invalid job id specified; Kill job error on job id 13: Access/permission denied"
    )


def test_a_tool_that_failed_silently_is_described_by_its_name_and_status() -> None:
    error = classify(["/usr/bin/scancel", "12"], 1, "")

    assert isinstance(error, SlurmRejected)
    assert error.message == "scancel exited with status 1"


def test_a_slurm_errors_args_are_its_message_as_celery_records_a_failed_task() -> None:
    # Celery stores a task's exception as its type and args; the message must be there, not None.
    error = classify(["sbatch"], 1, "sbatch: error: Batch job submission failed: Invalid qos specification\n")

    assert error.args == ("Batch job submission failed: Invalid qos specification",)
