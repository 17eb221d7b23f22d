"""What a job's status change and the job's cheap properties promise, without the cluster: a status change on
PostgreSQL is one statement (the UPDATE and its history row together), a completed job of a version with a check
gets its check, and the job page says what a finished check, a federated job and an open session are."""

from django.urls import reverse
from django.utils import timezone

from courses.models import AssignmentVersion
from jobs.lifecycle import job_transition
from jobs.models import CheckRun, CheckStatus, InteractiveSession, JobEvent, Status
from tests.conftest import job_row

FEDERATED_ID = str((2 << 26) | 4242)  # job 4242 of the cluster with id 2, as the federation numbers it


def test_a_status_change_is_one_statement_that_writes_the_job_and_its_history(
    student, assignment, django_assert_num_queries
):
    job = job_row(student, assignment, status=Status.PENDING, slurm_job_id="4242")

    with django_assert_num_queries(1):
        assert job_transition(job=job, to=Status.RUNNING, cause="Started.", started_at=timezone.now())

    job.refresh_from_db()
    assert job.status == Status.RUNNING and job.started_at is not None
    event = JobEvent.objects.get(job=job)
    assert (event.from_status, event.to_status, event.cause) == (Status.PENDING, Status.RUNNING, "Started.")


def test_a_job_that_completes_gets_its_versions_check_once_the_change_commits(
    student, assignment, django_capture_on_commit_callbacks
):
    version = AssignmentVersion.objects.create(
        assignment=assignment, number=1, script_template="true", check_script='echo "SCORE 1/1"'
    )
    job = job_row(student, assignment, status=Status.RUNNING, slurm_job_id="4242", assignment_version=version)

    with django_capture_on_commit_callbacks(execute=True):
        assert job_transition(job=job, to=Status.COMPLETED, cause="Completed.", exit_code=0)

    run = CheckRun.objects.get(job=job)
    assert run.status == CheckStatus.QUEUED


def job_page(client, user, job) -> str:
    client.force_login(user)
    response = client.get(reverse("jobs:job-detail", args=[job.uuid]))
    assert response.status_code == 200
    return response.content.decode()


def test_the_job_page_says_a_check_that_ended_without_results_gave_none(client, student, assignment):
    job = job_row(student, assignment, status=Status.COMPLETED, slurm_job_id="4242")
    CheckRun.objects.create(job=job, status=CheckStatus.FAILED, token="ab" * 16, message="")

    page = job_page(client, student, job)

    assert "The check did not finish, so it gives no results." in page
    assert 'id="check-waiting"' not in page


def test_the_job_page_says_a_check_still_waiting_is_waiting(client, student, assignment):
    job = job_row(student, assignment, status=Status.COMPLETED, slurm_job_id="4242")
    CheckRun.objects.create(job=job, status=CheckStatus.PENDING, token="cd" * 16)

    page = job_page(client, student, job)

    assert "The assignment's check is waiting in the cluster queue." in page
    assert "gives no results" not in page


def test_the_job_page_of_a_federated_job_names_where_it_ran_and_what_its_number_means(
    client, student, assignment, settings
):
    settings.LABQUEUE_SLURM_CLUSTER = "lab"
    settings.LABQUEUE_SLURM_OTHER_CLUSTERS = ["lab2"]
    settings.LABQUEUE_SLURM_FEDERATION = "labfed"
    job = job_row(
        student, assignment, status=Status.COMPLETED, cluster="labfed", ran_on="lab2", slurm_job_id=FEDERATED_ID
    )

    page = job_page(client, student, job)

    assert 'id="federated-cluster"' in page
    assert "Started on <code>lab2</code> (offered to every cluster of the federation <code>labfed</code>" in page
    assert (
        f". Slurm job {FEDERATED_ID} is the federation's number for job 4242 of the cluster it was sent from "
        "(cluster id 2)" in page
    )


def test_a_session_is_open_only_once_its_server_answered_and_while_its_job_runs(student, assignment):
    job = job_row(student, assignment, status=Status.RUNNING, slurm_job_id="4242")
    session = InteractiveSession.objects.create(job=job)
    assert not session.is_open, "the server has not answered yet"

    session.ready_at = timezone.now()
    assert session.is_open

    job.status = Status.COMPLETED
    assert not session.is_open, "the job ended"
