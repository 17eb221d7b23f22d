"""Crafted filter values in the query string of the job lists: a NUL character (which PostgreSQL text
cannot hold) gets an ordinary answer, never a server error."""

import pytest
from django.urls import reverse

from tests.conftest import job_row


@pytest.mark.parametrize(
    ("page", "params"),
    [
        ("course-failures", {"student": "\x00"}),
        ("course-failures", {"assignment": "hello\x00"}),
        ("course-failures", {"explanation": "\x00nonzero-exit"}),
        ("job-list", {"course": "cs101\x00"}),
    ],
)
def test_a_nul_character_in_a_job_list_filter_answers_the_list_not_a_server_error(
    client, student, ta, assignment, page, params
):
    job_row(student, assignment, status="failed")
    client.force_login(ta if page == "course-failures" else student)
    url = reverse(f"jobs:{page}", args=["cs101"] if page == "course-failures" else [])

    response = client.get(url, params)

    assert response.status_code == 200
