"""While a job waits, its page and My jobs say when Slurm expects it to start (squeue's %S, recorded by the
sync, in the portal's time zone) and what it waits for in plain words; the assignment page says before a
submission when the course's GPUs are all in use. From the database alone: no page runs a Slurm command."""

from datetime import timedelta
from zoneinfo import ZoneInfo

from django.urls import reverse
from django.utils import timezone

from jobs.models import Status
from slurm import runner
from tests.conftest import job_row


def pending(student, assignment, **fields):
    values = {"status": Status.PENDING, "slurm_job_id": "777", "slurm_state": "PENDING", "gpus": 1}
    return job_row(student, assignment, **{**values, **fields})


def test_a_waiting_job_shows_its_expected_start_in_the_portal_time_zone_and_why_it_waits(
    client, settings, student, assignment
):
    settings.TIME_ZONE = "Europe/Berlin"
    start = timezone.now().astimezone(ZoneInfo("Europe/Berlin")).replace(hour=23, minute=55) + timedelta(days=1)
    job = pending(student, assignment, reason="AssocGrpGRES", expected_start_at=start)
    client.force_login(student)

    with runner.command_log() as commands:
        detail = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
        my_jobs = client.get(reverse("jobs:job-list")).content.decode()

    expected = f"Expected to start by {start:%a} {start.day} {start:%b}, 23:55"
    assert expected in detail and expected in my_jobs
    assert "Waiting: all the course&#x27;s GPUs are in use" in my_jobs
    assert "classmates" in detail  # the explanation's summary, in the sentence at the top
    assert commands == []


def test_no_expected_start_is_shown_when_slurm_gives_none_or_it_has_gone_by(client, student, assignment):
    client.force_login(student)
    for expected_start_at in (None, timezone.now() - timedelta(minutes=5)):
        job = pending(student, assignment, reason="Priority", expected_start_at=expected_start_at)

        page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()

        assert "Expected to start" not in page
        job.delete()


def test_the_students_own_running_limit_is_said_in_plain_words(client, student, assignment):
    pending(student, assignment, reason="AssocMaxJobsLimit")
    client.force_login(student)

    assert "Waiting: you have reached your own limit" in client.get(reverse("jobs:job-list")).content.decode()


def test_the_assignment_page_says_when_the_course_gpus_are_all_in_use(client, student, classmate, assignment):
    course = assignment.course
    course.max_gpus_course = 1
    course.save()
    client.force_login(student)
    url = reverse("jobs:assignment-detail", args=[course.slug, assignment.slug])
    assert 'id="course-gpus-full"' not in client.get(url).content.decode()

    job_row(classmate, assignment, status=Status.RUNNING, slurm_job_id="778", gpus=1)
    with runner.command_log() as commands:
        page = client.get(url).content.decode()

    assert 'id="course-gpus-full"' in page and "All 1 GPU this course may use at once is in use" in page
    assert commands == []
    course.max_gpus_course = None
    course.save()
    assert 'id="course-gpus-full"' not in client.get(url).content.decode()
