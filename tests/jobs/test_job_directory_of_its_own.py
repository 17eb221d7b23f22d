"""Each job runs in a folder of its own under the student's folder, named after the job, and its page shows it."""

from django.urls import reverse

from jobs.models import Job
from tests.conftest import submit_form


def test_two_jobs_of_one_student_each_have_their_own_folder_named_after_the_job(client, student, assignment, settings):
    client.force_login(student)
    for _ in range(2):
        client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())

    first, second = Job.objects.order_by("pk")
    for job in (first, second):
        assert job.workdir == f"{settings.LABQUEUE_JOB_ROOT}/student1/{job.uuid}"
        page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
        assert f"<code>{job.workdir}</code>" in page
