"""POST /api/v1/jobs/{uuid}/resubmit: the edit-and-resubmit page as JSON. What the body leaves out is the earlier
attempt's; the attempt's files come along (all, or those named in `keep`); the page's checks and messages; owner
only. And a method an API address does not take is a 405 problem document, not Django's bare page."""

from jobs.models import Job, Status
from tests.api.conftest import call, problem
from tests.jobs import test_resubmit
from tests.jobs.test_resubmit import CONFIG, NOTES, staged

failed_job = test_resubmit.failed_job  # the fixture: a failed attempt with a data set and two uploaded files


def resubmit(job: Job) -> str:
    return f"/api/v1/jobs/{job.uuid}/resubmit"


def test_a_resubmission_keeps_what_the_body_leaves_out_and_carries_all_the_attempt_s_files(
    client, failed_job, student, token_for, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as enqueued:
        response = call(client, "post", resubmit(failed_job), token_for(student), {"parameters": {"NAME": "bs16"}})
    assert response.status_code == 201, response.content
    new = Job.objects.get(uuid=response.json()["uuid"])
    assert len(enqueued) == 1, "sent to the cluster by the worker, like any submission"
    assert new.parameters == {**failed_job.parameters, "NAME": "bs16"}
    assert new.dataset_id == failed_job.dataset_id and new.resources == failed_job.resources
    assert new.resubmit_of_id == failed_job.pk and new.attempt == 2 and new.status == Status.QUEUED
    assert staged(new) == {"config.txt": CONFIG, "notes.txt": NOTES}


def test_keep_names_the_files_sent_again(client, failed_job, student, token_for):
    response = call(client, "post", resubmit(failed_job), token_for(student), {"keep": ["notes.txt"], "minutes": 9})
    new = Job.objects.get(uuid=response.json()["uuid"])
    assert staged(new) == {"notes.txt": NOTES} and new.minutes == 9


def test_a_resubmission_is_refused_with_the_page_s_messages(client, failed_job, student, token_for):
    text = token_for(student)
    over = call(client, "post", resubmit(failed_job), text, {"minutes": 90})
    gone = call(client, "post", resubmit(failed_job), text, {"keep": ["secrets.txt"]})
    assert over.status_code == 422
    assert "This course allows at most 30 minutes per job; you asked for 90." in problem(over)["detail"]
    assert gone.status_code == 422 and "secrets.txt of that attempt is no longer kept" in problem(gone)["detail"]
    assert Job.objects.count() == 1


def test_only_the_job_s_owner_with_jobs_submit_resubmits(client, failed_job, student, classmate, ta, token_for):
    assert call(client, "post", resubmit(failed_job), token_for(classmate)).status_code == 404
    by_ta = call(client, "post", resubmit(failed_job), token_for(ta))
    assert by_ta.status_code == 403, "the course's TA sees the job, but does not resubmit as the student"
    refused = call(client, "post", resubmit(failed_job), token_for(student, scopes=["read:jobs"]))
    assert refused.status_code == 403
    client.logout()  # the fixture signed the student in
    assert call(client, "post", resubmit(failed_job)).status_code == 401
    assert Job.objects.count() == 1


def test_a_method_an_api_address_does_not_take_is_a_405_problem_document(client, failed_job, student, token_for):
    response = call(client, "get", resubmit(failed_job), token_for(student))
    assert response.status_code == 405
    assert problem(response)["detail"] == "This address does not take GET. It takes POST."
    assert response["Allow"] == "POST"
    page = client.delete(f"/jobs/{failed_job.uuid}/resubmit/")  # a page's 405 stays a page
    assert page.status_code == 405 and "problem" not in page.get("Content-Type", "")
