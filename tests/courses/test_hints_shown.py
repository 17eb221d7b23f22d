"""An instructor's hint shows on a finished job's page only when its pattern (and Slurm state) match the job.

No cluster: the job is submitted through the view, then given what the sync would have written for a
finished job (status, Slurm state, exit code) and the output files Slurm would have left in its directory.
"""

import re
from pathlib import Path

from django.urls import reverse
from django.utils import timezone

from courses.models import Assignment, Hint
from jobs.models import Job, Status
from tests.conftest import submit_form

HINT = re.compile(r'<div class="hint"><strong>From your instructor:</strong> (.*?)</div>', re.S)


def add_hint(client, instructor, *, pattern: str = "", state: str = "", assignment: str = "", message: str) -> None:
    client.force_login(instructor)
    data = {"pattern": pattern, "state": state, "assignment": assignment, "message": message}
    response = client.post(reverse("courses:hint-list", args=["cs101"]), data)
    assert response.status_code == 302, response.content.decode()[:2000]


def finished_job(
    client,
    student,
    *,
    out: str = "",
    err: str = "",
    state: str = "FAILED",
    exit_code: int = 1,
    status: str = Status.FAILED,
) -> Job:
    client.force_login(student)
    assert client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form()).status_code == 302
    job = Job.objects.get()
    workdir = Path(job.workdir)
    workdir.mkdir(parents=True)
    (workdir / job.stdout_name).write_text(out)
    (workdir / job.stderr_name).write_text(err)
    now = timezone.now()
    ended = {} if status == Status.RUNNING else {"ended_at": now, "elapsed_seconds": 3, "exit_code": exit_code}
    Job.objects.filter(pk=job.pk).update(
        status=status, slurm_state=state, slurm_job_id="4242", submitted_at=now, started_at=now, **ended
    )
    return job


def hints_on_page(client, person, job) -> list[str]:
    client.force_login(person)
    detail = client.get(reverse("jobs:job-detail", args=[job.uuid]))
    live = client.get(reverse("jobs:job-status", args=[job.uuid]))
    assert detail.status_code == live.status_code == 200
    shown = HINT.findall(detail.content.decode())
    assert HINT.findall(live.content.decode()) == shown, "the live partial shows the same hints"
    return shown


def test_a_hint_whose_pattern_matches_the_output_is_shown_and_one_that_does_not_is_not(
    client, instructor, student, assignment
):
    add_hint(client, instructor, pattern=r"dataset \w+ not found", message="Pick a data set from the list.")
    add_hint(client, instructor, pattern="CUDA out of memory", message="Use a smaller batch.")
    job = finished_job(client, student, out="loading\nerror: dataset mnist not found\n")
    assert hints_on_page(client, student, job) == ["Pick a data set from the list."]


def test_a_pattern_is_also_searched_in_the_error_output(client, instructor, student, assignment):
    add_hint(client, instructor, pattern="No space left", message="Clean your home directory.")
    job = finished_job(client, student, out="epoch 1\n", err="OSError: [Errno 28] No space left on device\n")
    assert hints_on_page(client, student, job) == ["Clean your home directory."]


def test_a_state_hint_is_shown_only_on_a_job_that_ended_in_that_state(client, instructor, student, assignment):
    add_hint(client, instructor, state="timeout", message="Ask for more minutes.")
    add_hint(client, instructor, state="OUT_OF_MEMORY", message="Ask for more memory.")
    job = finished_job(client, student, out="step 9\n", state="TIMEOUT", exit_code=0)
    assert hints_on_page(client, student, job) == ["Ask for more minutes."]


def test_a_hint_with_a_state_and_a_pattern_needs_both_to_match(client, instructor, student, assignment):
    add_hint(client, instructor, state="TIMEOUT", pattern="loss", message="Wrong state, matching pattern.")
    add_hint(client, instructor, state="FAILED", pattern="accuracy", message="Right state, other pattern.")
    add_hint(client, instructor, state="FAILED", pattern=r"loss \w+", message="Both match.")
    job = finished_job(client, student, out="epoch 3 loss nan\n")
    assert hints_on_page(client, student, job) == ["Both match."]


def test_every_matching_hint_of_the_course_and_assignment_is_shown_and_no_other(
    client, instructor, student, assignment, course, other_course
):
    other = Assignment.objects.create(course=course, slug="other", title="Other", script_template="true\n")
    add_hint(client, instructor, pattern="Traceback", message="For every assignment.")
    add_hint(client, instructor, pattern="Traceback", assignment=str(other.pk), message="For the other assignment.")
    add_hint(client, instructor, pattern="Traceback", assignment=str(assignment.pk), message="For this assignment.")
    Hint.objects.create(course=other_course, pattern="Traceback", message="Another course's hint.")
    job = finished_job(client, student, err="Traceback (most recent call last):\nValueError: x\n")
    assert hints_on_page(client, student, job) == ["For every assignment.", "For this assignment."]


def test_course_staff_see_the_same_matching_hints_as_the_student(client, instructor, ta, student, assignment):
    add_hint(client, instructor, pattern="Killed", message="Your job used too much memory.")
    add_hint(client, instructor, pattern="Segmentation fault", message="Check your array bounds.")
    job = finished_job(client, student, out="Killed\n", state="FAILED", exit_code=137)
    for person in (student, ta, instructor):
        assert hints_on_page(client, person, job) == ["Your job used too much memory."]


def test_no_hint_is_shown_while_the_job_is_still_running(client, instructor, student, assignment):
    add_hint(client, instructor, pattern="warning", message="Read the warnings.")
    job = finished_job(client, student, out="warning: slow disk\n", state="RUNNING", status=Status.RUNNING)
    assert hints_on_page(client, student, job) == []
    Job.objects.filter(pk=job.pk).update(
        status=Status.FAILED, slurm_state="FAILED", exit_code=1, ended_at=timezone.now()
    )
    assert hints_on_page(client, student, job) == ["Read the warnings."]
