"""The worker's `labs_tick` task makes a lab's Slurm reservation before it starts and removes it afterwards.

Labs are scheduled and cancelled through the instructor's pages; the task is the one Celery beat runs.
Every reservation and job a test makes is deleted or cancelled at the end.
"""

import time
from datetime import UTC, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from courses.models import Assignment, LabSession
from jobs.dispatch import jobs_sync
from jobs.models import Job, JobEvent, Status
from jobs.tasks import job_dispatch, labs_tick
from slurm.runner import command_log
from tests.behaviour_helpers import (
    cancel_slurm_jobs,
    research_job,
    reservation_text,
    slurm,
    squeue_field,
    wait_until,
)
from tests.conftest import cancel_jobs_under, job_row, submit_form, wait_for_status

pytestmark = pytest.mark.slurm
LEFT_THE_LAB = "The lab session ended before the job started; it now waits in the normal queue."
State = LabSession.State


@pytest.fixture(autouse=True)
def utc(settings):
    settings.TIME_ZONE = "UTC"


@pytest.fixture(autouse=True)
def cleanup(db, job_root):
    """Cancel the test's jobs (and those it lists), then delete its labs' reservations, even on failure."""
    extra_ids: list[str] = []
    try:
        yield extra_ids
    finally:
        cancel_slurm_jobs(ids=extra_ids)
        cancel_jobs_under(job_root)  # a portal job still waiting in a reservation keeps it in use
        for session in LabSession.objects.all():
            name = session.reservation_name or f"lq-{session.course.slug}-{session.pk}"
            # A reservation is "in use" until the cancelled jobs in it are gone.
            wait_until(lambda name=name: deleted(name), timeout=30, what=f"reservation {name} to be deleted")


def deleted(name: str) -> bool:
    slurm("scontrol", "delete", f"reservationname={name}", check=False)
    return f"ReservationName={name} " not in reservation_text(name)


def schedule(client, instructor, *, starts_in: timedelta, minutes: int = 60) -> LabSession:
    start = timezone.now() + starts_in
    form = {
        "starts_at": start.strftime("%Y-%m-%dT%H:%M"),
        "ends_at": (start + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M"),
        "nodes": "1",
    }
    client.force_login(instructor)
    response = client.post(reverse("courses:lab-list", args=["cs101"]), form)
    assert response.status_code == 302, response.content.decode()
    return LabSession.objects.get()


def end(session: LabSession) -> None:
    """Time passes: the lab is over."""
    now = timezone.now()
    LabSession.objects.filter(pk=session.pk).update(starts_at=now - timedelta(hours=1), ends_at=now)


def test_labs_tick_reserves_a_lab_starting_soon_and_removes_the_reservation_after_it_ends(client, instructor):
    session = schedule(client, instructor, starts_in=timedelta(minutes=30))
    assert f"ReservationName=lq-cs101-{session.pk} " not in reservation_text(f"lq-cs101-{session.pk}")

    labs_tick()

    session.refresh_from_db()
    assert session.state == State.RESERVED and session.reservation_active
    assert session.reservation_name == f"lq-cs101-{session.pk}"
    shown = reservation_text(session.reservation_name)
    assert f"ReservationName={session.reservation_name} " in shown
    assert "Accounts=cs101 " in shown and f"Nodes={session.reserved_nodes} " in shown
    assert session.reserved_nodes in ("gpu1", "gpu2")
    page = client.get(reverse("courses:lab-list", args=["cs101"])).content.decode()
    assert "Reserved on the cluster" in page and session.reservation_name in page

    end(session)
    labs_tick()

    session.refresh_from_db()
    assert session.state == State.ENDED and not session.reservation_active
    assert f"ReservationName={session.reservation_name} " not in reservation_text(session.reservation_name)


def test_labs_tick_leaves_a_lab_further_ahead_than_the_reserve_window_alone(client, instructor, settings):
    settings.LABQUEUE_LAB_RESERVE_AHEAD_MINUTES = 60
    session = schedule(client, instructor, starts_in=timedelta(hours=3))

    labs_tick()

    session.refresh_from_db()
    assert session.state == State.SCHEDULED and not session.reservation_active and not session.reservation_name
    assert f"ReservationName=lq-cs101-{session.pk} " not in reservation_text(f"lq-cs101-{session.pk}")


def test_labs_tick_removes_the_reservation_of_a_lab_the_instructor_cancels(client, instructor):
    session = schedule(client, instructor, starts_in=timedelta(minutes=20))
    labs_tick()
    session.refresh_from_db()
    assert f"ReservationName={session.reservation_name} " in reservation_text(session.reservation_name)

    response = client.post(reverse("courses:lab-cancel", args=["cs101", session.uuid]))
    assert response.status_code == 302
    labs_tick()

    session.refresh_from_db()
    assert session.state == State.CANCELLED and not session.reservation_active
    assert f"ReservationName={session.reservation_name} " not in reservation_text(session.reservation_name)


def test_a_reservation_slurm_refuses_is_recorded_and_shown_on_the_labs_page(client, instructor, settings):
    settings.LABQUEUE_RESERVABLE_NODES = ["gpu9"]  # Slurm has no such node
    session = schedule(client, instructor, starts_in=timedelta(minutes=10))

    labs_tick()

    session.refresh_from_db()
    assert session.state == State.FAILED and not session.reservation_active
    assert session.message.startswith("Slurm refused the reservation:")
    assert "invalid node name" in session.message.lower()
    page = client.get(reverse("courses:lab-list", args=["cs101"]))
    assert page.status_code == 200
    text = page.content.decode()
    assert "Could not be reserved" in text and "Slurm refused the reservation" in text
    labs_tick()
    again = LabSession.objects.get(pk=session.pk)
    assert (again.state, again.message) == (State.FAILED, session.message), "a refused lab is not tried again"


def test_a_job_sent_again_during_a_lab_is_recorded_as_waiting_in_the_labs_reservation(
    client, instructor, student, assignment
):
    session = schedule(client, instructor, starts_in=timedelta(minutes=-1), minutes=30)
    labs_tick()
    session.refresh_from_db()
    assert session.state == State.RESERVED
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    job = Job.objects.get()
    Job.objects.filter(pk=job.pk).update(submit_attempts=1)  # its first attempt never reached Slurm

    job_dispatch(job.pk)

    job.refresh_from_db()
    assert job.status == Status.PENDING and job.submit_attempts == 2
    assert squeue_field(job.slurm_job_id, "%v") == session.reservation_name
    assert job.reservation == session.reservation_name, "so the lab's end moves it out if it still waits"
    accepted = f"Accepted by Slurm as job {job.slurm_job_id}. It runs in the lab session's reservation "
    assert job.events.filter(cause=accepted + f"{session.reservation_name}.").exists(), "its history says so"


def fill_node(node: str) -> str:
    """A research job holding every GPU of `node` (started before the lab, so the lab lets it finish)."""
    return research_job(gpus=4, node=node, name="lq-behaviour-fill")


@pytest.fixture
def waiting_in_lab(client, instructor, student, assignment, settings, cleanup) -> tuple[LabSession, Job]:
    """A lab on gpu1, whose GPUs a research job holds, and a student's job waiting in the lab's reservation."""
    settings.LABQUEUE_RESERVABLE_NODES = ["gpu1"]
    fill = fill_node("gpu1")
    cleanup.append(fill)
    wait_until(lambda: squeue_field(fill, "%T") == "RUNNING", timeout=60, what="the research job to hold gpu1")
    session = schedule(client, instructor, starts_in=timedelta(minutes=-1), minutes=30)
    labs_tick()
    session.refresh_from_db()
    assert session.state == State.RESERVED and session.reserved_nodes == "gpu1"

    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    job = Job.objects.get()
    job_dispatch(job.pk)
    job.refresh_from_db()
    assert job.status == Status.PENDING and job.reservation == session.reservation_name
    assert squeue_field(job.slurm_job_id, "%v") == session.reservation_name
    assert squeue_field(job.slurm_job_id, "%T") == "PENDING", "gpu1's GPUs are all taken"
    return session, job


def assert_back_in_the_normal_queue_and_runs(session: LabSession, job: Job) -> None:
    job.refresh_from_db()
    assert job.reservation == ""
    assert squeue_field(job.slurm_job_id, "%v") in ("", "(null)"), "Slurm no longer ties the job to the lab"
    assert job.events.filter(cause=LEFT_THE_LAB).exists(), "the job's history says why it left the lab"
    session.refresh_from_db()
    assert not session.reservation_active
    assert f"ReservationName={session.reservation_name} " not in reservation_text(session.reservation_name)
    job = beat_until_over(job)
    assert job.status == Status.COMPLETED, f"the job ran in the normal queue ({job.slurm_state} {job.reason})"


def beat_until_over(job: Job, timeout: float = 60) -> Job:
    """Run what beat runs (the sync, the labs tick) until the job is over. Slurm may hold a job moved out of a
    lab when the reservation's deletion races the move (RESV_DEL_HOLD); the next tick releases it."""
    deadline = time.monotonic() + timeout
    while True:
        jobs_sync()
        labs_tick()
        job.refresh_from_db()
        if job.is_terminal or time.monotonic() > deadline:
            return job
        time.sleep(0.5)


def test_a_job_still_waiting_when_the_lab_ends_goes_back_to_the_normal_queue_and_runs(waiting_in_lab):
    session, job = waiting_in_lab
    # The lab's end comes, for the portal and for Slurm: Slurm ends the reservation itself.
    end(session)
    ends = (timezone.now() + timedelta(seconds=2)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    slurm("scontrol", "update", f"reservationname={session.reservation_name}", f"endtime={ends}")
    wait_until(
        lambda: f"ReservationName={session.reservation_name} " not in reservation_text(session.reservation_name),
        timeout=60,
        what="Slurm to end the reservation",
    )

    labs_tick()

    session.refresh_from_db()
    assert session.state == State.ENDED
    assert_back_in_the_normal_queue_and_runs(session, job)


def test_a_job_slurm_holds_after_the_portal_moved_it_out_of_the_lab_is_released_by_the_next_tick(waiting_in_lab):
    """Slurm holds a pending job when it deletes a reservation the job was tied to (RESV_DEL_HOLD), and that can
    come after the portal moved the job out (the deletion raced the move): the next tick releases it."""
    session, job = waiting_in_lab
    end(session)
    ends = (timezone.now() + timedelta(seconds=2)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    slurm("scontrol", "update", f"reservationname={session.reservation_name}", f"endtime={ends}")
    wait_until(lambda: squeue_field(job.slurm_job_id, "%T") == "RESV_DEL_HOLD", timeout=60, what="Slurm to hold it")
    # As the portal leaves a job it has moved: no longer tied to the lab.
    Job.objects.filter(pk=job.pk).update(reservation="")
    jobs_sync()
    job.refresh_from_db()
    assert job.slurm_state == "RESV_DEL_HOLD"

    job = beat_until_over(job)
    assert job.status == Status.COMPLETED, f"the job ran in the normal queue ({job.slurm_state} {job.reason})"


def test_a_job_still_waiting_when_the_instructor_cancels_the_lab_goes_back_to_the_normal_queue_and_runs(
    client, instructor, waiting_in_lab
):
    session, job = waiting_in_lab
    # A job that already ran in the lab keeps its record: only jobs still waiting for it are moved.
    ran = job_row(
        job.user, job.assignment, status=Status.COMPLETED, slurm_job_id="999999", reservation=session.reservation_name
    )
    # So does a job waiting for another lab's reservation.
    other = job_row(
        job.user, job.assignment, status=Status.PENDING, slurm_job_id="999998", reservation="lq-cs101-other-lab"
    )
    fields = ("status", "slurm_job_id", "reservation", "updated_at")
    before = {pk: Job.objects.filter(pk=pk).values(*fields).get() for pk in (ran.pk, other.pk)}
    client.force_login(instructor)
    assert client.post(reverse("courses:lab-cancel", args=["cs101", session.uuid])).status_code == 302

    labs_tick()

    session.refresh_from_db()
    assert session.state == State.CANCELLED and session.message == ""
    assert_back_in_the_normal_queue_and_runs(session, job)
    assert {pk: Job.objects.filter(pk=pk).values(*fields).get() for pk in (ran.pk, other.pk)} == before
    assert not JobEvent.objects.filter(job__in=[ran, other]).exists()


def test_a_lab_cancelled_while_a_students_job_runs_in_it_keeps_its_reservation_until_the_job_ends(
    client, instructor, student, course, cleanup
):
    """Slurm refuses to remove a reservation a job runs in: the lab says so, its running job is left as it is,
    and each tick asks Slurm once (not again after finding no waiting job to move)."""
    Assignment.objects.create(course=course, slug="long", title="Long", script_template="sleep 300\n", gpus=0)
    session = schedule(client, instructor, starts_in=timedelta(minutes=-1), minutes=30)
    labs_tick()
    session.refresh_from_db()
    assert session.state == State.RESERVED
    client.force_login(student)
    assert client.post(reverse("jobs:job-create", args=["cs101", "long"]), submit_form(gpus="0")).status_code == 302
    job = Job.objects.get()
    job_dispatch(job.pk)
    job.refresh_from_db()
    cleanup.append(job.slurm_job_id)
    job = wait_for_status(job, Status.RUNNING)
    assert job.reservation == session.reservation_name
    client.force_login(instructor)
    assert client.post(reverse("courses:lab-cancel", args=["cs101", session.uuid])).status_code == 302

    with command_log() as commands:
        labs_tick()

    session.refresh_from_db()
    assert session.state == State.CANCELLED and session.reservation_active
    assert session.message.startswith("The reservation is removed once the jobs still running in it end (Slurm: ")
    assert len([command for command in commands if "delete" in command.argv]) == 1
    job.refresh_from_db()
    assert (job.status, job.reservation) == (Status.RUNNING, session.reservation_name)
    assert squeue_field(job.slurm_job_id, "%v") == session.reservation_name
    assert not JobEvent.objects.filter(job=job, cause__contains="normal queue").exists()


def test_a_tick_releases_only_jobs_slurm_holds_that_the_portal_already_moved_out_of_their_lab(student, assignment):
    """`scontrol release` goes only to jobs Slurm holds (RESV_DEL_HOLD) and the portal has moved out of their lab:
    not to jobs merely waiting, nor to one still tied to its lab (moving it out comes first, jobs_leave_ended_labs),
    nor to one that is over in the portal, so a tick with no such job runs no release at all."""
    job_row(student, assignment, status=Status.PENDING, slurm_job_id="999991", slurm_state="PENDING")
    job_row(
        student,
        assignment,
        status=Status.PENDING,
        slurm_job_id="999992",
        slurm_state="RESV_DEL_HOLD",
        reservation="lq-cs101-still-tied",
    )
    # Over in the portal (the student cancelled it) while its last recorded Slurm state was the hold.
    job_row(student, assignment, status=Status.CANCELLED, slurm_job_id="999994", slurm_state="RESV_DEL_HOLD")

    with command_log() as commands:
        labs_tick()

    assert [command.argv for command in commands if "release" in command.argv] == []

    job_row(student, assignment, status=Status.PENDING, slurm_job_id="999993", slurm_state="RESV_DEL_HOLD")
    with command_log() as commands:
        labs_tick()

    assert [command.argv[-2:] for command in commands if "release" in command.argv] == [["release", "999993"]]
