"""A refused permission or a missing page is the portal working as designed: one log line, no traceback. A
fault on the server's side still logs its traceback at ERROR. Read from the portal's configured console
handler (settings.LOGGING), as an operator reads it."""

from django.test import Client
from django.urls import reverse

from tests.portal.test_logs import log_lines  # noqa: F401 (a fixture)


def _request_lines(lines: list[dict]) -> list[dict]:
    return [line for line in lines if line["logger"] == "django.request"]


def test_a_refused_permission_logs_one_warning_line_without_a_traceback(client, student, log_lines):  # noqa: F811
    client.force_login(student)

    response = client.get(reverse("jobs:course-failures", args=["cs101"]))

    assert response.status_code == 403
    [line] = _request_lines(log_lines())
    assert line["level"] == "WARNING"
    assert line["message"] == "Forbidden (Permission denied): /jobs/course/cs101/failed/"
    assert "exc_info" not in line and "Traceback" not in line["message"]


def test_a_missing_page_logs_one_warning_line_without_a_traceback(client, db, log_lines):  # noqa: F811
    client.get("/no-such-page/")

    [line] = _request_lines(log_lines())
    assert line["level"] == "WARNING" and line["message"].startswith("Not Found: ")
    assert "exc_info" not in line


def test_a_fault_on_the_servers_side_still_logs_its_traceback_at_error(db, settings, log_lines):  # noqa: F811
    settings.ROOT_URLCONF = "tests.portal.failing_urls"

    Client(raise_request_exception=False).get("/broken/")

    [line] = _request_lines(log_lines())
    assert line["level"] == "ERROR" and line["message"] == "Internal Server Error: /broken/"
    assert line["exc_info"].startswith("Traceback (most recent call last):")
    assert "RuntimeError: a fault on the server's side" in line["exc_info"]
