"""Files a student uploads, and an assignment's starter files, land in the job's directory."""

import time
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import HttpResponse
from django.urls import reverse

from courses.models import StarterFile
from jobs.models import Job, Status
from jobs.staging import staging_dir
from tests.conftest import dispatch, submit_form, wait_for_status


@pytest.mark.slurm
def test_uploaded_and_starter_files_are_in_the_jobs_directory(client, student, assignment, settings):
    settings.MEDIA_ROOT.mkdir(parents=True, exist_ok=True)
    StarterFile.objects.create(
        assignment=assignment, name="starter.py", file=SimpleUploadedFile("starter.py", b"print('starter')\n")
    )
    assignment.script_template = "cat notes.txt\npython3 starter.py\n"
    assignment.save()
    client.force_login(student)
    upload = SimpleUploadedFile("notes.txt", b"my own notes\n")
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), {**submit_form(), "uploads": [upload]})
    job = wait_for_status(dispatch(Job.objects.get()), Status.COMPLETED)
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "my own notes" in page and "starter" in page


def test_an_upload_over_the_size_limit_is_refused_and_nothing_is_submitted(client, student, assignment, settings):
    settings.LABQUEUE_UPLOAD_MAX_BYTES = 1000
    client.force_login(student)
    upload = SimpleUploadedFile("big.bin", b"x" * 2000)
    response = client.post(reverse("jobs:job-create", args=["cs101", "hello"]), {**submit_form(), "uploads": [upload]})
    assert response.status_code == 400
    assert "The files add up to more than" in response.content.decode()
    assert not Job.objects.exists()


@pytest.mark.parametrize("name", ["job.sh", ".bashrc", "job.out"])
def test_an_upload_that_would_replace_the_script_or_logs_is_refused(client, student, assignment, name):
    client.force_login(student)
    upload = SimpleUploadedFile(name, b"#!/bin/bash\n#SBATCH --gres=gpu:4\n")
    response = client.post(reverse("jobs:job-create", args=["cs101", "hello"]), {**submit_form(), "uploads": [upload]})
    assert response.status_code == 400
    assert not Job.objects.exists()


@pytest.mark.slurm
def test_files_chosen_with_a_refused_form_are_kept_for_the_corrected_one(client, student, assignment, settings):
    assignment.script_template = "cat notes.txt\n"
    assignment.save()
    client.force_login(student)
    url = reverse("jobs:job-create", args=["cs101", "hello"])
    upload = SimpleUploadedFile("notes.txt", b"kept across the error\n")
    refused = client.post(url, {**submit_form(param_EPOCHS="99"), "uploads": [upload]})
    assert refused.status_code == 400
    page = refused.content.decode()
    assert "Kept from your last try" in page and "notes.txt" in page
    token = refused.context["upload_token"]

    client.post(url, {**submit_form(), "upload_token": token})
    job = wait_for_status(dispatch(Job.objects.get()), Status.COMPLETED)
    assert "kept across the error" in client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()


def test_another_session_cannot_use_kept_files(client, student, classmate, assignment):
    client.force_login(student)
    url = reverse("jobs:job-create", args=["cs101", "hello"])
    upload = SimpleUploadedFile("secret.txt", b"mine\n")
    token = client.post(url, {**submit_form(param_EPOCHS="99"), "uploads": [upload]}).context["upload_token"]
    client.force_login(classmate)
    client.post(url, {**submit_form(), "upload_token": token})
    job = Job.objects.get()
    assert job.user == classmate
    assert not (staging_dir(str(job.uuid)) / "secret.txt").exists()


def refused_with(client, name: str, content: bytes, token: str = "") -> HttpResponse:
    """A form refused for its EPOCHS, choosing one file (and carrying `token`)."""
    form = {**submit_form(param_EPOCHS="99"), "uploads": [SimpleUploadedFile(name, content)]}
    response = client.post(reverse("jobs:job-create", args=["cs101", "hello"]), {**form, "upload_token": token})
    assert response.status_code == 400
    return response


def staged_with(client, token: str) -> list[str]:
    """Submit the corrected form carrying `token`; the names of the files the new job was given."""
    response = client.post(
        reverse("jobs:job-create", args=["cs101", "hello"]), {**submit_form(), "upload_token": token}
    )
    assert response.status_code == 302
    staged = staging_dir(str(Job.objects.latest("pk").uuid))
    return sorted(path.name for path in staged.iterdir()) if staged.exists() else []


def test_files_chosen_on_two_refused_forms_in_a_row_all_reach_the_corrected_one(client, student, assignment, settings):
    client.force_login(student)
    token = refused_with(client, "notes.txt", b"first\n").context["upload_token"]
    assert (Path(settings.MEDIA_ROOT) / "pending" / token / "notes.txt").read_bytes() == b"first\n", (
        "kept where docs/records.md tells operators to look"
    )

    again = refused_with(client, "more.txt", b"second\n", token)
    assert again.context["kept_uploads"] == ["more.txt", "notes.txt"]

    assert staged_with(client, again.context["upload_token"]) == ["more.txt", "notes.txt"]
    assert not (Path(settings.MEDIA_ROOT) / "pending" / token).exists(), "used: the kept copies are gone"


def test_two_refused_forms_of_one_session_keep_their_own_files(client, student, assignment):
    client.force_login(student)
    first = refused_with(client, "first.txt", b"1\n").context["upload_token"]
    second = refused_with(client, "second.txt", b"2\n").context["upload_token"]

    assert staged_with(client, first) == ["first.txt"]
    assert staged_with(client, second) == ["second.txt"]


def test_a_session_keeps_the_files_of_its_last_ten_refused_forms(client, student, assignment):
    client.force_login(student)
    tokens = [refused_with(client, f"try{n}.txt", b"x\n").context["upload_token"] for n in range(11)]

    assert staged_with(client, tokens[0]) == [], "the oldest of eleven is no longer this session's"
    assert staged_with(client, tokens[1]) == ["try1.txt"]


def _kept_from_a_refused_try(client, url: str, size: int) -> str:
    """A form refused for a bad parameter, with a file of `size` bytes chosen: the token its file is kept under."""
    refused = client.post(
        url, {**submit_form(param_EPOCHS="99"), "uploads": [SimpleUploadedFile("first.txt", b"x" * size)]}
    )
    assert refused.status_code == 400
    return refused.context["upload_token"]


def test_kept_and_new_files_together_over_the_limit_are_refused_on_the_files_field_and_both_kept(
    client, student, assignment, settings
):
    settings.LABQUEUE_UPLOAD_MAX_BYTES = 1000
    client.force_login(student)
    url = reverse("jobs:job-create", args=["cs101", "hello"])
    token = _kept_from_a_refused_try(client, url, 600)

    second = SimpleUploadedFile("second.txt", b"y" * 600)  # each under the limit, together over it
    response = client.post(url, {**submit_form(), "upload_token": token, "uploads": [second]})

    assert response.status_code == 400
    assert response.context["form"].errors["uploads"] == [
        "With the files kept from your last try, the files are over the size limit."
    ]
    kept = {path.name for path in (settings.MEDIA_ROOT / "pending" / response.context["upload_token"]).iterdir()}
    assert kept == {"first.txt", "second.txt"}
    assert not Job.objects.exists()


def test_kept_and_new_files_together_exactly_at_the_limit_are_sent(client, student, assignment, settings):
    settings.LABQUEUE_UPLOAD_MAX_BYTES = 1000
    client.force_login(student)
    url = reverse("jobs:job-create", args=["cs101", "hello"])
    token = _kept_from_a_refused_try(client, url, 500)

    second = SimpleUploadedFile("second.txt", b"y" * 500)
    response = client.post(url, {**submit_form(), "upload_token": token, "uploads": [second]})

    assert response.status_code == 302
    staged = staging_dir(str(Job.objects.get().uuid))
    assert {path.name: path.stat().st_size for path in staged.iterdir()} == {"first.txt": 500, "second.txt": 500}


def test_kept_files_the_purge_removed_while_the_session_lives_do_not_stop_the_corrected_form(
    client, student, assignment, settings
):
    from jobs.retention import kept_uploads_purge

    client.force_login(student)
    url = reverse("jobs:job-create", args=["cs101", "hello"])
    token = _kept_from_a_refused_try(client, url, 10)
    # The session was kept alive past SESSION_COOKIE_AGE since the files were kept: the purge takes them.
    assert kept_uploads_purge(now=time.time() + settings.SESSION_COOKIE_AGE + 60).folders == 1

    response = client.post(url, {**submit_form(), "upload_token": token})

    assert response.status_code == 302
    assert Job.objects.get().status == Status.QUEUED
