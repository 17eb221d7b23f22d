"""Retrying failed jobs: same parameters, changed resources within limits, caps, idempotence, TAs."""

import pytest
from django.urls import reverse
from django.utils.html import escape

from courses.scripting import script_body
from jobs.models import Job, JobEvent, Status
from tests.conftest import dispatch, submit_form, wait_for_status


@pytest.fixture
def failed_job(client, student, assignment) -> Job:
    """A job that ended in TIMEOUT (recorded as the sync would record it)."""
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form(param_NAME="keep-me"))
    job = Job.objects.get()
    Job.objects.filter(pk=job.pk).update(status=Status.FAILED, slurm_state="TIMEOUT", explanation_key="timeout")
    job.refresh_from_db()
    return job


def retry(client, job, **data):
    return client.post(reverse("jobs:job-retry", args=[job.uuid]), data)


@pytest.mark.slurm
def test_retry_runs_a_new_attempt_with_the_same_parameters(client, student, failed_job):
    response = retry(client, failed_job, same="1")
    new = Job.objects.get(retry_of=failed_job)
    assert response["Location"] == reverse("jobs:job-detail", args=[new.uuid])
    assert new.attempt == 2
    assert new.parameters == failed_job.parameters
    assert new.resources == failed_job.resources
    assert new.run_as == "student1" and new.created_by is None
    new = wait_for_status(dispatch(new), Status.COMPLETED)
    assert new.slurm_job_id != failed_job.slurm_job_id
    page = client.get(reverse("jobs:job-detail", args=[new.uuid])).content.decode()
    assert "Attempt 2" in page
    assert reverse("jobs:job-detail", args=[failed_job.uuid]) in page


def test_the_retry_form_suggests_more_time_and_accepts_it(client, failed_job):
    form = client.get(reverse("jobs:job-retry", args=[failed_job.uuid])).content.decode()
    assert 'name="minutes" value="10"' in form, "twice the 5 minutes asked, within the 30-minute cap"
    retry(client, failed_job, gpus="1", cpus="1", mem_mb="500", minutes="20")
    assert Job.objects.get(retry_of=failed_job).minutes == 20


def test_a_retry_over_the_course_limit_is_refused_with_the_limit(client, failed_job):
    response = retry(client, failed_job, gpus="1", cpus="1", mem_mb="500", minutes="90")
    assert response.status_code == 400
    assert "This course allows at most 30 minutes per job; you asked for 90." in response.content.decode()
    assert not Job.objects.filter(retry_of=failed_job).exists()


def test_pressing_retry_twice_makes_one_attempt(client, failed_job):
    first = retry(client, failed_job, same="1")
    second = retry(client, failed_job, same="1")
    assert Job.objects.filter(retry_of=failed_job).count() == 1
    assert first["Location"] == second["Location"]


def test_the_attempt_cap_is_shown_and_enforced(client, failed_job, assignment):
    assignment.max_attempts = 2
    assignment.save()
    page = client.get(reverse("jobs:job-detail", args=[failed_job.uuid])).content.decode()
    assert "This assignment allows 2 attempts." in page
    retry(client, failed_job, same="1")
    second = Job.objects.get(retry_of=failed_job)
    Job.objects.filter(pk=second.pk).update(status=Status.FAILED)
    response = client.post(reverse("jobs:job-retry", args=[second.uuid]), {"same": "1"}, follow=True)
    assert "allows 2 attempts per student and 2 have been used" in response.content.decode()
    assert Job.objects.count() == 2


def test_a_completed_or_running_job_cannot_be_retried(client, failed_job):
    Job.objects.filter(pk=failed_job.pk).update(status=Status.RUNNING)
    response = client.post(reverse("jobs:job-retry", args=[failed_job.uuid]), {"same": "1"}, follow=True)
    assert "Only a failed, cancelled or refused job can be retried." in response.content.decode()
    assert Job.objects.count() == 1


def test_a_ta_retries_for_the_student_and_the_job_still_runs_as_the_student(client, failed_job, ta, student):
    client.force_login(ta)
    retry(client, failed_job, same="1")
    new = Job.objects.get(retry_of=failed_job)
    assert new.user == student and new.run_as == "student1"
    assert new.created_by == ta
    event = JobEvent.objects.get(job=new, to_status=Status.QUEUED)
    assert event.actor == ta and "on the student's behalf" in event.cause


def test_retry_access(client, failed_job, classmate, other_ta):
    client.force_login(classmate)
    assert retry(client, failed_job, same="1").status_code == 404
    client.force_login(other_ta)
    assert retry(client, failed_job, same="1").status_code == 404
    client.logout()
    assert retry(client, failed_job, same="1").status_code == 302
    assert not Job.objects.filter(retry_of=failed_job).exists()


def test_the_help_page_documents_the_retry_path(client, student):
    client.force_login(student)
    page = client.get(reverse("jobs:retry-help")).content.decode()
    assert "What a retry keeps" in page and "Limits" in page


def test_a_retry_of_an_attempt_from_before_script_versions_runs_the_body_it_recorded(client, failed_job):
    """Jobs sent before assignment versions existed carry no version: the retry runs the template body
    recorded in the attempt's own script, not the assignment's template as edited since."""
    old_body = "echo the body this attempt ran\n"
    script = failed_job.script.replace(script_body(failed_job.script), old_body)
    Job.objects.filter(pk=failed_job.pk).update(assignment_version=None, script=script)

    retry(client, failed_job, same="1")

    new = Job.objects.get(retry_of=failed_job)
    assert new.assignment_version is None
    assert script_body(new.script) == old_body


def test_a_retry_of_an_attempt_whose_script_is_not_on_record_is_refused_with_the_way_forward(client, failed_job):
    Job.objects.filter(pk=failed_job.pk).update(assignment_version=None, script="#!/bin/bash\necho no marker\n")

    page = retry(client, failed_job, same="1")

    assert not Job.objects.filter(retry_of=failed_job).exists()
    shown = client.get(page["Location"]).content.decode()
    assert (
        escape(
            "This attempt's script is not on record, so it cannot be run again as it was. "
            "Submit the assignment again instead (it runs the current script)."
        )
        in shown
    )
