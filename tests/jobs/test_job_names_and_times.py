"""Jobs are named by assignment and attempt wherever they appear; times read one way, with their zone, in a
<time> element; finished jobs show how long they ran."""

import re
from datetime import UTC, datetime

import pytest
from django.urls import reverse

from jobs.models import Status
from tests.conftest import job_row

pytestmark = pytest.mark.django_db

SUBMITTED = datetime(2026, 3, 2, 14, 5, 9, tzinfo=UTC)


@pytest.fixture
def retried(student, assignment):
    """A failed first attempt and its completed second attempt, which ran 12 min 34 s."""
    first = job_row(student, assignment, status=Status.FAILED, explanation_key="timeout", elapsed_seconds=61)
    second = job_row(student, assignment, status=Status.COMPLETED, attempt=2, retry_of=first, elapsed_seconds=754)
    type(second).objects.filter(pk__in=[first.pk, second.pk]).update(created_at=SUBMITTED)
    return first, second


def title_of(html: str) -> str:
    return re.search(r"<title>(.*?)</title>", html, re.S).group(1).strip()


def test_the_job_page_is_titled_by_status_assignment_and_attempt_with_its_times_and_elapsed(client, student, retried):
    client.force_login(student)

    page = client.get(reverse("jobs:job-detail", args=[retried[1].uuid])).content.decode()

    assert title_of(page) == "Completed · Hello GPU · attempt 2 · LabQueue"
    assert "<h1>Hello GPU · attempt 2</h1>" in page
    assert 'Submitted <time datetime="2026-03-02T14:05:09+00:00">2026-03-02 14:05 UTC</time>' in page
    assert 'ran for <time datetime="PT754S">12 min 34 s</time>' in page


@pytest.mark.parametrize("persona, url", [("student", "/jobs/"), ("ta", "/jobs/course/cs101/")])
def test_job_lists_name_each_attempt_with_its_time_and_elapsed(client, request, persona, url, retried):
    client.force_login(request.getfixturevalue(persona))

    page = client.get(url).content.decode()

    for job in retried:
        assert f'<a href="/jobs/{job.uuid}/">Hello GPU · attempt {job.attempt}</a>' in page
    assert page.count('<time datetime="2026-03-02T14:05:09+00:00">2026-03-02 14:05 UTC</time>') == 2
    assert '<time datetime="PT754S">12 min 34 s</time>' in page
    assert '<time datetime="PT61S">1 min 1 s</time>' in page


def test_the_failed_jobs_list_names_the_attempt(client, ta, retried):
    client.force_login(ta)

    page = client.get(reverse("jobs:course-failures", args=["cs101"])).content.decode()

    assert f'<a href="/jobs/{retried[0].uuid}/">Hello GPU · attempt 1</a>' in page
    assert "attempt 2" not in page


def test_times_show_in_the_portals_time_zone(client, student, retried, settings):
    settings.TIME_ZONE = "America/New_York"
    client.force_login(student)

    page = client.get("/jobs/").content.decode()

    assert '<time datetime="2026-03-02T09:05:09-05:00">2026-03-02 09:05 EST</time>' in page


def test_log_and_retry_pages_name_the_job(client, student, retried):
    client.force_login(student)

    log = client.get(reverse("jobs:job-log", args=[retried[0].uuid, "out"])).content.decode()
    retry = client.get(reverse("jobs:job-retry", args=[retried[0].uuid])).content.decode()

    assert title_of(log).endswith("· Hello GPU · attempt 1 · LabQueue")
    assert title_of(retry) == "Retry Hello GPU · attempt 1 · LabQueue"
