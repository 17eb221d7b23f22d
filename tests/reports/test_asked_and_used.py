"""The course report's "Asked for and used": per assignment, GPU-hours asked for (GPUs x time limit) against
used (GPUs x the time the job ran), the completed jobs that asked for far more than they used, and its CSV;
course staff only."""

import csv
import io
from datetime import timedelta

from django.urls import reverse
from django.utils import timezone

from courses.models import Assignment
from jobs.models import Status
from tests.conftest import job_row


def finished(user, assignment, **fields):
    values = {
        "status": Status.COMPLETED,
        "slurm_job_id": "5000",
        "ended_at": timezone.now() - timedelta(hours=1),
        "gpus": 1,
        "minutes": 30,
        "mem_mb": 4000,
        "usage_collected_at": timezone.now(),
    }
    return job_row(user, assignment, **{**values, **fields})


def make_jobs(student, classmate, assignment):
    other = Assignment.objects.create(course=assignment.course, slug="other", title="Other lab", gpus=0)
    # Hello GPU: asked 2 x 30 min = 1 GPU-hour; used 1 x 27 min + 1 x 3 min (the second far too much asked).
    finished(student, assignment, elapsed_seconds=1620, max_rss_mb=3500)
    over = finished(classmate, assignment, elapsed_seconds=180, max_rss_mb=3500)
    # Other lab: no GPU; a failed job is counted but never called over-asked; memory alone can make a job so.
    finished(student, other, gpus=0, status=Status.FAILED, elapsed_seconds=10, max_rss_mb=50)
    memory_over = finished(classmate, other, gpus=0, elapsed_seconds=1700, max_rss_mb=100)
    # Not counted: still running, or finished before the range.
    job_row(student, assignment, status=Status.RUNNING, gpus=1, slurm_job_id="5001")
    finished(student, assignment, elapsed_seconds=60, ended_at=timezone.now() - timedelta(days=400))
    return over, memory_over


def since_yesterday() -> str:
    """The range from yesterday to today: the jobs ended an hour ago, which is yesterday just after midnight
    (the page's default range starts the day the course was made, today)."""
    today = timezone.localdate()
    return f"?first={today - timedelta(days=1)}&last={today}"


def test_the_report_shows_gpu_hours_asked_and_used_per_assignment_and_who_asked_far_more(
    client, ta, student, classmate, assignment
):
    over, memory_over = make_jobs(student, classmate, assignment)
    client.force_login(ta)

    page = client.get(reverse("reports:course-report", args=["cs101"]) + since_yesterday()).content.decode()

    assert "<td>Hello GPU</td><td>2</td><td>1.000</td><td>0.500</td><td>50</td><td>1</td>" in page
    assert "<td>Other lab</td><td>2</td><td>0.000</td><td>0.000</td><td></td><td>1</td>" in page
    listed = page.split('id="over-asked-jobs"')[1].split("</ul>")[0]
    assert str(over.uuid) in listed and str(memory_over.uuid) in listed and listed.count("<li>") == 2


def test_the_csv_has_the_same_rows_and_every_job_that_asked_far_more(
    client, instructor, student, classmate, assignment
):
    over, memory_over = make_jobs(student, classmate, assignment)
    client.force_login(instructor)

    response = client.get(reverse("reports:course-asked-used-csv", args=["cs101"]) + since_yesterday())

    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0][:4] == ["Assignment", "Jobs", "GPU-hours asked for", "GPU-hours used"]
    assert rows[1] == ["Hello GPU", "2", "1.000", "0.500", "50", "1"]
    assert rows[2] == ["Other lab", "2", "0.000", "0.000", "", "1"]
    assert rows[4][0] == "Job" and {row[0] for row in rows[5:]} == {str(over.uuid), str(memory_over.uuid)}


def test_students_get_403_and_outsiders_404(client, student, outsider, assignment):
    url = reverse("reports:course-asked-used-csv", args=["cs101"])
    client.force_login(student)
    assert client.get(url).status_code == 403
    client.force_login(outsider)
    assert client.get(url).status_code == 404
    client.logout()
    assert client.get(url).status_code == 302
    client.force_login(student)
    assert client.post(url).status_code == 405
