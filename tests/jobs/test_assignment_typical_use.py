"""The assignment editor shows, beside the default resources, what the latest completed attempts typically used
(the median of what the sync collected), so an instructor can right-size the defaults."""

from django.urls import reverse
from django.utils import timezone

from jobs.models import Status
from tests.conftest import job_row


def completed(user, assignment, *, elapsed: int, cpu: float, rss: int | None):
    return job_row(
        user,
        assignment,
        status=Status.COMPLETED,
        slurm_job_id="6000",
        ended_at=timezone.now(),
        elapsed_seconds=elapsed,
        cpu_seconds_used=cpu,
        max_rss_mb=rss,
        usage_collected_at=timezone.now(),
    )


def test_the_editor_shows_the_median_use_of_the_latest_completed_attempts(
    client, instructor, student, classmate, assignment
):
    completed(student, assignment, elapsed=60, cpu=30, rss=100)
    completed(classmate, assignment, elapsed=180, cpu=170, rss=300)
    completed(student, assignment, elapsed=120, cpu=120, rss=None)
    job_row(student, assignment, status=Status.FAILED, elapsed_seconds=3000, usage_collected_at=timezone.now())
    client.force_login(instructor)

    page = client.get(reverse("courses:assignment-edit", args=["cs101", "hello"])).content.decode()

    assert (
        "Typical use of the last 3 completed attempts (median): ran 2.0 minutes of the 5 asked for, kept 0.9 of "
        "1 CPU busy, peak memory 200 MB of 500 MB." in page
    )


def test_nothing_is_said_before_any_attempt_completed(client, instructor, assignment):
    client.force_login(instructor)

    page = client.get(reverse("courses:assignment-edit", args=["cs101", "hello"])).content.decode()

    assert 'id="typical-use"' not in page
