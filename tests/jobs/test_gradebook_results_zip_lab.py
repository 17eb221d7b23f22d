"""The gradebook's "Download all results" on the lab cluster: two students' jobs really run to completion (the
form, the worker's dispatch, the sync), a third student has none; the zip has a folder per student with the
files their job wrote, read from their job directories as the portal's account reads them, and SKIPPED.txt
names the third."""

import io
import zipfile

import pytest
from django.urls import reverse

from courses.models import Role
from jobs.models import Status
from tests.conftest import dispatch, make_user, submit_form, wait_for_status

pytestmark = pytest.mark.slurm


def completed_job(client, user, name: str):
    client.force_login(user)
    form = submit_form(param_NAME=name)
    assert client.post(reverse("jobs:job-create", args=["cs101", "hello"]), form).status_code == 302
    job = dispatch(user.jobs.get())
    return wait_for_status(job, Status.COMPLETED, Status.FAILED)


def test_the_results_zip_has_each_students_completed_job_and_names_the_one_without(
    client, student, classmate, course, instructor, assignment
):
    third = make_user("student3", "student3")
    course.enrollments.create(user=third, role=Role.STUDENT)
    first, second = completed_job(client, student, "alpha"), completed_job(client, classmate, "beta")
    assert first.status == second.status == Status.COMPLETED

    client.force_login(instructor)
    response = client.get(reverse("jobs:gradebook-results-zip", args=["cs101", "hello"]))

    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    names = set(archive.namelist())
    assert {name.split("/")[0] for name in names} == {"student1", "student2", "SKIPPED.txt"}
    assert {"student1/job.sh", "student1/job.out", "student2/job.sh", "student2/job.out"} <= names
    assert archive.read("student1/results/out.txt") == b"done alpha\n"
    assert archive.read("student2/results/out.txt") == b"done beta\n"
    assert b"user=student2" in archive.read("student2/job.out")
    skipped = archive.read("SKIPPED.txt").decode()
    assert "student3 (Student3): no completed attempt of this assignment" in skipped
    assert "student1" not in skipped and "student2" not in skipped
