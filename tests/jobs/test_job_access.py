"""Who may see and act on a job: the owner; course staff read-only; nobody else."""

import pytest
from django.urls import reverse

from jobs.models import Job
from tests.conftest import submit_form


@pytest.fixture
def job(client, student, assignment) -> Job:
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    client.logout()
    return Job.objects.get()


def job_urls(job: Job) -> list[str]:
    return [
        reverse("jobs:job-detail", args=[job.uuid]),
        reverse("jobs:job-status", args=[job.uuid]),
        reverse("jobs:job-file", args=[job.uuid, "job.sh"]),
        reverse("jobs:job-zip", args=[job.uuid]),
        reverse("jobs:job-file-view", args=[job.uuid, "job.sh"]),
        reverse("jobs:job-file-image", args=[job.uuid, "plot.png"]),
    ]


def test_anonymous_visitors_are_sent_to_the_login_page(client, job):
    for url in job_urls(job) + [reverse("jobs:job-list")]:
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("account_login"))
    assert client.post(reverse("jobs:job-cancel", args=[job.uuid]))["Location"].startswith(reverse("account_login"))


def test_a_classmate_cannot_see_anything_of_another_students_job(client, job, classmate):
    client.force_login(classmate)
    for url in job_urls(job):
        assert client.get(url).status_code == 404
    assert client.post(reverse("jobs:job-cancel", args=[job.uuid])).status_code == 404
    assert b"Hello GPU" not in client.get(reverse("jobs:job-list")).content


def test_a_student_of_another_course_gets_404(client, job, outsider):
    client.force_login(outsider)
    for url in job_urls(job):
        assert client.get(url).status_code == 404
    assert client.get(reverse("jobs:course-jobs", args=["cs101"])).status_code == 404
    submit = client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    assert submit.status_code == 404


def test_a_ta_of_another_course_gets_404(client, job, other_ta):
    client.force_login(other_ta)
    for url in job_urls(job):
        assert client.get(url).status_code == 404


def test_the_courses_ta_reads_the_job_but_cannot_cancel_it(client, job, ta):
    client.force_login(ta)
    page = client.get(reverse("jobs:job-detail", args=[job.uuid]))
    assert page.status_code == 200
    assert b"read-only" in page.content
    assert b"Cancel job" not in page.content
    assert client.post(reverse("jobs:job-cancel", args=[job.uuid])).status_code == 403
    job.refresh_from_db()
    assert not job.cancel_requested


def test_course_staff_see_every_job_of_their_course_and_students_get_403(client, job, ta, instructor, classmate):
    url = reverse("jobs:course-jobs", args=["cs101"])
    for person in (ta, instructor):
        client.force_login(person)
        page = client.get(url)
        assert page.status_code == 200
        assert b"student1" in page.content
    client.force_login(classmate)
    assert client.get(url).status_code == 403


def test_the_owner_sees_the_job(client, job, student):
    client.force_login(student)
    for url in job_urls(job)[:2]:
        assert client.get(url).status_code == 200


def test_wrong_methods_are_refused(client, job, student):
    client.force_login(student)
    assert client.post(reverse("jobs:job-detail", args=[job.uuid])).status_code == 405
    assert client.get(reverse("jobs:job-cancel", args=[job.uuid])).status_code == 405
    assert client.get(reverse("jobs:job-create", args=["cs101", "hello"])).status_code == 405
    assert client.delete(reverse("jobs:job-zip", args=[job.uuid])).status_code == 405


def test_an_unknown_job_is_404(client, student):
    client.force_login(student)
    assert client.get("/jobs/00000000-0000-0000-0000-000000000000/").status_code == 404
