"""A worker whose Slurm tools are missing: every operation is SlurmUnavailable (retry), never a refusal.

SLURM_BIN_DIR points at an empty folder, so the commands are really run and really fail to start; no
controller is asked anything. The error carries the exact argv the operation would have run, which is
how these tests also check the command lines the adapter builds.
"""

from __future__ import annotations

import pwd
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

import slurm
from slurm import accounts, parsers, reservations, runner
from slurm.records import JobSpec

JOB_DIR = "/var/lib/labqueue/jobs/student1/0f8e"


@pytest.fixture
def bin_dir(settings, tmp_path: Path) -> Path:
    """An empty SLURM_BIN_DIR: no sbatch, squeue, sacct, scancel, sacctmgr or scontrol in it."""
    settings.SLURM_BIN_DIR = str(tmp_path)
    settings.SLURM_RUN_AS_PREFIX = "runuser -u {user} --"
    return tmp_path


def spec(**options: str) -> JobSpec:
    return JobSpec(
        script_path=f"{JOB_DIR}/job.sh",
        run_as="student1",
        account="cs101",
        job_name="lq-0f8e",
        workdir=JOB_DIR,
        stdout=f"{JOB_DIR}/job.out",
        stderr=f"{JOB_DIR}/job.err",
        **options,
    )


def test_submitting_without_sbatch_is_unavailable_and_names_the_whole_command(bin_dir: Path) -> None:
    job = spec(partition="gpu", reservation="lq-cs101-7", qos="coursework", comment="lq job 0f8e")

    with pytest.raises(slurm.SlurmUnavailable) as caught:
        slurm.submit(job)

    assert "failed to execute" in caught.value.message and "sbatch" in caught.value.message
    assert caught.value.argv == [
        "runuser",
        "-u",
        "student1",
        "--",
        str(bin_dir / "sbatch"),
        "--parsable",
        "--export=NONE",
        "--account=cs101",
        "--job-name=lq-0f8e",
        f"--chdir={JOB_DIR}",
        f"--output={JOB_DIR}/job.out",
        f"--error={JOB_DIR}/job.err",
        "--partition=gpu",
        "--reservation=lq-cs101-7",
        "--qos=coursework",
        "--comment=lq job 0f8e",
        f"{JOB_DIR}/job.sh",
    ]


def test_a_submission_without_partition_reservation_qos_or_comment_leaves_those_options_out(bin_dir: Path) -> None:
    with pytest.raises(slurm.SlurmUnavailable) as caught:
        slurm.submit(spec())

    options = caught.value.argv[5:]
    assert not any(option.startswith(("--partition", "--reservation", "--qos", "--comment")) for option in options)
    assert options[-1] == f"{JOB_DIR}/job.sh"


def test_accounting_without_sacct_is_unavailable_and_asks_for_the_window_in_utc(bin_dir: Path) -> None:
    berlin = ZoneInfo("Europe/Berlin")

    with runner.command_log() as commands, pytest.raises(slurm.SlurmUnavailable) as caught:
        slurm.accounting(
            job_ids=["8", "139_2"],
            since=datetime(2026, 11, 29, 20, 0, tzinfo=berlin),
            until=datetime(2026, 11, 30, 1, 30, tzinfo=berlin),
            accounts=["cs101", "cs102"],
        )

    assert caught.value.argv == [
        str(bin_dir / "sacct"),
        "-X",
        "-P",
        "-n",
        "-a",
        f"--delimiter={parsers.DELIMITER}",
        "-o",
        parsers.SACCT_FORMAT,
        "-j",
        "8,139_2",
        "-S",
        "2026-11-29T19:00:00",
        "-E",
        "2026-11-30T00:30:00",
        "-A",
        "cs101,cs102",
    ]
    assert len(commands) == 1


def test_accounting_by_job_id_alone_looks_back_far_enough_to_find_old_jobs(bin_dir: Path) -> None:
    with pytest.raises(slurm.SlurmUnavailable) as caught:
        slurm.accounting(job_ids=["8"])

    argv = caught.value.argv
    assert argv[argv.index("-S") + 1] == "2000-01-01T00:00:00"
    assert "-E" not in argv and "-A" not in argv


def test_accounting_with_neither_ids_nor_window_leaves_sacct_its_own_default(bin_dir: Path) -> None:
    with pytest.raises(slurm.SlurmUnavailable) as caught:
        slurm.accounting()

    assert not {"-j", "-S", "-E", "-A"} & set(caught.value.argv)


def test_find_by_name_does_not_take_a_squeue_that_could_not_run_for_an_empty_queue(bin_dir: Path) -> None:
    with runner.command_log() as commands, pytest.raises(slurm.SlurmUnavailable):
        slurm.find_by_name("lq-0f8e")

    assert [command.tool for command in commands] == ["squeue"], "no sacct fallback on an unknown answer"


def test_cancelling_without_scancel_is_unavailable_not_already_finished(bin_dir: Path) -> None:
    with pytest.raises(slurm.SlurmUnavailable):
        slurm.cancel("8", run_as="student1")


def test_a_cancel_refusal_that_does_not_say_the_job_ended_is_raised(bin_dir: Path) -> None:
    with pytest.raises(KeyError):
        pwd.getpwnam("nosuchstudent")  # the run-as helper refuses someone the system does not know

    with pytest.raises(slurm.SlurmRejected) as caught:
        slurm.cancel("8", run_as="nosuchstudent")

    assert "nosuchstudent does not exist" in caught.value.message


def test_reading_associations_without_sacctmgr_is_unavailable_with_one_command_for_all_accounts(bin_dir: Path) -> None:
    with runner.command_log() as commands, pytest.raises(slurm.SlurmUnavailable) as caught:
        accounts.assoc_list(cluster="lab", accounts=["cs101", "cs102"])

    assert caught.value.argv == [
        str(bin_dir / "sacctmgr"),
        "-n",
        "-P",
        "show",
        "assoc",
        "cluster=lab",
        "account=cs101,cs102",
        f"format={accounts.ASSOC_FORMAT}",
    ]
    assert len(commands) == 1


def test_a_sacctmgr_change_that_could_not_run_is_unavailable_not_already_done(bin_dir: Path) -> None:
    argv = accounts.user_add_argv(cluster="lab", account="cs101", users=["student1"])

    with pytest.raises(slurm.SlurmUnavailable):
        accounts.sacctmgr_apply(argv)


def test_listing_reservations_without_scontrol_is_unavailable(bin_dir: Path) -> None:
    with pytest.raises(slurm.SlurmUnavailable) as caught:
        reservations.reservation_list()

    assert caught.value.argv == [str(bin_dir / "scontrol"), "-o", "show", "reservation"]


def test_a_reservation_that_could_not_be_created_is_not_looked_up_as_already_there(bin_dir: Path) -> None:
    end = datetime(2026, 12, 1, 11, 0, tzinfo=UTC)
    argv = reservations.create_argv(name="lq-cs101-7", account="cs101", start=None, end=end, nodes=["gpu1"])

    with runner.command_log() as commands, pytest.raises(slurm.SlurmUnavailable) as caught:
        reservations.reservation_create(argv)

    assert caught.value.argv == [str(bin_dir / "scontrol"), *argv[1:]]
    assert len(commands) == 1, "only a refusal sends it to look for an existing reservation"


def test_a_reservation_that_could_not_be_deleted_is_unavailable_not_gone(bin_dir: Path) -> None:
    with pytest.raises(slurm.SlurmUnavailable) as caught:
        reservations.reservation_delete("lq-cs101-7")

    assert caught.value.argv == [str(bin_dir / "scontrol"), "delete", "reservationname=lq-cs101-7"]


def test_a_job_whose_reservation_could_not_be_cleared_is_unavailable_so_the_task_retries(bin_dir: Path) -> None:
    with pytest.raises(slurm.SlurmUnavailable) as caught:
        reservations.job_reservation_clear("142")

    assert caught.value.argv == [str(bin_dir / "scontrol"), "update", "jobid=142", "reservation="]
