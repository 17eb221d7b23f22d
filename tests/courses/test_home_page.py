"""The home page after login: active jobs (refreshing while any waits or runs), each course with its next lab
and the student's GPU-hour budget as a meter, recent failures by their explanation's title; a site notice on
every page; operations staff get links to their pages."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from courses.models import LabSession
from jobs.models import Status
from tests.conftest import job_row, make_user

pytestmark = pytest.mark.django_db

HOME = "/"


def text_of(response) -> str:
    assert response.status_code == 200
    return response.content.decode()


def test_a_student_sees_active_jobs_budget_next_lab_and_recent_failures(client, student, course, assignment):
    course.gpu_hours_per_student = 10
    course.save(update_fields=["gpu_hours_per_student"])
    running = job_row(student, assignment, status=Status.RUNNING, slurm_job_id="90")
    failed = job_row(student, assignment, status=Status.FAILED, explanation_key="cuda-out-of-memory", attempt=2)
    job_row(student, assignment, status=Status.COMPLETED, gpus=1, elapsed_seconds=5400, attempt=3)
    starts = timezone.now().replace(microsecond=0) + timedelta(days=2)
    lab = LabSession.objects.create(course=course, starts_at=starts, ends_at=starts + timedelta(hours=2))
    client.force_login(student)

    page = text_of(client.get(HOME))

    assert "<title>Home · LabQueue</title>" in page
    assert f'<a href="/jobs/{running.uuid}/">Hello GPU · attempt 1</a>' in page
    assert '<span class="status status-running">Running</span>' in page
    assert f'hx-get="{reverse("jobs:active-jobs")}" hx-trigger="every 5s"' in page
    assert f'<time datetime="{timezone.localtime(lab.starts_at).isoformat()}">' in page
    assert '<meter id="meter-cs101" min="0" max="10" high="10" value="1.50"' in page
    assert "1.5 of 10 GPU-hours used, 8.5 remaining" in page
    assert f'<a href="/jobs/{failed.uuid}/">Hello GPU · attempt 2</a>' in page
    assert "The GPU ran out of memory." in page


def test_the_active_jobs_box_stops_refreshing_when_nothing_waits_or_runs(client, student, assignment):
    job = job_row(student, assignment, status=Status.PENDING)
    client.force_login(student)
    url = reverse("jobs:active-jobs")

    live = text_of(client.get(url))
    job.status = Status.COMPLETED
    job.save(update_fields=["status"])
    done = text_of(client.get(url))

    assert 'aria-live="polite"' in live and 'hx-trigger="every 5s"' in live and "Waiting in the cluster queue" in live
    assert "hx-get" not in done and "Nothing is waiting or running." in done


def test_the_active_jobs_box_shows_only_ones_own_jobs_and_answers_only_get(client, student, classmate, assignment):
    job_row(classmate, assignment, status=Status.RUNNING)
    url = reverse("jobs:active-jobs")
    assert client.get(url).status_code == 302  # anonymous: to the login page
    client.force_login(student)
    assert "Nothing is waiting or running." in text_of(client.get(url))
    assert client.post(url).status_code == 405


def test_a_ta_gets_no_budget_meter(client, ta, course):
    course.gpu_hours_per_student = 10
    course.save(update_fields=["gpu_hours_per_student"])
    client.force_login(ta)

    assert "<meter" not in text_of(client.get(HOME))


def test_the_site_notice_shows_on_every_page(client, student, settings):
    settings.LABQUEUE_SITE_NOTICE = "The cluster is down for maintenance on Saturday 08:00-12:00 UTC."
    client.force_login(student)
    notice = "<strong>Notice:</strong> The cluster is down for maintenance on Saturday 08:00-12:00 UTC.</p>"

    for url in (HOME, "/jobs/", "/courses/cs101/"):
        assert notice in text_of(client.get(url))
    assert notice in client.get("/no-such-page/").content.decode()


def test_no_notice_is_shown_when_none_is_set(client, student, settings):
    settings.LABQUEUE_SITE_NOTICE = ""
    client.force_login(student)

    assert 'id="site-notice"' not in text_of(client.get(HOME))


def test_operations_staff_get_links_to_their_pages(client, student):
    staff = make_user("operator", is_staff=True)
    client.force_login(staff)

    page = text_of(client.get(HOME))

    for name in ("reports:usage-overview", "clusterpolicy:associations", "admin:index"):
        assert page.count(f'href="{reverse(name)}"') == 2, name  # in the header and on the page
    assert "You are not enrolled in any course yet." not in page
    client.force_login(student)
    assert 'href="/admin/"' not in text_of(client.get(HOME))
