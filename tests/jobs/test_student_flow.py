"""The walking skeleton end to end: log in, submit, watch, read output, download."""

import html
import io
import re
import zipfile

import pytest
from django.urls import reverse

from jobs.models import Job, Status
from tests.conftest import dispatch, submit_form, wait_for_status

pytestmark = pytest.mark.slurm


def test_a_student_logs_in_submits_a_gpu_job_and_downloads_its_output(client, student, assignment, local_passwords_on):
    # A password login, as in the demo (otherwise local passwords are off: see tests/portal/sso/test_sso_job.py).
    response = client.post(reverse("account_login"), {"login": "student1", "password": "pw-student1"})
    assert response.status_code == 302

    home = client.get("/")
    assert b"CS101" in home.content
    page = client.get(reverse("jobs:assignment-detail", args=["cs101", "hello"]))
    assert page.status_code == 200
    assert b"Submit job" in page.content

    response = client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form(param_NAME="first"))
    job = Job.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("jobs:job-detail", args=[job.uuid])
    assert job.status == Status.QUEUED
    assert b"Waiting to be sent" in client.get(response["Location"]).content

    job = dispatch(job)
    assert job.status == Status.PENDING and job.slurm_job_id
    job = wait_for_status(job, Status.COMPLETED)
    assert job.exit_code == 0 and job.slurm_state == "COMPLETED"
    assert job.started_at and job.ended_at

    live = client.get(reverse("jobs:job-status", args=[job.uuid]))
    text = live.content.decode()
    assert "Completed" in text
    assert "user=student1" in text
    assert re.search(r"gpus=\d", text), "CUDA_VISIBLE_DEVICES reaches the job"
    assert "hx-trigger" not in text, "a finished job stops polling"
    # The history tells each step in the order it happened (a sync may also have seen it running).
    history = text[text.index('id="history"') :]
    causes = [html.unescape(cause) for cause in re.findall(r"<tr><td>[^<]*</td><td>(.*?)</td>", history)]
    assert [cause for cause in causes if cause != "Slurm reports RUNNING."] == [
        "Submitted in the portal.",
        "Sending the job to the cluster.",
        f"Accepted by Slurm as job {job.slurm_job_id}.",
        "Slurm's accounting reports COMPLETED, exit code 0.",
    ]

    output = client.get(reverse("jobs:job-file", args=[job.uuid, "results/out.txt"]))
    assert output.status_code == 200
    assert b"".join(output.streaming_content) == b"done first\n"

    archive = client.get(reverse("jobs:job-zip", args=[job.uuid]))
    assert archive["Content-Type"] == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(b"".join(archive.streaming_content))).namelist()
    folder = f"hello-{str(job.uuid)[:8]}"
    assert {f"{folder}/job.sh", f"{folder}/job.out", f"{folder}/results/out.txt"} <= set(names)


def test_the_job_page_polls_while_the_job_is_live(client, student, assignment):
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    job = Job.objects.get()
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert f'hx-get="{reverse("jobs:job-status", args=[job.uuid])}"' in page
    assert 'hx-trigger="every 3s"' in page


def test_my_jobs_lists_jobs_across_courses_and_filters_by_course(client, student, assignment, other_course):
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    listing = client.get(reverse("jobs:job-list"))
    assert b"Hello GPU" in listing.content
    filtered = client.get(reverse("jobs:job-list") + "?course=cs102")
    assert b"Hello GPU" not in filtered.content


def test_a_student_without_a_cluster_username_is_told_why_the_job_cannot_run(client, student, assignment):
    student.netid = None
    student.save()
    client.force_login(student)
    response = client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    assert response.status_code == 400
    assert b"not linked to a cluster username" in response.content
    assert not Job.objects.exists()
