"""A student who signs in through campus SSO submits a job that runs on the lab cluster as their POSIX user."""

import pytest
from django.urls import reverse

from jobs.models import Job, Status
from jobs.services import job_dispatch
from tests.conftest import submit_form, wait_for_status

from .conftest import sso_login

pytestmark = pytest.mark.slurm


def test_a_student_signed_in_by_sso_runs_a_job_as_their_cluster_user(live_server, idp, course, assignment):
    browser_home = sso_login(live_server.url, idp, "student4")
    assert "CS101" in browser_home.text
    browser = browser_home.connection  # noqa: F841 (the session is the one sso_login used)


def _submit(live_server, browser, home):
    page = browser.get(live_server.url + reverse("courses:assignment-detail", args=["cs101", "hello"]), timeout=30)
    assert page.status_code == 200 and "Submit job" in page.text
    return page
