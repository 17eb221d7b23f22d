"""Assignment scripts are versioned: a Retry re-runs the script of the attempt it retries, never a template
the instructor edited since (which would run new code as the student, at a time of the instructor's
choosing). Students are told when the script changed since their last attempt; staff see the diff."""

import html
import json
from pathlib import Path

import pytest
from django.urls import reverse

from courses import models
from courses.models import Assignment
from jobs.models import Job, Status
from tests.conftest import dispatch, wait_for_status

OLD_BODY = 'echo "version one as $(whoami)"\nexit 3'
NEW_BODY = 'echo "version two <b>PWNED</b> as $(whoami)"\nexit 0'


def assignment_form(body: str) -> dict:
    return {
        "title": "Train",
        "slug": "train",
        "description": "",
        "script_template": body,
        "parameters": json.dumps([]),
        "gpus": "0",
        "cpus": "1",
        "mem_mb": "200",
        "minutes": "2",
        "save": "1",
    }


def save_assignment(client, instructor, body: str, *, new: bool = False) -> None:
    client.force_login(instructor)
    url = (
        reverse("courses:assignment-create", args=["cs101"])
        if new
        else reverse("courses:assignment-edit", args=["cs101", "train"])
    )
    assert client.post(url, assignment_form(body)).status_code == 302


def submit(client, student) -> Job:
    client.force_login(student)
    response = client.post(
        reverse("jobs:job-create", args=["cs101", "train"]),
        {"gpus": "0", "cpus": "1", "mem_mb": "200", "minutes": "2"},
    )
    assert response.status_code == 302
    return Job.objects.get(retry_of=None, user=student)


@pytest.fixture
def failed_attempt(client, instructor, student) -> Job:
    """The student's attempt of version 1, failed (recorded as the sync records a failure)."""
    save_assignment(client, instructor, OLD_BODY, new=True)
    job = submit(client, student)
    Job.objects.filter(pk=job.pk).update(status=Status.FAILED, slurm_state="FAILED", exit_code=3)
    job.refresh_from_db()
    return job


def page(client, user, url: str) -> str:
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.slurm
def test_a_retry_pressed_after_the_instructor_edits_the_template_runs_the_old_attempts_script(
    client, instructor, student
):
    save_assignment(client, instructor, OLD_BODY, new=True)
    first = wait_for_status(dispatch(submit(client, student)), Status.FAILED)

    save_assignment(client, instructor, NEW_BODY)
    client.force_login(instructor)
    response = client.post(reverse("jobs:job-retry", args=[first.uuid]), {"same": "1"})
    assert response.status_code == 302

    retry = Job.objects.get(retry_of=first)
    assert retry.script == first.script
    assert "PWNED" not in retry.script
    assert retry.assignment_version == first.assignment_version
    assert retry.created_by == instructor and retry.run_as == "student1"
    retry = wait_for_status(dispatch(retry), Status.FAILED, Status.COMPLETED)
    output = (Path(retry.workdir) / "job.out").read_text()
    print(f"the retry, run as the student, printed: {output!r}")
    assert output == "version one as student1\n"
    assert retry.exit_code == 3


def test_a_retry_with_changed_resources_still_runs_the_old_attempts_template(
    client, instructor, student, failed_attempt
):
    save_assignment(client, instructor, NEW_BODY)
    client.force_login(student)
    data = {"gpus": "0", "cpus": "1", "mem_mb": "300", "minutes": "2"}
    assert client.post(reverse("jobs:job-retry", args=[failed_attempt.uuid]), data).status_code == 302
    retry = Job.objects.get(retry_of=failed_attempt)
    assert retry.mem_mb == 300 and "#SBATCH --mem=300M" in retry.script
    assert retry.script.endswith(OLD_BODY + "\n") and "PWNED" not in retry.script


def test_every_saved_version_is_kept_with_its_author_and_time(client, instructor, failed_attempt):
    save_assignment(client, instructor, NEW_BODY)
    assignment = Assignment.objects.get(slug="train")
    versions = list(models.AssignmentVersion.objects.filter(assignment=assignment).order_by("number"))
    assert [(v.number, v.script_template, v.author) for v in versions] == [
        (1, OLD_BODY, instructor),
        (2, NEW_BODY, instructor),
    ]
    assert all(v.created_at for v in versions)
    assert failed_attempt.assignment_version == versions[0]
    save_assignment(client, instructor, NEW_BODY)
    kept = models.AssignmentVersion.objects.filter(assignment=assignment)
    assert kept.count() == 2, "saving an unchanged script makes no new version"


def test_the_student_is_told_the_script_changed_since_their_last_attempt(client, instructor, student, failed_attempt):
    assignment_url = reverse("jobs:assignment-detail", args=["cs101", "train"])
    assert 'id="script-changed"' not in page(client, student, assignment_url)

    save_assignment(client, instructor, NEW_BODY)
    text = html.unescape(page(client, student, assignment_url))
    assert "The instructor changed this assignment's script since your last attempt (attempt 1" in text
    job_page = html.unescape(page(client, student, reverse("jobs:job-detail", args=[failed_attempt.uuid])))
    assert "The assignment's script has changed since this attempt ran (now version 2" in job_page
    assert "Retry runs this attempt's script again" in job_page
    assert 'id="script-diff"' not in job_page, "the diff is for course staff"


def test_course_staff_see_the_diff_escaped(client, instructor, ta, failed_attempt):
    save_assignment(client, instructor, NEW_BODY)
    job_page = page(client, ta, reverse("jobs:job-detail", args=[failed_attempt.uuid]))
    assert 'id="script-diff"' in job_page
    assert "+echo &quot;version two &lt;b&gt;PWNED&lt;/b&gt; as $(whoami)&quot;" in job_page
    assert "-echo &quot;version one as $(whoami)&quot;" in job_page
    assert "<b>PWNED</b>" not in job_page
    assert "saved " in job_page and "by Instructor1" in job_page

    assignment_page = page(client, instructor, reverse("jobs:assignment-detail", args=["cs101", "train"]))
    assert 'id="script-versions"' in assignment_page
    assert "+echo &quot;version two &lt;b&gt;PWNED&lt;/b&gt;" in assignment_page
    assert "<b>PWNED</b>" not in assignment_page
