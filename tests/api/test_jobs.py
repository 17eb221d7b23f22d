"""Jobs through the API go through the pages' forms and services: submitted with the form's checks and
messages (and sent by the worker after the commit, never by the request), someone else's job is a 404,
cancelled and retried as on the job page, listed newest first a page at a time."""

import pytest
from django.urls import reverse

from courses.models import Role
from jobs.models import Job, Status
from tests.api.conftest import call, problem
from tests.conftest import job_row, make_user, submit_form

SUBMIT = "/api/v1/courses/cs101/assignments/hello/jobs"
BODY = {
    "parameters": {"EPOCHS": 2, "RATE": 0.5, "SIZE": "small", "NAME": "run"},
    "gpus": 1,
    "cpus": 1,
    "mem_mb": 500,
    "minutes": 5,
}


def test_a_submission_makes_the_forms_job_and_enqueues_it_only_after_commit(
    client, student, assignment, token_for, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        response = call(client, "post", SUBMIT, token_for(student), BODY)

    assert response.status_code == 201, response.content
    job = Job.objects.get(uuid=response.json()["uuid"])
    assert (job.user, job.status, job.account, job.partition) == (student, Status.QUEUED, "cs101", "gpu")
    assert job.parameters == {"EPOCHS": 2, "RATE": 0.5, "SIZE": "small", "NAME": "run"}
    assert len(callbacks) == 1  # the dispatch task, sent once the transaction commits


def test_a_submission_the_form_refuses_gets_the_forms_messages(client, student, assignment, token_for):
    client.force_login(student)
    page = client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form(gpus="9", param_EPOCHS="99"))
    client.logout()

    response = call(client, "post", SUBMIT, token_for(student), {**BODY, "gpus": 9, "parameters": {"EPOCHS": 99}})

    document = problem(response)
    assert response.status_code == 422
    for message in document["errors"]["gpus"] + document["errors"]["parameters.EPOCHS"]:
        assert message in page.content.decode()
    assert not Job.objects.exists()


def test_a_submission_over_the_courses_cap_is_refused_with_the_forms_message(
    client, student, course, assignment, token_for
):
    course.max_queued_jobs_per_student = 1
    course.save()
    job_row(student, assignment, status=Status.RUNNING)
    client.force_login(student)
    page = client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    client.logout()

    response = call(client, "post", SUBMIT, token_for(student), BODY)

    message = "This course allows at most 1 job waiting or running per student; you have 1."
    assert page.status_code == 400 and message in page.content.decode()
    assert response.status_code == 422
    assert message in problem(response)["detail"]
    assert Job.objects.count() == 1


def test_the_same_submission_key_sent_twice_gives_one_job(client, student, assignment, token_for):
    text, body = token_for(student), {**BODY, "submission_key": "ab" * 16}

    first = call(client, "post", SUBMIT, text, body).json()
    second = call(client, "post", SUBMIT, text, body).json()

    assert first["uuid"] == second["uuid"]
    assert Job.objects.count() == 1


def test_another_students_job_is_404_as_if_it_did_not_exist(client, student, classmate, assignment, token_for):
    theirs = job_row(classmate, assignment)
    text = token_for(student)

    for method, url in [
        ("get", f"/api/v1/jobs/{theirs.uuid}"),
        ("get", f"/api/v1/jobs/{theirs.uuid}/files"),
        ("get", f"/api/v1/jobs/{theirs.uuid}/zip"),
        ("post", f"/api/v1/jobs/{theirs.uuid}/cancel"),
        ("post", f"/api/v1/jobs/{theirs.uuid}/retry"),
    ]:
        response = call(client, method, url, text)
        assert response.status_code == 404, url
        assert problem(response)["detail"] == "No such job."
    assert problem(call(client, "get", "/api/v1/jobs/00000000-0000-0000-0000-000000000000", text))["status"] == 404


def test_a_ta_sees_a_students_job_and_the_courses_jobs_but_a_student_cannot_list_the_course(
    client, student, ta, assignment, token_for
):
    job = job_row(student, assignment)

    seen = call(client, "get", f"/api/v1/jobs/{job.uuid}", token_for(ta))
    listed = call(client, "get", "/api/v1/jobs?course=cs101", token_for(ta))
    refused = call(client, "get", "/api/v1/jobs?course=cs101", token_for(student))

    assert seen.status_code == 200 and seen.json()["student"] == "student1"
    assert [item["uuid"] for item in listed.json()["items"]] == [str(job.uuid)]
    assert problem(refused)["status"] == 403


def test_a_dropped_tas_token_is_refused_at_once(client, student, ta, course, assignment, token_for):
    text = token_for(ta)
    job = job_row(student, assignment)
    gradebook = "/api/v1/courses/cs101/assignments/hello/gradebook"
    assert call(client, "get", gradebook, text).status_code == 200
    assert call(client, "get", "/api/v1/jobs?course=cs101", text).status_code == 200

    course.enrollments.filter(user=ta).delete()

    assert problem(call(client, "get", gradebook, text))["status"] == 403
    assert problem(call(client, "get", "/api/v1/jobs?course=cs101", text))["status"] == 403
    assert problem(call(client, "get", f"/api/v1/jobs/{job.uuid}", text))["status"] == 404


def test_a_ta_made_a_student_loses_the_gradebook_at_once(client, ta, course, assignment, token_for):
    text = token_for(ta)
    course.enrollments.filter(user=ta).update(role=Role.STUDENT)

    response = call(client, "get", "/api/v1/courses/cs101/assignments/hello/gradebook", text)

    assert response.status_code == 403
    assert "TAs and instructors" in problem(response)["detail"]


def test_cancel_and_retry_go_through_the_job_services(client, student, assignment, token_for):
    text = token_for(student)
    job = Job.objects.get(uuid=call(client, "post", SUBMIT, text, BODY).json()["uuid"])

    cancelled = call(client, "post", f"/api/v1/jobs/{job.uuid}/cancel", text)
    again = call(client, "post", f"/api/v1/jobs/{job.uuid}/cancel", text)
    retried = call(client, "post", f"/api/v1/jobs/{job.uuid}/retry", text, {"minutes": 10})

    assert cancelled.json()["status"] == Status.CANCELLED
    assert problem(again)["detail"] == "This job has already finished."
    assert retried.status_code == 201
    assert (retried.json()["attempt"], retried.json()["minutes"]) == (2, 10)


def test_a_retry_over_the_courses_limits_is_refused_with_the_retry_forms_message(
    client, student, assignment, token_for
):
    job = job_row(student, assignment, status=Status.FAILED)

    response = call(client, "post", f"/api/v1/jobs/{job.uuid}/retry", token_for(student), {"gpus": 9})

    assert response.status_code == 422
    assert problem(response)["errors"]["gpus"]


def test_a_token_without_jobs_cancel_cannot_cancel(client, student, assignment, token_for):
    job = job_row(student, assignment)

    response = call(client, "post", f"/api/v1/jobs/{job.uuid}/cancel", token_for(student, scopes=["read:jobs"]))

    assert response.status_code == 403
    assert Job.objects.get().status == Status.QUEUED


def test_lists_come_a_page_at_a_time_newest_first_without_repeats(client, student, assignment, token_for):
    made = [job_row(student, assignment) for _ in range(5)]
    text, seen, url = token_for(student), [], "/api/v1/jobs?limit=2"
    while url:
        body = call(client, "get", url, text).json()
        seen += [item["uuid"] for item in body["items"]]
        url = f"/api/v1/jobs?limit=2&cursor={body['next_cursor']}" if body["next_cursor"] else ""

    assert seen == [str(job.uuid) for job in reversed(made)]
    assert problem(call(client, "get", "/api/v1/jobs?cursor=nonsense", text))["status"] == 400


def test_my_courses_and_their_assignments(client, student, outsider, assignment, token_for):
    text = token_for(student)

    courses = call(client, "get", "/api/v1/courses", text).json()["items"]
    assignments = call(client, "get", "/api/v1/courses/cs101/assignments", text).json()["items"]
    elsewhere = call(client, "get", "/api/v1/courses/cs102/assignments", text)

    assert [(c["slug"], c["role"]) for c in courses] == [("cs101", "student")]
    assert [(a["slug"], a["gpus"]) for a in assignments] == [("hello", 1)]
    assert problem(elsewhere)["status"] == 404


@pytest.mark.parametrize("with_csrf", [True, False])
def test_the_browser_session_works_with_csrf_for_unsafe_methods(with_csrf, student, assignment):
    from django.test import Client

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(student)
    browser.get(reverse("jobs:job-list"))
    headers = {"X-CSRFToken": browser.cookies["csrftoken"].value} if with_csrf else {}

    listed = browser.get("/api/v1/jobs")
    response = browser.post(SUBMIT, data=BODY, content_type="application/json", headers=headers)

    assert listed.status_code == 200
    assert response.status_code == (201 if with_csrf else 403)


def test_someone_never_enrolled_gets_404_for_the_course(client, assignment, token_for):
    stranger = make_user("stranger", "student4")

    assert problem(call(client, "post", SUBMIT, token_for(stranger), BODY))["status"] == 404


def test_parameters_and_resources_left_out_take_the_assignments_defaults(client, student, assignment, token_for):
    response = call(client, "post", SUBMIT, token_for(student), {"parameters": {"EPOCHS": 3}, "minutes": 10})

    assert response.status_code == 201, response.content
    job = Job.objects.get()
    assert job.parameters == {"EPOCHS": 3, "RATE": 0.5, "SIZE": "small", "NAME": "run"}
    assert (job.gpus, job.cpus, job.mem_mb, job.minutes) == (1, 1, 500, 10)
