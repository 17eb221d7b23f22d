"""What a script with a token tries beyond what the pages allow: crafted input that would answer 500
(docs/security.md promises none), an error message that would tell an outsider which courses exist, two requests
at once against an attempt cap meant for one, and a page of jobs that would cost a query per row and field.
Database only: no test here sends a job to Slurm (the dispatch is never enqueued, or replaced by a no-op)."""

import base64
import json

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

import jobs.services
from courses.models import Role
from jobs.models import Job, Status
from jobs.selectors import student_standing
from tests.api.conftest import call, problem
from tests.concurrency import at_once, held_until_both_read
from tests.conftest import job_row, make_user

SUBMIT = "/api/v1/courses/cs101/assignments/hello/jobs"


def _cursor(text: str) -> str:
    """A cursor as api.pagination makes one: base64 of "<created_at isoformat>|<pk>"."""
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


# --- crafted input that answers 500 ---


@pytest.mark.parametrize("where", ["jobs", "courses", "courses/cs101/assignments"])
@pytest.mark.parametrize("moment", ["2024-01-01T00:00:00+16:00", "9999-12-31T23:59:59.999999-23:59"])
def test_a_cursor_whose_utc_offset_postgresql_cannot_hold_is_a_page_or_a_400_not_a_500(
    client, student, assignment, token_for, where, moment
):
    # datetime.fromisoformat takes offsets up to +-23:59; PostgreSQL refuses any past +-15:59 (DataError).
    response = call(client, "get", f"/api/v1/{where}?cursor={_cursor(moment + '|1')}", token_for(student))

    assert response.status_code in (200, 400)
    if response.status_code == 400:
        assert "cursor" in problem(response)["detail"]


def test_a_string_parameter_holding_a_lone_surrogate_is_refused_not_a_500(client, student, assignment, token_for):
    # JSON's "\ud800" escape is a str Python keeps but UTF-8 (and so PostgreSQL) cannot encode; a browser's form
    # cannot send one (Django decodes form data with errors="replace"), a script's JSON can.
    text = token_for(student)
    body = '{"parameters": {"NAME": "\\ud800"}}'
    earlier = job_row(student, assignment, status=Status.FAILED)

    submitted = client.post(SUBMIT, body, content_type="application/json", headers={"Authorization": f"Bearer {text}"})
    resubmitted = client.post(
        f"/api/v1/jobs/{earlier.uuid}/resubmit",
        body,
        content_type="application/json",
        headers={"Authorization": f"Bearer {text}"},
    )

    assert (submitted.status_code, resubmitted.status_code) == (422, 422)
    assert "NAME" in json.dumps(problem(submitted)) and "NAME" in json.dumps(problem(resubmitted))
    assert Job.objects.count() == 1


def test_a_body_over_the_size_limit_is_a_4xx_problem_not_a_500(client, student, assignment, token_for, settings):
    # Django's pages answer RequestDataTooBig (a SuspiciousOperation) with 400; api.problems sends it to its
    # catch-all Exception handler, 500.
    padding = "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)

    response = call(client, "post", SUBMIT, token_for(student), {"parameters": {}, "padding": padding})

    assert 400 <= response.status_code < 500
    assert problem(response)["status"] == response.status_code
    assert not Job.objects.exists()


def test_a_query_string_with_too_many_fields_is_a_400_problem_not_a_500(client, student, token_for, settings):
    fields = "&".join(f"f{n}=1" for n in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1))

    response = call(client, "get", f"/api/v1/jobs?{fields}", token_for(student))

    assert response.status_code == 400
    assert problem(response)["status"] == 400


# --- what an error message tells an outsider ---


def test_an_outsider_cannot_tell_an_existing_course_from_a_missing_one(client, outsider, course, token_for):
    # The pages show one 404 page for both; the API's 404 carries the exception's text, and get_object_or_404
    # (courses.selectors.course_get_for_user) says "No Course matches the given query." only for a missing course.
    text = token_for(outsider)

    for method, path in [("get", "/assignments"), ("post", "/assignments/hello/jobs")]:
        existing = call(client, method, f"/api/v1/courses/cs101{path}", text, None if method == "get" else {})
        missing = call(client, method, f"/api/v1/courses/no-such-course{path}", text, None if method == "get" else {})

        assert existing.status_code == missing.status_code == 404
        assert problem(existing)["detail"] == problem(missing)["detail"]


# --- limits two requests at once get past ---


@pytest.mark.django_db(transaction=True)
def test_two_submissions_at_once_cannot_pass_the_assignments_attempt_cap(student, assignment, token_for, monkeypatch):
    """Both requests count the student's attempts (0 of 1) before either saves its job: nothing serialises one
    student's submissions, so a script sending N requests at once can get up to N jobs past max_attempts (the
    same holds for max_queued_jobs_per_student and the GPU-hour budget). The barrier only makes the interleaving
    certain; a fix that locks before counting makes the second request wait instead (the barrier then times out)."""
    assignment.max_attempts = 1
    assignment.save()
    monkeypatch.setattr(jobs.services, "job_dispatch_enqueue", lambda job_id: None)  # nothing reaches Slurm
    monkeypatch.setattr(jobs.services, "student_standing", held_until_both_read(student_standing))
    text = token_for(student)

    answers = at_once(lambda: call(Client(), "post", SUBMIT, text, {}).status_code)

    assert sorted(answers) == [201, 422]
    assert Job.objects.filter(user=student, assignment=assignment).count() == 1


# --- cost of one request ---


def test_a_page_of_a_hundred_jobs_costs_a_few_queries_not_one_per_field_and_row(client, student, assignment, token_for):
    # jobs.selectors.job_list defers every column the pages' lists do not show (LIST_FIELDS); JobOut reads nine
    # more, each one query per row: about 900 queries for one request, 120 requests a minute per token.
    for _ in range(100):
        job_row(student, assignment)
    text = token_for(student)

    with CaptureQueriesContext(connection) as queries:
        response = call(client, "get", "/api/v1/jobs?limit=100", text)

    assert response.status_code == 200 and len(response.json()["items"]) == 100
    assert len(queries.captured_queries) <= 20


# --- regression (passes today): staff of another course reach nothing of this one ---


@pytest.mark.parametrize("role", [Role.TA, Role.INSTRUCTOR])
def test_another_courses_staff_reach_nothing_of_this_course(client, student, assignment, other_course, token_for, role):
    other = make_user("staff-elsewhere", "student4")
    other_course.enrollments.create(user=other, role=role)
    theirs = job_row(student, assignment, status=Status.FAILED)
    text = token_for(other)

    answers = {
        "course jobs": call(client, "get", "/api/v1/jobs?course=cs101", text).status_code,
        "assignments": call(client, "get", "/api/v1/courses/cs101/assignments", text).status_code,
        "gradebook": call(client, "get", "/api/v1/courses/cs101/assignments/hello/gradebook", text).status_code,
        "usage": call(client, "get", "/api/v1/courses/cs101/usage", text).status_code,
        "job": call(client, "get", f"/api/v1/jobs/{theirs.uuid}", text).status_code,
        "files": call(client, "get", f"/api/v1/jobs/{theirs.uuid}/files", text).status_code,
        "zip": call(client, "get", f"/api/v1/jobs/{theirs.uuid}/zip", text).status_code,
        "cancel": call(client, "post", f"/api/v1/jobs/{theirs.uuid}/cancel", text, {}).status_code,
        "retry": call(client, "post", f"/api/v1/jobs/{theirs.uuid}/retry", text, {}).status_code,
        "resubmit": call(client, "post", f"/api/v1/jobs/{theirs.uuid}/resubmit", text, {}).status_code,
        "submit": call(client, "post", SUBMIT, text, {}).status_code,
    }

    assert answers == {
        "course jobs": 403,
        "assignments": 404,
        "gradebook": 403,
        "usage": 403,
        "job": 404,
        "files": 404,
        "zip": 404,
        "cancel": 404,
        "retry": 404,
        "resubmit": 404,
        "submit": 404,
    }
    assert Job.objects.count() == 1
