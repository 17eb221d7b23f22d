"""The course usage report through the API: the page's rows for its staff, held to their role now."""

from datetime import timedelta

from django.utils import timezone

from tests.api.conftest import call, problem


def test_course_staff_get_the_reports_rows_and_a_student_does_not(client, ta, student, course, token_for):
    today = timezone.localdate()

    report = call(client, "get", "/api/v1/courses/cs101/usage", token_for(ta))
    refused = call(client, "get", "/api/v1/courses/cs101/usage", token_for(student))

    assert report.status_code == 200, report.content
    assert (report.json()["course"], report.json()["last"]) == ("cs101", today.isoformat())
    assert report.json()["total"]["jobs"] == 0
    assert problem(refused)["status"] == 403


def test_a_range_the_page_would_refuse_is_refused_with_its_message(client, ta, course, token_for):
    today = timezone.localdate()
    url = f"/api/v1/courses/cs101/usage?first={today}&last={today - timedelta(days=1)}"

    response = call(client, "get", url, token_for(ta))

    assert response.status_code == 422
    assert problem(response)["detail"] == "The range ends before it starts."


def test_a_token_without_read_reports_gets_403(client, ta, course, token_for):
    response = call(client, "get", "/api/v1/courses/cs101/usage", token_for(ta, scopes=["read:gradebook"]))

    assert "read:reports" in problem(response)["detail"]
