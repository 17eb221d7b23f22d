"""A download path that leaves the job's folder is refused even when the file it reaches is the student's own
(another job's results, which course staff of this course may not see): through a folder the job replaced with a
symlink, through a job folder the student replaced with one, and back up with ".."; a path with "." in it names
no file the page lists. No cluster: the folders are what the job or the student would leave."""

import os
import pwd
from pathlib import Path

from django.urls import reverse

from jobs.models import Job


def students_file(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    account = pwd.getpwnam("student1")
    for item in (path.parent, path):
        os.chown(item, account.pw_uid, account.pw_gid)
    return path


def download(client, job: Job, path: str):
    return client.get(reverse("jobs:job-file", args=[job.uuid, path]))


def test_a_folder_the_job_replaced_with_a_symlink_to_the_students_other_files_is_not_followed(
    client, finished_job, tmp_path
):
    students_file(tmp_path / "other-course-job" / "marks.csv", "student1,71\n")
    os.symlink(tmp_path / "other-course-job", Path(finished_job.workdir, "results"))
    students_file(Path(finished_job.workdir, "job.out"), "done\n")

    assert download(client, finished_job, "job.out").status_code == 200
    assert download(client, finished_job, "results/marks.csv").status_code == 404


def test_a_path_that_climbs_back_up_through_a_folder_is_refused_though_the_file_is_there(client, finished_job):
    students_file(Path(finished_job.workdir, "sub", "inside.txt"), "inside\n")
    students_file(Path(finished_job.workdir, "job.out"), "done\n")

    assert download(client, finished_job, "sub/inside.txt").status_code == 200
    assert download(client, finished_job, "sub/../job.out").status_code == 404
    assert download(client, finished_job, "./job.out").status_code == 404
    assert download(client, finished_job, "sub/./inside.txt").status_code == 404


def test_a_job_folder_the_student_replaced_with_a_symlink_to_their_other_files_is_not_followed(
    client, finished_job, tmp_path
):
    students_file(tmp_path / "other-course-job" / "job.out", "another course's output\n")
    workdir = Path(finished_job.workdir)
    workdir.rmdir()  # the student owns the folder above it, so they may put a symlink in its place
    os.symlink(tmp_path / "other-course-job", workdir)

    assert download(client, finished_job, "job.out").status_code == 404
