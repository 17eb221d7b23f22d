"""What the portal refuses when a job is requested, retried, cancelled or reviewed, and what pressing a
button a second time does, all through the pages.

No job reaches Slurm: these tests run inside one transaction that never commits, so the submit and
scancel tasks (enqueued on commit) are never sent; `django_capture_on_commit_callbacks` shows what would be.
"""

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse
from django.utils import timezone

from courses.models import Role
from jobs.models import Job, JobEvent, Status
from jobs.services import job_transition
from tests.conftest import make_user, submit_form


def submit(client, user, **overrides):
    client.force_login(user)
    return client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form(**overrides))


def submitted(client, user, **overrides) -> Job:
    assert submit(client, user, **overrides).status_code == 302
    return Job.objects.filter(user=user).latest("pk")


def finish(job: Job, status: str) -> Job:
    now = timezone.now()
    Job.objects.filter(pk=job.pk).update(status=status, slurm_job_id="4242", submitted_at=now, ended_at=now)
    job.refresh_from_db()
    return job


def said(response) -> str:
    """The message this response added (the submission's own message may still be waiting)."""
    return [str(message) for message in get_messages(response.wsgi_request)][-1]


def retry_same(client, job: Job):
    return client.post(reverse("jobs:job-retry", args=[job.uuid]), {"same": "1"})


def test_a_student_without_a_cluster_username_cannot_submit_and_is_told_why(client, course, assignment):
    nameless = make_user("newcomer")
    course.enrollments.create(user=nameless, role=Role.STUDENT)

    response = submit(client, nameless)

    assert response.status_code == 400
    assert "not linked to a cluster username yet" in response.content.decode()
    assert not Job.objects.exists()


def test_an_assignments_attempt_cap_refuses_one_more_submission_naming_the_cap(client, student, assignment):
    assignment.max_attempts = 1
    assignment.save()
    submitted(client, student)

    response = submit(client, student)

    assert response.status_code == 400
    assert "This assignment allows 1 attempts per student and 1 have been used." in response.content.decode()
    assert Job.objects.count() == 1


def test_a_retry_with_the_same_resources_after_the_course_lowered_its_cap_is_refused_naming_the_limit(
    client, student, course, assignment
):
    job = finish(submitted(client, student, minutes="20"), Status.FAILED)
    course.max_minutes_per_job = 10
    course.save()

    response = retry_same(client, job)

    assert response.status_code == 302 and response.url == reverse("jobs:job-detail", args=[job.uuid])
    assert said(response) == "This course allows at most 10 minutes per job; you asked for 20."
    assert not Job.objects.filter(retry_of=job).exists()


def test_a_retry_of_a_job_whose_data_set_was_withdrawn_from_the_assignment_is_refused(
    client, student, assignment, dataset
):
    assignment.datasets.add(dataset)
    job = finish(submitted(client, student, dataset=str(dataset.pk)), Status.FAILED)
    assert job.dataset == dataset
    assignment.datasets.remove(dataset)

    response = retry_same(client, job)

    assert said(response) == "That data set is not approved for this assignment."
    assert not Job.objects.filter(retry_of=job).exists()


def test_cancelling_a_finished_job_is_refused_and_changes_nothing(client, student, assignment):
    job = finish(submitted(client, student), Status.COMPLETED)

    response = client.post(reverse("jobs:job-cancel", args=[job.uuid]))

    assert said(response) == "This job has already finished."
    job.refresh_from_db()
    assert job.status == Status.COMPLETED and not job.cancel_requested
    assert not JobEvent.objects.filter(job=job, cause="Cancel requested.").exists()


def test_cancelling_a_waiting_job_twice_asks_slurm_once(
    client, student, assignment, django_capture_on_commit_callbacks
):
    job = finish(submitted(client, student), Status.PENDING)
    url = reverse("jobs:job-cancel", args=[job.uuid])

    with django_capture_on_commit_callbacks() as first:
        client.post(url)
    with django_capture_on_commit_callbacks() as second:
        client.post(url)

    assert len(first) == 1, "the scancel task, once the request commits"
    assert second == [], "a second press sends no second scancel"
    assert JobEvent.objects.filter(job=job, cause="Cancel requested.").count() == 1
    job.refresh_from_db()
    assert job.cancel_requested and job.status == Status.PENDING


def test_cancelling_a_job_being_sent_to_slurm_is_left_to_the_worker_that_is_sending_it(
    client, student, assignment, django_capture_on_commit_callbacks
):
    job = submitted(client, student)
    Job.objects.filter(pk=job.pk).update(status=Status.SUBMITTING)

    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(reverse("jobs:job-cancel", args=[job.uuid]))

    assert said(response) == "Cancel requested. The job stops within a few seconds."
    assert callbacks == [], "no scancel before Slurm has an id: the worker cancels right after sbatch"
    job.refresh_from_db()
    assert job.cancel_requested and job.status == Status.SUBMITTING
    assert JobEvent.objects.filter(job=job, cause="Cancel requested.").count() == 1


def test_marking_a_job_reviewed_twice_keeps_the_first_reviewer_and_one_event(
    client, student, ta, instructor, assignment
):
    job = finish(submitted(client, student), Status.FAILED)
    url = reverse("jobs:job-review", args=[job.uuid])

    client.force_login(ta)
    client.post(url)
    client.force_login(instructor)
    response = client.post(url)

    assert response.status_code == 302
    job.refresh_from_db()
    assert job.reviewed_by == ta
    assert JobEvent.objects.filter(job=job, cause="Marked as reviewed.").count() == 1


def test_a_status_change_the_transition_table_does_not_list_changes_nothing(client, student, assignment):
    job = finish(submitted(client, student), Status.COMPLETED)

    assert job_transition(job=job, to=Status.RUNNING, cause="A late squeue answer.") is False

    job.refresh_from_db()
    assert job.status == Status.COMPLETED
    assert not JobEvent.objects.filter(job=job, to_status=Status.RUNNING).exists()


@pytest.mark.parametrize("text", ["", "   \n"])
def test_an_empty_note_is_refused_and_adds_nothing(client, student, ta, assignment, text):
    job = finish(submitted(client, student), Status.FAILED)
    client.force_login(ta)

    response = client.post(reverse("jobs:job-note-create", args=[job.uuid]), {"text": text})

    assert said(response) == "The note is empty or too long (4000 characters at most)."
    assert not job.notes.exists()
