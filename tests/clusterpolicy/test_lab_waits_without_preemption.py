"""A site without preemption (LABQUEUE_LAB_QOS empty): a lab starting while other jobs run on its nodes waits for
them, and the lab page says by when its GPUs free up at the latest. With preemption nothing has to be waited for.

Research jobs (researcher1, account research, QOS normal) run on both nodes; the lab's reservation comes from the
labs tick. Every job and reservation the test makes is removed at the end.
"""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from clusterpolicy.labs import labs_tick
from courses.models import LabSession
from courses.services import lab_session_schedule
from tests.behaviour_helpers import cancel_slurm_jobs, research_job, reservation_text, slurm, squeue_field, wait_until

pytestmark = pytest.mark.slurm


@pytest.fixture
def research_on_both_nodes(db):
    """One research job running on each node (5-minute time limit); cancelled, and the lab's reservation
    deleted, at the end."""
    ids = [research_job(seconds=300, minutes=5, node=node, name="lq-before-lab") for node in ("gpu1", "gpu2")]
    try:
        wait_until(lambda: all(squeue_field(job_id, "%T") == "RUNNING" for job_id in ids), timeout=60)
        yield ids
    finally:
        cancel_slurm_jobs(ids=ids)
        for name in LabSession.objects.exclude(reservation_name="").values_list("reservation_name", flat=True):
            wait_until(lambda name=name: deleted(name), timeout=60, what=f"reservation {name} to be deleted")


def deleted(name: str) -> bool:
    slurm("scontrol", "delete", f"reservationname={name}", check=False)
    return f"ReservationName={name} " not in reservation_text(name)


def start_lab_now(course) -> LabSession:
    now = timezone.now()
    session = lab_session_schedule(course=course, starts_at=now, ends_at=now + timedelta(minutes=30), nodes=1)
    assert labs_tick()["reserved"] == 1
    session.refresh_from_db()
    return session


def test_the_lab_page_says_by_when_the_jobs_on_the_labs_nodes_end_at_the_latest(
    client, settings, course, instructor, research_on_both_nodes
):
    settings.TIME_ZONE = "UTC"
    settings.LABQUEUE_LAB_QOS = ""

    session = start_lab_now(course)

    (on_lab_node,) = [
        job_id for job_id in research_on_both_nodes if squeue_field(job_id, "%N") == session.reserved_nodes
    ]
    ends = slurm("squeue", "-h", "-j", on_lab_node, "-o", "%e").strip()  # e.g. 2026-12-03T10:42:07, UTC
    expected = (
        "Jobs that started before the lab are still running on its GPUs; the lab's GPUs free up by "
        f"{ends[11:16]} at the latest (when those jobs' time limits run out)."
    )
    assert session.message == expected
    client.force_login(instructor)
    assert escape(expected) in client.get(reverse("courses:lab-list", args=[course.slug])).content.decode()


def test_with_preemption_the_lab_does_not_wait(settings, course, research_on_both_nodes):
    settings.LABQUEUE_LAB_QOS = "coursework"

    session = start_lab_now(course)

    assert session.state == LabSession.State.RESERVED and session.message == ""
