"""A lab that reserves GPUs by count (LABQUEUE_RESERVATION_STRATEGY=gpus: `tres=gres/gpu=N`).

Slurm 23.11 and later reserve GPUs, not whole nodes: a lab's students get 2 GPUs of a node while research
work keeps running on that node's other GPUs. Slurm 22.05 refuses such a reservation, and the portal shows
the instructor Slurm's reason. The test asks the lab cluster which Slurm it runs (`make test` runs 22.05,
`make test-slurm24` runs 24.11) and proves what that version does.
"""

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from courses.models import LabSession
from jobs.models import Job, Status
from jobs.tasks import job_dispatch, labs_tick
from tests.behaviour_helpers import cancel_slurm_jobs, research_job, reservation_text, slurm, squeue_field, wait_until
from tests.conftest import cancel_jobs_under, submit_form, wait_for_status

pytestmark = pytest.mark.slurm
State = LabSession.State


def slurm_version() -> tuple[int, int]:
    """`sinfo --version` prints "slurm 22.05.8" or "slurm 24.11.5"."""
    found = re.search(r"(\d+)\.(\d+)", slurm("sinfo", "--version"))
    assert found, "sinfo --version printed no version"
    return int(found[1]), int(found[2])


@pytest.fixture
def research_jobs(db, job_root):
    """Research jobs the test submits, and the labs' reservations, are gone afterwards, even on failure."""
    ids: list[str] = []
    try:
        yield ids
    finally:
        cancel_slurm_jobs(ids=ids)
        cancel_jobs_under(job_root)  # a portal job still waiting in a reservation keeps it in use
        for session in LabSession.objects.exclude(reservation_name=""):
            name = session.reservation_name
            wait_until(lambda name=name: deleted(name), timeout=30, what=f"reservation {name} to be deleted")


def deleted(name: str) -> bool:
    slurm("scontrol", "delete", f"reservationname={name}", check=False)
    return f"ReservationName={name} " not in reservation_text(name)


def schedule_gpu_lab(client, instructor, gpus: int) -> LabSession:
    start = timezone.now() - timedelta(minutes=1)
    form = {
        "starts_at": start.strftime("%Y-%m-%dT%H:%M"),
        "ends_at": (start + timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%M"),
        "nodes": "1",
        "gpus": str(gpus),
    }
    client.force_login(instructor)
    response = client.post(reverse("courses:lab-list", args=["cs101"]), form)
    assert response.status_code == 302, response.content.decode()
    return LabSession.objects.get()


def test_a_lab_reserves_two_gpus_of_a_node_while_research_work_keeps_the_rest(
    client, instructor, student, assignment, settings, research_jobs
):
    settings.TIME_ZONE = "UTC"
    settings.LABQUEUE_RESERVATION_STRATEGY = "gpus"
    session = schedule_gpu_lab(client, instructor, gpus=2)

    labs_tick()

    session.refresh_from_db()
    if slurm_version() < (23, 11):
        assert session.state == State.FAILED and not session.reservation_active
        assert session.message == (
            "Slurm refused the reservation: TRES type 'gres/gpu' not supported with reservations"
        )
        page = client.get(reverse("courses:lab-list", args=["cs101"])).content.decode()
        assert "Could not be reserved" in page and "not supported with reservations" in page
        return

    assert session.state == State.RESERVED and session.reservation_active, session.message
    node = session.reserved_nodes
    assert node in ("gpu1", "gpu2"), f"one node holds the lab's 2 GPUs, not {node!r}"
    shown = reservation_text(session.reservation_name)
    assert "TRES=cpu=2,gres/gpu=2 " in shown and "Accounts=cs101 " in shown

    # Research work fills every GPU outside the lab's two: the 6 others of the 8 (2 nodes x 4).
    for _ in range(6):
        research_jobs.append(research_job(mem=200, name="lq-behaviour-research"))
    wait_until(
        lambda: all(squeue_field(job_id, "%T") == "RUNNING" for job_id in research_jobs),
        timeout=60,
        what="six research jobs to run",
    )
    on_lab_node = [job_id for job_id in research_jobs if squeue_field(job_id, "%N") == node]
    assert len(on_lab_node) == 2, "the lab's node keeps running research work on its other 2 GPUs"
    research_jobs.append(waiting := research_job(mem=200, name="lq-behaviour-research"))
    wait_until(lambda: squeue_field(waiting, "%r") not in ("", "None"), timeout=30, what="Slurm to consider it")
    assert squeue_field(waiting, "%T") == "PENDING", "the lab's 2 GPUs are not research capacity"

    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    job = Job.objects.get()
    job_dispatch(job.pk)
    job.refresh_from_db()
    assert job.reservation == session.reservation_name
    assert wait_for_status(job, Status.COMPLETED, Status.FAILED, timeout=60).status == Status.COMPLETED
    ran_on = slurm("sacct", "-X", "-n", "-P", "-j", job.slurm_job_id, "-o", "NodeList").strip()
    assert ran_on == node, "the student's GPU job ran in the lab's GPUs while research held all the others"
