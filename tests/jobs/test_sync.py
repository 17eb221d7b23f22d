"""The periodic sync costs the same number of Slurm commands for 1 job and for 50, and a cycle in which
nothing changed the same number of SQL statements."""

import uuid
from collections import Counter

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs import dispatch
from jobs.models import Job, Status
from slurm import runner
from tests.conftest import job_row

pytestmark = pytest.mark.slurm


def held_job(student, assignment) -> Job:
    """A real Slurm job that stays PENDING (held), recorded as a portal job."""
    name = f"lq-sync-{uuid.uuid4()}"
    argv = ["sbatch", "--parsable", "--hold", "--export=NONE", "--account=cs101", f"--job-name={name}"]
    slurm_id = runner.run(argv + ["--output=/dev/null", "--wrap=true"], run_as="student1").strip()
    return job_row(
        student,
        assignment,
        status=Status.PENDING,
        slurm_job_id=slurm_id,
    )


def sync_commands() -> Counter:
    with runner.command_log() as commands:
        dispatch.jobs_sync()
    return Counter(command.tool for command in commands)


def cancelled_job(student, assignment) -> Job:
    """A portal job whose Slurm job has just ended, so the sync must ask sacct about it."""
    job = held_job(student, assignment)
    runner.run(["scancel", job.slurm_job_id])
    return job


def test_one_sync_cycle_uses_one_squeue_and_one_sacct_for_1_and_for_50_jobs(student, assignment):
    created = []
    try:
        created = [held_job(student, assignment), cancelled_job(student, assignment)]
        with_one = sync_commands()

        created += [held_job(student, assignment) for _ in range(49)] + [cancelled_job(student, assignment)]
        assert Job.objects.filter(status=Status.PENDING).count() == 51
        with_fifty = sync_commands()

        assert with_one == with_fifty == Counter({"squeue": 1, "sacct": 1})
        assert Job.objects.filter(status=Status.CANCELLED).count() == 2
        held = Job.objects.filter(status=Status.PENDING)
        assert held.count() == 50
        assert all("Held" in job.reason for job in held)
    finally:
        runner.run(["scancel", *[job.slurm_job_id for job in created]])


def test_with_no_active_jobs_the_sync_asks_slurm_nothing(db):
    assert sync_commands() == Counter()


def sync_statements() -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        dispatch.jobs_sync()
    return [query["sql"] for query in queries.captured_queries]


def test_a_cycle_in_which_nothing_changed_writes_the_same_statements_for_1_and_for_50_jobs(student, assignment):
    created = []
    try:
        created = [held_job(student, assignment)]
        dispatch.jobs_sync()  # the first cycle records what squeue says (state, reason, position)
        with_one = sync_statements()

        created += [held_job(student, assignment) for _ in range(49)]
        dispatch.jobs_sync()
        with_fifty = sync_statements()

        assert len(with_one) == len(with_fifty) == 2, with_fifty  # read the active jobs, mark them checked
        assert with_fifty[1].startswith('UPDATE "jobs_job" SET "checked_at"')
        assert Job.objects.filter(checked_at=None).count() == 0
    finally:
        runner.run(["scancel", *[job.slurm_job_id for job in created]])
