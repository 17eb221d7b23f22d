"""A retry's history says what the new attempt is and who asked for it, as the student reads it on its page."""

from django.urls import reverse
from django.utils import timezone

from jobs.models import Job, Status
from tests.conftest import submit_form
from tests.http_helpers import table_rows


def test_a_tas_retry_is_in_the_new_attempts_history_as_a_retry_asked_for_on_the_students_behalf(
    client, student, ta, assignment
):
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    job = Job.objects.get()
    Job.objects.filter(pk=job.pk).update(status=Status.FAILED, slurm_job_id="4242", ended_at=timezone.now())
    client.force_login(ta)
    client.post(reverse("jobs:job-retry", args=[job.uuid]), {"same": "1"})
    new = Job.objects.get(retry_of=job)

    client.force_login(student)
    page = client.get(reverse("jobs:job-detail", args=[new.uuid])).content.decode()

    assert [(cause, who) for _at, cause, who in table_rows(page, "history")] == [
        (f"Retry of attempt 1. Requested by {ta} on the student's behalf.", str(ta))
    ]
