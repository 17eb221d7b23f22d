"""Checks on the lab cluster: an assignment's check runs as a Slurm job of its own after a completed job, as
the student, and the job page shows its checks and score; nothing the student's job wrote counts as the
check's output."""

import os
import pwd
import time
from collections import Counter
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

import slurm
from jobs.checks import checks_requeue_stale
from jobs.models import CheckRun, CheckStatus, Job, Status
from slurm import runner
from tests.behaviour_helpers import tasks_run_in_process
from tests.conftest import dispatch, job_row, jobs_sync, submitted, wait_for_status

pytestmark = pytest.mark.slurm

GRADING_CHECK = """\
echo "checked by $(whoami)"
if grep -q "^done run$" results/out.txt; then
  echo "CHECK pass output: results/out.txt says done run"
  echo "SCORE 10/10"
else
  echo "CHECK fail output: results/out.txt should say done run; did your script write it?"
  echo "SCORE 3/10"
fi
echo "CHECK pass ran-as: ran as $(whoami)"
"""

FORGING_JOB = """\
echo "CHECK pass forged: printed by the job itself"
echo "SCORE 10/10"
random="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \\n')"
for name in check-0.out check-00000000000000000000000000000000.out "check-$random.out"; do
  printf 'CHECK pass planted: a file the job left\\nSCORE 10/10\\n' > "$name"
done
"""


def completed_with_check(client, student, assignment, django_capture_on_commit_callbacks) -> Job:
    """Submit, send and run the student's job; its completion enqueues the check, whose task runs here (as the
    worker's would), sending it to Slurm."""
    job = dispatch(submitted(client, student))
    with tasks_run_in_process(), django_capture_on_commit_callbacks(execute=True):
        return wait_for_status(job, Status.COMPLETED, Status.FAILED)


def wait_for_check(job: Job, timeout: float = 90) -> CheckRun:
    """Run the sync (as Celery beat would) until the job's check has finished. Each cycle follows the check in
    the sync's own calls: one squeue, and one sacct once something left the queue."""
    deadline = time.monotonic() + timeout
    while True:
        with runner.command_log() as commands:
            jobs_sync()
        assert Counter(command.tool for command in commands) <= Counter({"squeue": 1, "sacct": 1})
        run = CheckRun.objects.get(job=job)
        if run.is_finished:
            return run
        if time.monotonic() > deadline:
            raise AssertionError(f"the check stayed {run.status} ({run.slurm_state})")
        time.sleep(0.5)


def test_a_passing_check_shows_its_checks_and_score_on_the_job_page(
    client, student, assignment, django_capture_on_commit_callbacks
):
    assignment.check_script = GRADING_CHECK
    assignment.save()
    job = completed_with_check(client, student, assignment, django_capture_on_commit_callbacks)
    assert job.status == Status.COMPLETED

    run = wait_for_check(job)
    assert run.status == CheckStatus.DONE, run.message
    assert run.slurm_job_id and run.slurm_job_id != job.slurm_job_id
    assert (run.score, run.max_score) == (Decimal(10), Decimal(10))
    assert run.results == [
        {"passed": True, "name": "output", "message": "results/out.txt says done run"},
        {"passed": True, "name": "ran-as", "message": "ran as student1"},
    ]
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "Passed: output" in page and "Score: 10 / 10" in page
    assert "Failed:" not in page


def test_a_failing_check_shows_the_failure_with_its_hint_and_the_lower_score(
    client, student, assignment, django_capture_on_commit_callbacks
):
    assignment.check_script = GRADING_CHECK.replace("^done run$", "^done perfectly$")
    assignment.save()
    job = completed_with_check(client, student, assignment, django_capture_on_commit_callbacks)

    run = wait_for_check(job)
    assert run.status == CheckStatus.DONE
    assert (run.score, run.max_score) == (Decimal(3), Decimal(10))
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "Failed: output" in page
    assert "<strong>Hint:</strong> results/out.txt should say done run; did your script write it?" in page
    assert "Score: 3 / 10" in page


def test_the_check_runs_as_the_student_in_the_jobs_folder_with_one_cpu_and_no_gpu(
    client, student, assignment, django_capture_on_commit_callbacks
):
    assignment.check_script = (
        'echo "CHECK pass whoami: $(whoami) in $(pwd) gpus=[${CUDA_VISIBLE_DEVICES:-}]"\n'
        'echo "CHECK pass slurm: $SLURM_JOB_NAME $SLURM_JOB_ACCOUNT $SLURM_JOB_PARTITION cpus=$SLURM_CPUS_PER_TASK"'
    )
    assignment.save()
    job = completed_with_check(client, student, assignment, django_capture_on_commit_callbacks)

    run = wait_for_check(job)
    assert [check["message"] for check in run.results] == [
        f"student1 in {job.workdir} gpus=[]",
        f"lq-check-{job.uuid} {job.account} {job.partition} cpus=1",
    ]
    output = Path(job.workdir) / run.output_name
    assert pwd.getpwuid(os.stat(output).st_uid).pw_name == "student1"


def test_lines_and_files_the_job_forged_give_no_score(client, student, assignment, django_capture_on_commit_callbacks):
    assignment.script_template = FORGING_JOB
    assignment.check_script = 'echo "CHECK fail real: only the check speaks"\necho "SCORE 2/10"'
    assignment.save()
    job = completed_with_check(client, student, assignment, django_capture_on_commit_callbacks)
    assert "SCORE 10/10" in (Path(job.workdir) / job.stdout_name).read_text()

    run = wait_for_check(job)
    assert len(list(Path(job.workdir).glob("check-*.out"))) == 4  # three planted files and the check's own
    assert [check["name"] for check in run.results] == ["real"]
    assert (run.score, run.max_score) == (Decimal(2), Decimal(10))
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "Score: 2 / 10" in page and "forged" not in page.split('id="checks"')[1].split("</div>")[0]


def test_a_job_that_forges_a_score_without_a_check_gets_none(
    client, student, assignment, django_capture_on_commit_callbacks
):
    assignment.script_template = FORGING_JOB
    assignment.save()
    job = completed_with_check(client, student, assignment, django_capture_on_commit_callbacks)
    assert job.status == Status.COMPLETED

    jobs_sync()
    assert not CheckRun.objects.exists()
    assert slurm.find_by_name(f"lq-check-{job.uuid}") is None
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert 'id="checks"' not in page and "Score:" not in page


def test_a_check_whose_sender_died_after_sbatch_is_adopted_by_name(student, assignment):
    job = job_row(student, assignment, status=Status.COMPLETED, slurm_job_id="1")
    argv = ["sbatch", "--parsable", "--hold", "--export=NONE", "--account=cs101", f"--job-name=lq-check-{job.uuid}"]
    slurm_id = runner.run(argv + ["--output=/dev/null", "--wrap=true"], run_as="student1").strip()
    try:
        run = CheckRun.objects.create(job=job, status=CheckStatus.SUBMITTING, token="cd" * 16)
        CheckRun.objects.filter(pk=run.pk).update(updated_at=timezone.now() - timedelta(hours=1))
        checks_requeue_stale()
        run.refresh_from_db()
        assert (run.status, run.slurm_job_id, run.token) == (CheckStatus.PENDING, slurm_id, "cd" * 16)
    finally:
        runner.run(["scancel", slurm_id])


def test_a_check_whose_sender_died_before_sbatch_is_sent_again(student, assignment):
    job = job_row(student, assignment, status=Status.COMPLETED, slurm_job_id="1")
    run = CheckRun.objects.create(job=job, status=CheckStatus.SUBMITTING, token="ef" * 16)
    CheckRun.objects.filter(pk=run.pk).update(updated_at=timezone.now() - timedelta(hours=1))
    checks_requeue_stale()
    run.refresh_from_db()
    assert (run.status, run.enqueue_failed) == (CheckStatus.QUEUED, False)  # queued, and its task sent again
