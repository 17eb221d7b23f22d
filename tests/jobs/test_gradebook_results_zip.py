"""The gradebook's "Download all results": one zip, a folder per student (their netid) with the files of their
latest completed attempt, within the size cap (LABQUEUE_ZIP_MAX_BYTES), and SKIPPED.txt naming who is left
out and why; only for the course's TAs and instructors.

No cluster: the jobs are rows as the sync leaves them, each with a job directory holding what a finished job
would have left there (tests/jobs/test_gradebook_results_zip_lab.py runs the jobs on the lab cluster)."""

import io
import os
import zipfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from courses.models import Role
from jobs.models import Job, Status
from tests.conftest import job_row, make_user

ZIP = reverse("jobs:gradebook-results-zip", args=["cs101", "hello"])
PAGE = reverse("jobs:gradebook-detail", args=["cs101", "hello"])
MB = 1024 * 1024


@pytest.fixture
def third(course):
    """A third student of CS101."""
    user = make_user("student3", "student3")
    course.enrollments.create(user=user, role=Role.STUDENT)
    return user


def attempt(user, assignment, job_root: Path, files: dict[str, bytes], *, status=Status.COMPLETED, minutes_ago=0):
    """An attempt `minutes_ago` old whose job directory holds `files`."""
    job = job_row(user, assignment, status=status)
    workdir = job_root / user.netid / str(job.uuid)
    for name, content in files.items():
        (workdir / name).parent.mkdir(parents=True, exist_ok=True)
        (workdir / name).write_bytes(content)
    workdir.mkdir(parents=True, exist_ok=True)
    created = timezone.now() - timedelta(minutes=minutes_ago)
    Job.objects.filter(pk=job.pk).update(workdir=str(workdir), created_at=created)
    job.refresh_from_db()
    return job


def unzipped(response) -> dict[str, bytes]:
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert archive.testzip() is None
    return {name: archive.read(name) for name in archive.namelist()}


def download(client, user) -> dict[str, bytes]:
    client.force_login(user)
    return unzipped(client.get(ZIP))


def test_each_student_gets_a_folder_with_their_latest_completed_attempt(
    client, ta, student, classmate, third, assignment, job_root
):
    attempt(student, assignment, job_root, {"job.out": b"first\n", "old.txt": b"old"}, minutes_ago=30)
    attempt(student, assignment, job_root, {"job.out": b"second\n", "results/out.txt": b"done\n"}, minutes_ago=20)
    attempt(student, assignment, job_root, {"job.out": b"crashed\n"}, status=Status.FAILED, minutes_ago=10)
    attempt(classmate, assignment, job_root, {"job.out": b"classmate\n"})

    contents = download(client, ta)

    assert set(contents) == {"student1/job.out", "student1/results/out.txt", "student2/job.out", "SKIPPED.txt"}
    assert contents["student1/job.out"] == b"second\n" and contents["student2/job.out"] == b"classmate\n"
    skipped = contents["SKIPPED.txt"].decode()
    assert "student3 (Student3): no completed attempt of this assignment" in skipped
    assert "student1" not in skipped and "student2" not in skipped


def test_the_zip_is_named_after_the_course_the_assignment_and_the_day(
    client, instructor, student, assignment, job_root
):
    attempt(student, assignment, job_root, {"job.out": b"ok\n"})
    client.force_login(instructor)
    response = client.get(ZIP)
    name = f"cs101-hello-results-{timezone.localdate()}.zip"
    assert response["Content-Disposition"] == f'attachment; filename="{name}"'
    assert (
        "every enrolled student's latest completed attempt is in this zip" in unzipped(response)["SKIPPED.txt"].decode()
    )


def test_a_student_whose_files_would_pass_the_cap_is_skipped_and_the_others_are_kept(
    client, ta, student, classmate, third, assignment, job_root, settings
):
    settings.LABQUEUE_ZIP_MAX_BYTES = 1 * MB
    attempt(student, assignment, job_root, {"model.bin": os.urandom(600_000)})
    attempt(classmate, assignment, job_root, {"model.bin": os.urandom(600_000)})
    attempt(third, assignment, job_root, {"model.bin": os.urandom(300_000)})

    contents = download(client, ta)

    assert set(contents) == {"student1/model.bin", "student3/model.bin", "SKIPPED.txt"}
    assert (
        "student2 (Student2): their files (0.6 MB) would take the zip over its 1 MB limit"
        in contents["SKIPPED.txt"].decode()
    )


def test_files_purged_under_the_retention_policy_are_named_as_the_reason(client, ta, student, assignment, job_root):
    job = attempt(student, assignment, job_root, {})
    Job.objects.filter(pk=job.pk).update(files_purged_at=timezone.now())
    skipped = download(client, ta)["SKIPPED.txt"].decode()
    assert "student1 (Student1): the files of their latest completed attempt were removed" in skipped


def test_an_attempt_whose_folder_is_gone_is_named_as_leaving_no_files(client, ta, student, assignment, job_root):
    job = attempt(student, assignment, job_root, {})
    Job.objects.filter(pk=job.pk).update(workdir=str(job_root / "student1" / "gone"))
    skipped = download(client, ta)["SKIPPED.txt"].decode()
    assert "student1 (Student1): their latest completed attempt left no files the portal can offer" in skipped


def test_symlinks_and_names_the_job_page_does_not_offer_stay_out_of_the_zip(client, ta, student, assignment, job_root):
    job = attempt(student, assignment, job_root, {"job.out": b"ok\n", "bad\nname.txt": b"x", "back\\slash": b"y"})
    os.symlink("/etc/passwd", Path(job.workdir, "passwd"))
    os.symlink("/etc", Path(job.workdir, "etc"))
    assert set(download(client, ta)) == {"student1/job.out", "SKIPPED.txt"}


def test_the_gradebook_page_links_the_download(client, ta, assignment):
    client.force_login(ta)
    assert f'href="{ZIP}"' in client.get(PAGE).content.decode()


def test_anonymous_visitors_are_sent_to_sign_in(client, assignment):
    response = client.get(ZIP)
    assert response.status_code == 302 and response["Location"].startswith(reverse("account_login"))


def test_a_student_of_the_course_is_refused(client, student, assignment, job_root):
    attempt(student, assignment, job_root, {"job.out": b"ok\n"})
    client.force_login(student)
    assert client.get(ZIP).status_code == 403


def test_staff_of_another_course_get_not_found(client, other_ta, student, assignment, job_root):
    attempt(student, assignment, job_root, {"job.out": b"ok\n"})
    client.force_login(other_ta)
    assert client.get(ZIP).status_code == 404


def test_an_unknown_assignment_is_not_found(client, ta, assignment):
    client.force_login(ta)
    assert client.get(reverse("jobs:gradebook-results-zip", args=["cs101", "nope"])).status_code == 404


def test_the_download_only_answers_get(client, ta, assignment):
    client.force_login(ta)
    assert client.post(ZIP).status_code == 405
