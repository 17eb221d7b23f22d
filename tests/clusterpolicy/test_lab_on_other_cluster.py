"""A lab of a course bound to the site's other cluster, lab2 (scripts/labcluster up-lab2: gpu3 and gpu4, its own
slurmctld, lab's slurmdbd): the worker's `labs_tick` task reserves lab2's nodes on lab2 (`scontrol -M lab2`), a
student's job runs there in the reservation, and the reservation is removed on lab2 when the lab ends. Labs on
the two clusters do not compete for nodes. Every reservation and job a test makes is removed at the end.
"""

import re
import subprocess
import time
from datetime import UTC, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from courses.models import LabSession
from courses.services import lab_session_schedule
from jobs.dispatch import jobs_sync
from jobs.models import Job, Status
from jobs.tasks import labs_tick
from tests.behaviour_helpers import SLURM_ENV, reservation_text, slurm, wait_until
from tests.conftest import dispatch, wait_for_status
from tests.lab import slurm_tool

pytestmark = pytest.mark.slurm
LEFT_THE_LAB = "The lab session ended before the job started; it now waits in the normal queue."
State = LabSession.State


@pytest.fixture
def lab2(lab2, settings):
    """lab2 (tests/two_clusters.py), its nodes reservable for labs."""
    settings.LABQUEUE_RESERVABLE_NODES_BY_CLUSTER = {"lab2": ["gpu3", "gpu4"]}
    settings.LABQUEUE_RESERVATION_STRATEGY = "nodes"
    return lab2


def on_lab2(name: str) -> str:
    """`scontrol -M lab2 -o show reservation NAME`, or "" when lab2 has no such reservation."""
    return slurm("scontrol", "-M", "lab2", "-o", "show", "reservation", name, check=False).strip()


def gone(name: str) -> bool:
    for cluster in ("lab", "lab2"):
        slurm("scontrol", "-M", cluster, "delete", f"reservationname={name}", check=False)
    return f"ReservationName={name} " not in on_lab2(name) + reservation_text(name)


@pytest.fixture(autouse=True)
def cleanup(db, job_root):
    """Cancel the test's jobs on lab2 (and those it lists), then delete its labs' reservations on both clusters,
    even on failure."""
    extra_ids: list[str] = []
    yield extra_ids
    ids = extra_ids + list(Job.objects.exclude(slurm_job_id="").values_list("slurm_job_id", flat=True))
    if ids:
        slurm("scancel", "-M", "lab2", *ids, check=False)
    for session in LabSession.objects.all():
        name = session.reservation_name or f"lq-{session.course.slug}-{session.pk}"
        wait_until(lambda name=name: gone(name), timeout=30, what=f"reservation {name} to be deleted")


def lab_now(course, *, nodes: int = 1) -> LabSession:
    now = timezone.now()
    return lab_session_schedule(course=course, starts_at=now, ends_at=now + timedelta(minutes=30), nodes=nodes)


def end(session: LabSession) -> None:
    """Time passes: the lab is over."""
    now = timezone.now()
    LabSession.objects.filter(pk=session.pk).update(starts_at=now - timedelta(hours=1), ends_at=now)


def beat_until_over(job: Job, timeout: float = 60) -> Job:
    """Run what beat runs (the sync, the labs tick) until the job is over, or for `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not job.is_terminal and time.monotonic() < deadline:
        jobs_sync()
        labs_tick()
        job.refresh_from_db()
        time.sleep(0.5)
    return job


def squeue_on_lab2(job_id: str, field: str) -> str:
    return slurm("squeue", "-M", "lab2", "-h", "-j", job_id, "-o", field).strip()


def test_a_lab2_courses_lab_is_reserved_used_and_removed_on_lab2(client, student, course_on_lab2):
    session = lab_now(course_on_lab2)

    labs_tick()

    session.refresh_from_db()
    assert session.state == State.RESERVED and session.reserved_nodes in ("gpu3", "gpu4")
    shown = on_lab2(session.reservation_name)
    assert f"ReservationName={session.reservation_name} " in shown and "Accounts=cs102 " in shown
    assert f"Nodes={session.reserved_nodes} " in shown
    assert f"ReservationName={session.reservation_name} " not in reservation_text(session.reservation_name)

    client.force_login(student)
    form = {"param_SECONDS_TO_SLEEP": "20", "gpus": "1", "cpus": "1", "mem_mb": "500", "minutes": "5"}
    assert client.post(reverse("jobs:job-create", args=["cs102", "hello"]), form).status_code == 302
    job = dispatch(Job.objects.get())
    assert (job.cluster, job.reservation) == ("lab2", session.reservation_name)
    job = wait_for_status(job, Status.RUNNING)
    assert squeue_on_lab2(job.slurm_job_id, "%v|%N") == f"{session.reservation_name}|{session.reserved_nodes}"
    assert job.ran_on == "lab2"
    job = wait_for_status(job, Status.COMPLETED)
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert re.search(rf" {session.reserved_nodes} as student1\b", page)  # the job's output: it ran on the lab's node

    end(session)
    labs_tick()

    session.refresh_from_db()
    assert session.state == State.ENDED and not session.reservation_active
    assert f"ReservationName={session.reservation_name} " not in on_lab2(session.reservation_name)


def test_a_lab_on_lab_is_given_a_node_a_lab2_lab_holds_under_the_same_name(settings, course, course_on_lab2):
    """Two clusters may name their nodes alike: a lab2 lab holding its "gpu1" leaves lab's gpu1 free."""
    settings.LABQUEUE_RESERVABLE_NODES = ["gpu1"]
    now = timezone.now()
    LabSession.objects.create(
        course=course_on_lab2,
        starts_at=now - timedelta(minutes=5),
        ends_at=now + timedelta(minutes=30),
        nodes=1,
        state=State.RESERVED,
        reservation_active=True,
        reserved_nodes="gpu1",
    )
    session = lab_now(course)

    labs_tick()

    session.refresh_from_db()
    assert (session.state, session.reserved_nodes, session.message) == (State.RESERVED, "gpu1", "")
    assert "Nodes=gpu1 " in reservation_text(session.reservation_name)


def fill_on_lab2(node: str) -> str:
    """A research job on lab2 holding every GPU of `node`, started before the lab (which lets it finish)."""
    argv = ["runuser", "-u", "researcher1", "--", slurm_tool("sbatch"), "-M", "lab2", "--parsable", "--export=NONE"]
    argv += ["--account=research", "--partition=gpu", f"--nodelist={node}", "--gres=gpu:4", "--mem=500", "-t", "5"]
    argv += ["--job-name=lq-behaviour-fill", "--output=/dev/null", "--wrap=sleep 300"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd="/tmp", env=SLURM_ENV, check=True)
    return done.stdout.strip().split(";")[0]


def waiting_in_a_full_lab2_lab(client, student, course_on_lab2, settings, cleanup) -> tuple[LabSession, Job]:
    """A lab on lab2's gpu3, which a research job fills, and a student's job waiting in the lab's reservation."""
    settings.LABQUEUE_RESERVABLE_NODES_BY_CLUSTER = {"lab2": ["gpu3"]}
    fill = fill_on_lab2("gpu3")
    cleanup.append(fill)
    wait_until(lambda: squeue_on_lab2(fill, "%T") == "RUNNING", timeout=60, what="the research job to hold gpu3")
    session = lab_now(course_on_lab2)
    labs_tick()
    session.refresh_from_db()
    assert (session.state, session.reserved_nodes) == (State.RESERVED, "gpu3")
    client.force_login(student)
    form = {"param_SECONDS_TO_SLEEP": "0", "gpus": "1", "cpus": "1", "mem_mb": "500", "minutes": "5"}
    assert client.post(reverse("jobs:job-create", args=["cs102", "hello"]), form).status_code == 302
    job = dispatch(Job.objects.get())
    assert squeue_on_lab2(job.slurm_job_id, "%T|%v") == f"PENDING|{session.reservation_name}", "gpu3 is full"
    return session, job


def test_a_job_waiting_in_a_lab2_lab_that_ends_goes_back_to_lab2s_normal_queue_and_runs(
    client, student, course_on_lab2, settings, cleanup
):
    session, job = waiting_in_a_full_lab2_lab(client, student, course_on_lab2, settings, cleanup)

    # The lab's end comes, for the portal and for lab2: lab2 ends the reservation itself.
    end(session)
    ends = (timezone.now() + timedelta(seconds=2)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    slurm("scontrol", "-M", "lab2", "update", f"reservationname={session.reservation_name}", f"endtime={ends}")
    wait_until(
        lambda: f"ReservationName={session.reservation_name} " not in on_lab2(session.reservation_name),
        timeout=60,
        what="lab2 to end the reservation",
    )
    labs_tick()

    job.refresh_from_db()
    assert job.reservation == "" and squeue_on_lab2(job.slurm_job_id, "%v") in ("", "(null)")
    assert job.events.filter(cause=LEFT_THE_LAB).exists(), "the job's history says why it left the lab"
    job = beat_until_over(job)  # a held job is released by a tick
    assert (job.status, job.cluster) == (Status.COMPLETED, "lab2"), f"{job.slurm_state} {job.reason}"


def test_a_lab2_job_that_lab2_holds_after_the_portal_moved_it_out_of_the_lab_is_released_on_lab2(
    client, student, course_on_lab2, settings, cleanup
):
    """lab2 holds a pending job when it deletes a reservation the job was tied to (RESV_DEL_HOLD), and that can come
    after the portal moved the job out: the next tick releases it on lab2 (`scontrol -M lab2 release`), where the
    job is, and it runs there."""
    session, job = waiting_in_a_full_lab2_lab(client, student, course_on_lab2, settings, cleanup)
    end(session)
    ends = (timezone.now() + timedelta(seconds=2)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    slurm("scontrol", "-M", "lab2", "update", f"reservationname={session.reservation_name}", f"endtime={ends}")
    wait_until(lambda: squeue_on_lab2(job.slurm_job_id, "%T") == "RESV_DEL_HOLD", timeout=60, what="lab2 to hold it")
    # As the portal leaves a job it has moved: no longer tied to the lab.
    Job.objects.filter(pk=job.pk).update(reservation="")
    jobs_sync()
    job.refresh_from_db()
    assert job.slurm_state == "RESV_DEL_HOLD"

    job = beat_until_over(job)
    assert (job.status, job.cluster) == (Status.COMPLETED, "lab2"), f"{job.slurm_state} {job.reason}"


def test_a_job_waiting_in_a_lab2_lab_the_portal_ends_first_leaves_the_reservation_on_lab2_which_is_then_removed(
    client, student, course_on_lab2, settings, cleanup
):
    """The portal ends the lab while lab2's reservation still stands: the waiting job is moved out of it on lab2
    (`scontrol -M lab2`), so the reservation can be removed there and the job is not held: it runs on gpu4 with no
    further lab tick."""
    session, job = waiting_in_a_full_lab2_lab(client, student, course_on_lab2, settings, cleanup)

    end(session)
    labs_tick()

    job.refresh_from_db()
    assert job.reservation == "" and squeue_on_lab2(job.slurm_job_id, "%v") in ("", "(null)")
    session.refresh_from_db()
    assert session.state == State.ENDED and not session.reservation_active
    assert f"ReservationName={session.reservation_name} " not in on_lab2(session.reservation_name)
    assert wait_for_status(job, Status.COMPLETED, timeout=60).accounting["node_list"] == "gpu4"


def test_a_lab_reserved_on_lab2_is_removed_from_lab2_after_its_course_moved_to_lab(client, student, course_on_lab2):
    session = lab_now(course_on_lab2)
    labs_tick()
    session.refresh_from_db()
    assert (session.state, session.reserved_on) == (State.RESERVED, "lab2")
    course_on_lab2.cluster = ""  # the course moves to the portal's own cluster while its lab is reserved on lab2
    course_on_lab2.save()

    # Its jobs go to lab now, so not into the lab2 reservation (sbatch on lab would refuse it).
    client.force_login(student)
    form = {"param_SECONDS_TO_SLEEP": "0", "gpus": "1", "cpus": "1", "mem_mb": "500", "minutes": "5"}
    assert client.post(reverse("jobs:job-create", args=["cs102", "hello"]), form).status_code == 302
    job = dispatch(Job.objects.get())
    assert (job.status, job.cluster, job.reservation) == (Status.PENDING, "", "")

    end(session)
    labs_tick()

    session.refresh_from_db()
    assert session.state == State.ENDED and not session.reservation_active
    assert f"ReservationName={session.reservation_name} " not in on_lab2(session.reservation_name)
