"""What a Slurm error looks like where people read it: str() for the student, repr() for logs and task results."""

from __future__ import annotations

from slurm.errors import SlurmRejected, SlurmUnavailable, classify


def test_str_is_slurms_message_alone_and_repr_adds_the_kind_and_the_command() -> None:
    error = classify(["sbatch", "--account=nope"], 1, "sbatch: error: Batch job submission failed: Invalid account\n")

    assert isinstance(error, SlurmRejected)
    assert str(error) == "Batch job submission failed: Invalid account"
    assert (
        repr(error)
        == "SlurmRejected('Batch job submission failed: Invalid account', argv=['sbatch', '--account=nope'])"
    )


def test_an_error_without_a_command_has_an_empty_argv() -> None:
    assert repr(SlurmUnavailable("squeue did not answer within 30 s")) == (
        "SlurmUnavailable('squeue did not answer within 30 s', argv=[])"
    )
