"""A class job waiting in its lab is told its place among the lab's jobs, not among the partition's.

A lab reserves one node (4 GPUs) for a cs102 course; research work fills the other node and more waits for it in
the partition. Three class jobs of 4 GPUs each go to the lab: the first runs, the second is next to start in the
lab, the third has one lab job ahead of it, whatever waits in the partition outside the lab. Everything this
test makes is cancelled or deleted at the end.
"""

import time
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

import slurm
from clusterpolicy.labs import labs_tick
from courses.models import Assignment, Course, Enrollment, Role
from courses.services import lab_session_schedule
from jobs.dispatch import jobs_sync
from jobs.models import Job, Status
from slurm import reservations, runner
from tests.behaviour_helpers import research_job
from tests.conftest import dispatch, make_user, submit_form

pytestmark = pytest.mark.slurm


def wait(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(1)
    return value


def test_a_class_job_waiting_in_its_lab_is_told_its_place_in_the_lab(db, client):
    course = Course.objects.create(
        slug="lab103",
        code="CS102",
        title="Lab course",
        term="Fall",
        slurm_account="cs102",
        partition="gpu",
        max_gpus_per_job=4,
        max_minutes_per_job=10,
    )
    Assignment.objects.create(
        course=course, slug="train", title="Train", script_template="sleep 120\n", gpus=4, cpus=1, mem_mb=500, minutes=5
    )
    student = make_user("student4", "student4")
    Enrollment.objects.create(user=student, course=course, role=Role.STUDENT)
    research, session = [], None
    try:
        now = timezone.now()
        session = lab_session_schedule(course=course, starts_at=now, ends_at=now + timedelta(minutes=15), nodes=1)
        assert labs_tick()["reserved"] == 1
        session.refresh_from_db()
        lab_node = reservations.reservation_list()[session.reservation_name].nodes
        other_node = "gpu2" if lab_node == "gpu1" else "gpu1"
        research = [research_job(gpus=4, seconds=120, node=other_node, name="lq-research") for _ in range(3)]

        client.force_login(student)
        jobs = []
        for _ in range(3):
            client.post(reverse("jobs:job-create", args=["lab103", "train"]), submit_form(gpus="4", minutes="5"))
            jobs.append(dispatch(Job.objects.latest("created_at")))
        assert all(job.reservation == session.reservation_name for job in jobs)

        def settled() -> bool:
            queue = slurm.queue()
            states = [queue[job_id].state for job_id in [*research, *(job.slurm_job_id for job in jobs)]]
            return states.count("RUNNING") == 2 and states.count("PENDING") == 4

        wait(settled, 60, "one research job and one class job to run, the others to wait")
        jobs_sync()
        first, second, third = (Job.objects.get(pk=job.pk) for job in jobs)
        assert first.status == Status.RUNNING
        queue = slurm.queue()
        research_waiting = sorted(queue[job_id].queue_position for job_id in research[1:])
        assert research_waiting == [1, 2], "the research jobs are ranked among the partition's jobs outside the lab"

        second_page = client.get(reverse("jobs:job-detail", args=[second.uuid])).content.decode()
        third_page = client.get(reverse("jobs:job-detail", args=[third.uuid])).content.decode()
        assert "Next to start in your lab." in second_page
        assert "1 job ahead of yours in your lab." in third_page
    finally:
        ids = research + list(Job.objects.exclude(slurm_job_id="").values_list("slurm_job_id", flat=True))
        if ids:
            runner.run(["scancel", *ids])
        if session is not None and session.reservation_name:
            reservations.reservation_delete(session.reservation_name)
