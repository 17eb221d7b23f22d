"""Instructors' hints: validated patterns, shown on matching failed jobs."""

from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from courses.models import Hint
from jobs.models import Job, Status
from tests.conftest import dispatch, submit_form, wait_for_status


def add_hint(client, **data):
    return client.post(reverse("courses:hint-list", args=["cs101"]), {"assignment": "", "state": "", **data})


def test_an_instructor_adds_a_hint_and_bad_patterns_are_refused(client, instructor):
    client.force_login(instructor)
    assert add_hint(client, pattern="dataset not found", message="Pick a data set from the list.").status_code == 302
    bad = add_hint(client, pattern="(unclosed", message="x").content.decode()
    assert "not a valid regular expression" in bad
    slow = add_hint(client, pattern="^(a|aa)+$", message="x").content.decode()
    assert "takes too long" in slow
    empty = add_hint(client, pattern="", message="x").content.decode()
    assert "Give a pattern, a Slurm state, or both" in empty
    assert Hint.objects.count() == 1


def test_only_the_instructor_manages_hints(client, ta, student, other_ta):
    url = reverse("courses:hint-list", args=["cs101"])
    for person, status in ((ta, 403), (student, 403), (other_ta, 404)):
        client.force_login(person)
        assert client.get(url).status_code == status
        assert add_hint(client, pattern="x", message="y").status_code == status
    assert not Hint.objects.exists()


@pytest.mark.slurm
def test_a_matching_hint_is_shown_on_the_failed_job(client, instructor, student, course, assignment):
    Hint.objects.create(course=course, pattern=r"dataset \w+ not found", message="Pick a data set from the list.")
    Hint.objects.create(course=course, state="TIMEOUT", message="Shown only on timeouts.")
    assignment.script_template = "echo 'error: dataset mnist not found' >&2\nexit 2\n"
    assignment.save()
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    job = wait_for_status(dispatch(Job.objects.get()), Status.FAILED)
    assert Path(job.workdir, "job.err").read_text().startswith("error: dataset")
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "From your instructor:</strong> Pick a data set from the list." in page
    assert "Shown only on timeouts." not in page


@pytest.mark.timeout(30)  # a hang here must fail the test, not stall the suite
def test_a_pattern_that_backtracks_on_a_large_log_is_cut_off_not_hanging_the_page(client, student, course, job_root):
    Hint.objects.create(course=course, pattern=r"(\w+\s?)*$", message="Never shown.")
    workdir = Path(job_root) / "slow"
    workdir.mkdir()
    (workdir / "job.out").write_text(" ".join(["word"] * 3000) + "!")
    job = Job.objects.create(
        user=student,
        assignment=course.assignments.create(slug="s", title="S", script_template="true\n"),
        run_as="student1",
        gpus=0,
        cpus=1,
        mem_mb=100,
        minutes=1,
        account="cs101",
        script="",
        workdir=str(workdir),
        status=Status.FAILED,
        submitted_at=timezone.now(),  # it ran: its page reads its output
    )
    client.force_login(student)
    page = client.get(reverse("jobs:job-detail", args=[job.uuid]))
    assert page.status_code == 200
    assert "Never shown." not in page.content.decode()
