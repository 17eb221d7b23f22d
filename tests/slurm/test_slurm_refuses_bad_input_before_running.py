"""What goes into the adapter is checked before any command runs: job specs, job ids, names, times.

A value that could pass for an option or split a comma-separated list never reaches a Slurm tool;
``runner.command_log`` proves that nothing was run at all.
"""

from __future__ import annotations

from datetime import datetime

import pytest

import slurm
from slurm import accounts, reservations, runner
from slurm.records import JobSpec, check_job_id

SPEC = dict(
    script_path="/var/lib/labqueue/jobs/student1/abc/job.sh",
    run_as="student1",
    account="cs101",
    job_name="lq-0f8e",
    workdir="/var/lib/labqueue/jobs/student1/abc",
    stdout="/var/lib/labqueue/jobs/student1/abc/job.out",
    stderr="/var/lib/labqueue/jobs/student1/abc/job.err",
)


def test_a_well_formed_job_spec_is_accepted() -> None:
    spec = JobSpec(**SPEC, partition="gpu")

    assert (spec.run_as, spec.account, spec.partition, spec.reservation) == ("student1", "cs101", "gpu", "")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"script_path": "job.sh"}, "script_path must be absolute"),
        ({"run_as": "-u root"}, "not a valid cluster username"),
        ({"run_as": "student 1"}, "not a valid cluster username"),
        ({"run_as": ""}, "not a valid cluster username"),
        ({"job_name": "lq-a,lq-b"}, "without commas"),
        ({"job_name": "lq-a\nlq-b"}, "one line"),
        ({"job_name": ""}, "non-empty"),
        ({"account": ""}, "account is required"),
    ],
)
def test_a_job_spec_that_could_mislead_sbatch_is_refused(change: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        JobSpec(**{**SPEC, **change})


@pytest.mark.parametrize("job_id", ["123", "123_4"])
def test_plain_and_array_job_ids_are_accepted(job_id: str) -> None:
    assert check_job_id(job_id) == job_id


@pytest.mark.parametrize("job_id", ["", "-1", "12,13", "123;rm", "123_", "1 2"])
def test_anything_else_is_not_a_job_id(job_id: str) -> None:
    with pytest.raises(ValueError, match="not a valid Slurm job id"):
        check_job_id(job_id)


def test_cancel_refuses_a_bad_job_id_without_running_scancel() -> None:
    with runner.command_log() as commands, pytest.raises(ValueError):
        slurm.cancel("8 --signal=KILL", run_as="student1")

    assert commands == []


@pytest.mark.parametrize(
    "options",
    [
        {"job_ids": ["8", "9,10"]},
        {"since": datetime(2026, 11, 29, 19, 0)},  # naive: which time zone?
        {"until": datetime(2026, 11, 29, 19, 0)},
        {"accounts": ["cs101,research"]},
        {"accounts": ["-Pn"]},
        {"accounts": [""]},
    ],
)
def test_accounting_refuses_ids_times_and_accounts_it_cannot_pass_safely(options: dict) -> None:
    with runner.command_log() as commands, pytest.raises(ValueError):
        slurm.accounting(**options)

    assert commands == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"since": datetime(2026, 11, 29, 19, 0)}, "^pass an aware datetime$"),
        ({"until": datetime(2026, 11, 29, 19, 0)}, "^pass an aware datetime$"),
        ({"accounts": ["cs101", "-Pn"]}, "^not a valid Slurm name: '-Pn'$"),
    ],
)
def test_accounting_says_which_time_or_account_it_refuses(options: dict, message: str) -> None:
    with runner.command_log() as commands, pytest.raises(ValueError, match=message):
        slurm.accounting(**options)

    assert commands == []


@pytest.mark.parametrize("name", ["", "lq-a,lq-b", "lq-a\nlq-b"])
def test_find_by_name_refuses_a_name_that_would_split_the_list(name: str) -> None:
    with runner.command_log() as commands, pytest.raises(ValueError):
        slurm.find_by_name(name)

    assert commands == []


def test_listing_the_associations_of_no_account_runs_nothing() -> None:
    with runner.command_log() as commands:
        assert accounts.assoc_list(cluster="lab", accounts=[]) == []

    assert commands == []


@pytest.mark.parametrize(("cluster", "account"), [("lab", "cs101,research"), ("lab", "-x"), ("-lab", "cs101")])
def test_listing_associations_refuses_names_that_could_be_options_or_lists(cluster: str, account: str) -> None:
    with runner.command_log() as commands, pytest.raises(ValueError, match="not a valid Slurm account or user name"):
        accounts.assoc_list(cluster=cluster, accounts=[account])

    assert commands == []


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["sacctmgr", "show", "assoc"],  # not -i: would wait for a yes on stdin
        ["scontrol", "-i", "delete", "reservationname=x"],
    ],
)
def test_only_non_interactive_sacctmgr_changes_are_applied(argv: list[str]) -> None:
    with runner.command_log() as commands, pytest.raises(ValueError, match="not a sacctmgr change"):
        accounts.sacctmgr_apply(argv)

    assert commands == []


def test_deleting_a_reservation_refuses_a_name_that_could_be_an_option() -> None:
    with runner.command_log() as commands, pytest.raises(ValueError):
        reservations.reservation_delete("-x")

    assert commands == []


def test_clearing_a_jobs_reservation_refuses_a_bad_job_id() -> None:
    with runner.command_log() as commands, pytest.raises(ValueError):
        reservations.job_reservation_clear("8 reservation=lq-other")

    assert commands == []


def test_a_job_spec_without_an_account_says_only_that_the_account_is_required() -> None:
    with pytest.raises(ValueError, match=r"^account is required$"):
        JobSpec(**{**SPEC, "account": ""})
