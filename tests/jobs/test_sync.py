"""The periodic sync costs the same number of Slurm commands for 2 jobs and for 52 (one squeue, one sacct for
the jobs that left the queue, one sacct for what finished jobs used), and a cycle in which nothing changed the
same number of SQL statements."""

import time
import uuid
from collections import Counter

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from jobs import dispatch
from jobs.models import Job, Status
from slurm import runner
from tests.behaviour_helpers import sacct_state
from tests.conftest import job_row

pytestmark = pytest.mark.slurm


def student_job(*options: str, wrap: str = "true") -> str:
    """The id of a real Slurm job of student1 (sbatch with `options`)."""
    argv = ["sbatch", "--parsable", "--export=NONE", "--account=cs101", f"--job-name=lq-sync-{uuid.uuid4()}"]
    return runner.run([*argv, *options, "--output=/dev/null", f"--wrap={wrap}"], run_as="student1").strip()


def held_slurm_job() -> str:
    """The id of a real Slurm job of student1 that stays PENDING (held)."""
    return student_job("--hold")


def held_job(student, assignment) -> Job:
    """A real Slurm job that stays PENDING (held), recorded as a portal job."""
    return job_row(student, assignment, status=Status.PENDING, slurm_job_id=held_slurm_job())


def sync_commands() -> Counter:
    with runner.command_log() as commands:
        dispatch.jobs_sync()
    return Counter(command.tool for command in commands)


def cancelled_job(student, assignment) -> Job:
    """A portal job whose Slurm job has just ended, so the sync must ask sacct about it (once slurmdbd has its
    end: on a busy cluster the record can lag the cancel by a few seconds)."""
    job = held_job(student, assignment)
    runner.run(["scancel", job.slurm_job_id])
    deadline = time.monotonic() + 60
    while not sacct_state(job.slurm_job_id).startswith("CANCELLED"):
        assert time.monotonic() < deadline, f"slurmdbd never recorded the cancel of {job.slurm_job_id}"
        time.sleep(0.5)
    return job


def test_one_sync_cycle_uses_one_squeue_and_two_saccts_for_2_and_for_52_jobs(student, assignment):
    created = []
    try:
        created = [held_job(student, assignment), cancelled_job(student, assignment)]
        with_two = sync_commands()

        created += [held_job(student, assignment) for _ in range(49)] + [cancelled_job(student, assignment)]
        assert Job.objects.filter(status=Status.PENDING).count() == 51
        with_fifty_two = sync_commands()

        # The second sacct reads what the jobs that just finished used (jobs.dispatch._collect_usage).
        assert with_two == with_fifty_two == Counter({"squeue": 1, "sacct": 2})
        assert Job.objects.filter(status=Status.CANCELLED).count() == 2
        assert Job.objects.filter(status=Status.CANCELLED, usage_collected_at=None).count() == 0
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


def test_a_cycle_in_which_the_jobs_did_not_change_costs_the_same_few_statements_for_1_and_for_50_jobs(
    student, assignment
):
    created = []
    try:
        created = [held_job(student, assignment)]
        dispatch.jobs_sync()  # the first cycle records what squeue says (state, reason, position)
        with_one = sync_statements()

        created += [held_job(student, assignment) for _ in range(49)]
        dispatch.jobs_sync()
        with_fifty = sync_statements()

        # One read of the active jobs, one of the active checks (jobs.checks) and one UPDATE marking the jobs
        # checked; jobs whose place in the queue or expected start moved meanwhile (the cluster's other jobs
        # started) add one bulk UPDATE, however many moved; one read of the finished jobs whose usage is not
        # collected yet (none here) ends the cycle.
        for statements in (with_one, with_fifty):
            assert 4 <= len(statements) <= 5, statements
            assert all(sql.startswith("SELECT") for sql in statements[:2])
            assert all(sql.startswith("UPDATE") for sql in statements[2:-1])
            assert statements[-1].startswith("SELECT")
        assert Job.objects.filter(checked_at=None).count() == 0
    finally:
        runner.run(["scancel", *[job.slurm_job_id for job in created]])


def test_a_job_that_leaves_the_queue_marks_only_itself_as_left_and_a_waiting_one_still_says_waiting(
    client, student, assignment
):
    waiting, ended = held_job(student, assignment), cancelled_job(student, assignment)
    before = timezone.now()
    try:
        dispatch.jobs_sync()  # one cycle: the held job in squeue, the cancelled one only in sacct
    finally:
        runner.run(["scancel", waiting.slurm_job_id])

    ended.refresh_from_db()
    waiting.refresh_from_db()
    assert ended.status == Status.CANCELLED and ended.left_queue_at is not None
    assert waiting.status == Status.PENDING and waiting.left_queue_at is None
    client.force_login(student)
    page = client.get(reverse("jobs:job-detail", args=[waiting.uuid])).content.decode()
    assert "waiting for the cluster&#x27;s accounting" not in page and "status-pending" in page
    # The ended job was last checked when sacct answered about it.
    assert ended.checked_at >= before
    page = client.get(reverse("jobs:job-detail", args=[ended.uuid])).content.decode()
    assert f"<dt>Last checked</dt><dd>{timezone.localtime(ended.checked_at):%Y-%m-%d %H:%M:%S}</dd>" in page


def test_a_running_job_records_when_it_started_and_a_waiting_one_only_when_it_is_expected_to(
    client, student, assignment
):
    running_id, waiting_id = student_job(wrap="sleep 120"), student_job("--begin=now+1hour", wrap="sleep 120")
    running = job_row(student, assignment, status=Status.PENDING, slurm_job_id=running_id)
    waiting = job_row(student, assignment, status=Status.PENDING, slurm_job_id=waiting_id)

    def squeue(job: Job, field: str) -> str:  # %S: when it started, or is expected to; local time, to the second
        return runner.run(["squeue", "-h", "-j", job.slurm_job_id, "-o", field]).strip()

    try:
        deadline = time.monotonic() + 60
        while squeue(running, "%T") != "RUNNING":
            assert time.monotonic() < deadline, f"job {running.slurm_job_id} never started"
            time.sleep(0.5)
        started, expected = squeue(running, "%S"), squeue(waiting, "%S")

        dispatch.jobs_sync()
    finally:
        runner.run(["scancel", running.slurm_job_id, waiting.slurm_job_id])

    running.refresh_from_db()
    waiting.refresh_from_db()
    assert running.status == Status.RUNNING and waiting.status == Status.PENDING
    assert timezone.localtime(running.started_at).strftime("%Y-%m-%dT%H:%M:%S") == started
    assert timezone.localtime(waiting.expected_start_at).strftime("%Y-%m-%dT%H:%M:%S") == expected
    assert waiting.started_at is None and running.expected_start_at is None
    client.force_login(student)
    page = client.get(reverse("jobs:job-detail", args=[running.uuid])).content.decode()
    assert f"<dt>Started</dt><dd>{timezone.localtime(running.started_at):%Y-%m-%d %H:%M:%S}</dd>" in page
    page = client.get(reverse("jobs:job-detail", args=[waiting.uuid])).content.decode()
    assert '<dt>Started</dt><dd class="muted">' in page


def test_a_job_accounting_still_has_as_waiting_after_it_left_the_queue_stays_and_the_others_are_followed(
    student, assignment, monkeypatch
):
    # slurmdbd learns of a job after slurmctld: for a moment sacct has a job as waiting that squeue does not list.
    # Here the job is submitted just after the cycle's squeue, under the next id, which the portal row names.
    ended = cancelled_job(student, assignment)
    probe = held_slurm_job()
    runner.run(["scancel", probe])
    lagging = job_row(student, assignment, status=Status.PENDING, slurm_job_id=str(int(probe) + 1))
    submitted = []

    def submit_after_the_squeue(command: runner.Command) -> None:
        if command.tool == "squeue" and not submitted:
            submitted.append(held_slurm_job())
            deadline = time.monotonic() + 30
            while sacct_state(submitted[0]) != "PENDING":
                assert time.monotonic() < deadline, f"slurmdbd never recorded job {submitted[0]}"
                time.sleep(0.2)

    monkeypatch.setattr(runner, "observers", [*runner.observers, submit_after_the_squeue])
    try:
        dispatch.jobs_sync()
    finally:
        runner.run(["scancel", *submitted])

    assert submitted == [lagging.slurm_job_id], "another job took the id the portal row names"
    lagging.refresh_from_db()
    ended.refresh_from_db()
    assert lagging.status == Status.PENDING and lagging.left_queue_at is not None
    assert ended.status == Status.CANCELLED


def test_a_job_neither_squeue_nor_sacct_knows_waits_for_its_accounting_and_the_others_are_followed(student, assignment):
    # Its record has not reached slurmdbd (or was lost): the cycle goes on with the other jobs.
    unknown = job_row(student, assignment, status=Status.PENDING, slurm_job_id="99999999")
    ended = cancelled_job(student, assignment)

    dispatch.jobs_sync()

    unknown.refresh_from_db()
    ended.refresh_from_db()
    assert ended.status == Status.CANCELLED
    assert unknown.status == Status.PENDING and unknown.left_queue_at is not None
