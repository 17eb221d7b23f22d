"""Starter files and data set choices belong to the assignment version a job records. An instructor who
replaces a starter file (a `train.py`) makes a new version; a Retry of an older attempt copies that attempt's
version of the file into the new job directory, never the new one (which would run code the student never
submitted, as the student, at a time of the instructor's choosing). The job page says a newer version exists."""

import html
import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from courses.models import Assignment, AssignmentVersion, StarterFile
from jobs.models import Job, Status
from jobs.selectors import job_starter_files
from tests.conftest import dispatch, wait_for_status

SCRIPT = "python3 train.py\nexit 3"
OLD_TRAIN = b'print("train.py version one")\n'
NEW_TRAIN = b'print("train.py version two <b>PWNED</b>")\n'


def assignment_form(**extra) -> dict:
    return {
        "title": "Train",
        "slug": "train",
        "description": "",
        "script_template": SCRIPT,
        "parameters": json.dumps([]),
        "gpus": "0",
        "cpus": "1",
        "mem_mb": "200",
        "minutes": "2",
        "save": "1",
        **extra,
    }


def save_assignment(client, instructor, *, new: bool = False, **extra) -> None:
    client.force_login(instructor)
    url = (
        reverse("courses:assignment-create", args=["cs101"])
        if new
        else reverse("courses:assignment-edit", args=["cs101", "train"])
    )
    response = client.post(url, assignment_form(**extra))
    assert response.status_code == 302, response.content.decode()[-2000:]


def upload_train(client, instructor, content: bytes, *, new: bool = False, **extra) -> None:
    save_assignment(client, instructor, new=new, starter_file=SimpleUploadedFile("train.py", content), **extra)


def submit(client, student, **extra) -> Job:
    client.force_login(student)
    response = client.post(
        reverse("jobs:job-create", args=["cs101", "train"]),
        {"gpus": "0", "cpus": "1", "mem_mb": "200", "minutes": "2", **extra},
    )
    assert response.status_code == 302, response.content.decode()[-2000:]
    return Job.objects.filter(retry_of=None, user=student).latest("created_at")


def retry(client, user, job: Job) -> Job:
    client.force_login(user)
    assert client.post(reverse("jobs:job-retry", args=[job.uuid]), {"same": "1"}).status_code == 302
    return Job.objects.get(retry_of=job)


@pytest.fixture
def failed_attempt(client, instructor, student) -> Job:
    """The student's attempt of version 1 (train.py version one), failed as the sync records a failure."""
    upload_train(client, instructor, OLD_TRAIN, new=True)
    job = submit(client, student)
    Job.objects.filter(pk=job.pk).update(status=Status.FAILED, slurm_state="FAILED", exit_code=3)
    job.refresh_from_db()
    return job


def page(client, user, url: str) -> str:
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200
    return html.unescape(response.content.decode())


@pytest.mark.slurm
def test_a_retry_pressed_after_the_instructor_replaces_a_starter_file_runs_the_old_attempts_file(
    client, instructor, student
):
    upload_train(client, instructor, OLD_TRAIN, new=True)
    first = wait_for_status(dispatch(submit(client, student)), Status.FAILED)
    assert (Path(first.workdir) / "train.py").read_bytes() == OLD_TRAIN

    upload_train(client, instructor, NEW_TRAIN)
    again = retry(client, student, first)
    assert again.assignment_version == first.assignment_version
    again = wait_for_status(dispatch(again), Status.FAILED, Status.COMPLETED)

    copied = (Path(again.workdir) / "train.py").read_bytes()
    output = (Path(again.workdir) / "job.out").read_text()
    print(f"the retry's directory got train.py {copied!r}; run as the student it printed {output!r}")
    assert copied == OLD_TRAIN
    assert output == "train.py version one\n"
    assert again.run_as == "student1" and again.exit_code == 3


def test_replacing_a_starter_file_is_a_new_version_that_keeps_the_old_file(client, instructor, failed_attempt):
    upload_train(client, instructor, NEW_TRAIN)
    versions = list(AssignmentVersion.objects.filter(assignment__slug="train").order_by("number"))
    assert [(v.number, v.script_template, v.author) for v in versions] == [
        (1, SCRIPT, instructor),
        (2, SCRIPT, instructor),
    ]
    kept = {v.number: [(f.name, f.file.read()) for f in v.starter_files.all()] for v in versions}
    assert kept == {1: [("train.py", OLD_TRAIN)], 2: [("train.py", NEW_TRAIN)]}
    assert failed_attempt.assignment_version == versions[0]

    upload_train(client, instructor, NEW_TRAIN)
    assert AssignmentVersion.objects.filter(assignment__slug="train").count() == 3, "a new upload is a new file"
    save_assignment(client, instructor)
    assert AssignmentVersion.objects.filter(assignment__slug="train").count() == 3, "saving unchanged: no version"


def test_a_starter_file_replaced_outside_the_form_reaches_new_jobs_only(client, student, failed_attempt):
    """E.g. in the Django admin, or by a script: the next submission makes the new version; a retry does not."""
    StarterFile.objects.filter(assignment__slug="train").delete()
    StarterFile.objects.create(
        assignment=Assignment.objects.get(slug="train"),
        name="train.py",
        file=SimpleUploadedFile("train.py", NEW_TRAIN),
    )
    again = retry(client, student, failed_attempt)
    assert again.assignment_version.number == 1
    assert [f.file.read() for f in again.assignment_version.starter_files.all()] == [OLD_TRAIN]
    fresh = submit(client, student)
    assert fresh.assignment_version.number == 2
    assert [f.file.read() for f in fresh.assignment_version.starter_files.all()] == [NEW_TRAIN]


def test_a_starter_file_changed_in_storage_since_its_version_was_saved_is_refused(client, student, failed_attempt):
    kept = failed_attempt.assignment_version.starter_files.get()
    Path(kept.file.path).write_bytes(NEW_TRAIN)  # written over where it is stored (an operator, a restore)
    again = dispatch(retry(client, student, failed_attempt))
    assert again.status == Status.REJECTED
    assert "The starter file 'train.py' is no longer the one this job's version" in again.message
    assert not again.slurm_job_id


def test_each_version_keeps_its_data_sets_and_a_withdrawn_one_is_not_used_by_a_retry(
    client, instructor, student, dataset
):
    upload_train(client, instructor, OLD_TRAIN, new=True, datasets=[dataset.pk])
    first = submit(client, student, dataset=dataset.pk)
    assert first.dataset == dataset
    Job.objects.filter(pk=first.pk).update(status=Status.FAILED)
    first.refresh_from_db()

    save_assignment(client, instructor)  # the data set withdrawn: version 2
    versions = AssignmentVersion.objects.filter(assignment__slug="train").order_by("number")
    assert [list(v.datasets.all()) for v in versions] == [[dataset], []]
    text = page(client, student, reverse("jobs:job-detail", args=[first.uuid]))
    assert "The data sets offered changed since." in text
    client.force_login(student)
    client.post(reverse("jobs:job-retry", args=[first.uuid]), {"same": "1"})
    assert not Job.objects.filter(retry_of=first).exists()


def test_the_job_page_says_a_newer_version_exists_and_which_starter_files_changed(
    client, instructor, student, ta, failed_attempt
):
    job_url = reverse("jobs:job-detail", args=[failed_attempt.uuid])
    assert 'id="version-newer"' not in page(client, student, job_url)
    assert "train.py</code> (version 1)" in page(client, student, job_url)

    upload_train(client, instructor, NEW_TRAIN)
    text = page(client, student, job_url)
    assert "A newer version of this assignment exists: version 2" in text
    assert "This attempt ran version 1. Starter files changed since: train.py." in text
    assert "Retry runs version 1 again, with its script and starter files" in text
    assert "by Instructor1" not in text, "who saved it is for course staff"
    assert "by Instructor1" in page(client, ta, job_url)

    resubmit = page(client, student, reverse("jobs:job-resubmit", args=[failed_attempt.uuid]))
    assert "The new attempt runs the assignment's version 2, whose starter files differ" in resubmit


def test_a_resubmission_records_the_current_version_and_gets_its_files(client, instructor, student, failed_attempt):
    upload_train(client, instructor, NEW_TRAIN)
    client.force_login(student)
    form = client.get(reverse("jobs:job-resubmit", args=[failed_attempt.uuid])).content.decode()
    key = form.split('name="submission_key" value="', 1)[1].split('"', 1)[0]
    data = {"gpus": "0", "cpus": "1", "mem_mb": "200", "minutes": "2", "submission_key": key}
    assert client.post(reverse("jobs:job-resubmit", args=[failed_attempt.uuid]), data).status_code == 302
    new = Job.objects.get(resubmit_of=failed_attempt)
    assert new.assignment_version.number == 2
    assert [f.file.read() for f in new.assignment_version.starter_files.all()] == [NEW_TRAIN]
    assert 'id="version-newer"' not in page(client, student, reverse("jobs:job-detail", args=[new.uuid]))


def test_a_retry_of_an_attempt_made_before_versions_were_kept_gets_the_first_versions_files(
    client, instructor, student, failed_attempt
):
    older = Job.objects.create(
        **{f: getattr(failed_attempt, f) for f in ("user", "assignment", "run_as", "gpus", "cpus", "mem_mb")},
        minutes=2,
        account="cs101",
        script=failed_attempt.script,
        workdir="/nonexistent",
        status=Status.FAILED,
        assignment_version=None,
    )
    upload_train(client, instructor, NEW_TRAIN)
    again = retry(client, student, older)
    assert again.assignment_version is None
    assert [f.file.read() for f in job_starter_files(job=again)] == [OLD_TRAIN]
