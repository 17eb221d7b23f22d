"""A student who signs in through campus SSO submits a job that runs on the lab cluster as their POSIX user."""

import pytest
import requests
from django.urls import reverse

from jobs.dispatch import job_dispatch
from jobs.models import Job, Status
from tests.conftest import submit_form, wait_for_status

from .conftest import forms, sso_login

pytestmark = pytest.mark.slurm


def test_a_student_signed_in_by_sso_runs_a_job_as_their_cluster_user(live_server, idp, course, assignment):
    browser = requests.Session()
    home = sso_login(live_server.url, idp, "student4", browser)
    assert "CS101" in home.text

    url = reverse("jobs:assignment-detail", args=["cs101", "hello"])
    page = browser.get(live_server.url + url, timeout=30)
    assert page.status_code == 200 and "Submit job" in page.text
    form = next(f for f in forms(page) if f["action"].endswith(url))  # the page posts to itself
    data = {"csrfmiddlewaretoken": form["data"]["csrfmiddlewaretoken"], **submit_form(param_NAME="sso")}
    submitted = browser.post(form["action"], data=data, timeout=30)
    job = Job.objects.get()
    assert submitted.status_code == 200 and submitted.url.endswith(reverse("jobs:job-detail", args=[job.uuid]))
    assert job.user.netid == "student4" and job.run_as == "student4"

    job_dispatch(job_id=job.pk)  # what the Celery submit task does
    job = wait_for_status(job, Status.COMPLETED)
    live = browser.get(live_server.url + reverse("jobs:job-status", args=[job.uuid]), timeout=30).text
    assert "user=student4" in live
