"""A lab session on a full cluster: the course's jobs start on its reserved node while other work waits.

Fills the cluster's 8 GPUs with researcher1 jobs (account research), queues more research work,
starts a lab for a cs102 course, and submits class jobs through the portal. Wait times are printed
to the test output. Everything this test makes is cancelled or deleted at the end.
"""

import time
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from clusterpolicy.labs import labs_tick
from courses.models import Assignment, Course, Enrollment, LabSession, Role
from courses.services import lab_session_schedule
from jobs.dispatch import jobs_sync
from jobs.models import Job, Status
from slurm import reservations, runner
from tests.behaviour_helpers import research_job
from tests.conftest import dispatch, make_user, submit_form, wait_for_status

pytestmark = pytest.mark.slurm

FILL_SECONDS = 40


def competing_job(seconds: int) -> str:
    return research_job(seconds=seconds, minutes=3, name="lq-competing")


def squeue(ids: list[str]) -> dict[str, dict]:
    out = runner.run(
        ["squeue", "-h", "-t", "all", "-j", ",".join(ids), "-o", "%i|%T|%r|%V|%S|%N"],
        env_extra={"SLURM_TIME_FORMAT": "%s"},
    )
    rows = {}
    for line in out.splitlines():
        job_id, state, reason, submit, start, nodes = line.split("|")
        rows[job_id] = {
            "state": state,
            "reason": reason,
            "submit": int(submit),
            "start": int(start) if start.isdigit() else None,
            "nodes": nodes,
        }
    return rows


def cluster_full(fill: list[str]) -> bool:
    """All fill jobs run, or some wait for Resources (other tests' jobs may hold GPUs too)."""
    rows = squeue(fill).values()
    running = [row for row in rows if row["state"] == "RUNNING"]
    waiting = [row for row in rows if row["state"] == "PENDING" and row["reason"] in ("Resources", "Priority")]
    return len(running) == len(fill) or (running and len(running) + len(waiting) == len(fill) and waiting)


def wait(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(1)
    return value


def test_class_jobs_start_inside_the_lab_while_other_work_waits(db, client, capsys):
    def say(*parts) -> None:
        """Wait times go to the test output even when pytest captures it."""
        with capsys.disabled():
            print(*parts)

    course = Course.objects.create(
        slug="lab102",
        code="CS102",
        title="Lab course",
        term="Fall",
        slurm_account="cs102",
        partition="gpu",
        max_minutes_per_job=10,
    )
    Assignment.objects.create(
        course=course,
        slug="train",
        title="Train",
        script_template="echo lab\nsleep 10\n",
        gpus=1,
        cpus=1,
        mem_mb=500,
        minutes=5,
    )
    student = make_user("student4", "student4")
    Enrollment.objects.create(user=student, course=course, role=Role.STUDENT)
    fill, later, session = [], [], None
    try:
        fill = [competing_job(FILL_SECONDS) for _ in range(8)]
        wait(lambda: cluster_full(fill), 90, "the fill jobs to take every free GPU")
        say("\nfill:", {job_id: (row["state"], row["nodes"] or row["reason"]) for job_id, row in squeue(fill).items()})
        filled_at = time.time()
        later = [competing_job(60) for _ in range(8)]
        wait(
            lambda: all(row["reason"] in ("Priority", "Resources") for row in squeue(later).values()),
            30,
            "the scheduler to look at the research jobs queued after the fill",
        )
        say("queued after the fill:", {job_id: (row["state"], row["reason"]) for job_id, row in squeue(later).items()})
        assert all(row["state"] == "PENDING" for row in squeue(later).values()), "the cluster is full"

        now = timezone.now()
        session = lab_session_schedule(course=course, starts_at=now, ends_at=now + timedelta(minutes=15), nodes=1)
        assert labs_tick()["reserved"] == 1
        session.refresh_from_db()
        reservation = reservations.reservation_list()[session.reservation_name]
        assert reservation.accounts == "cs102" and reservation.nodes in ("gpu1", "gpu2")
        say(f"\nlab reservation {reservation.name} on {reservation.nodes} ({reservation.flags})")

        client.force_login(student)
        jobs = []
        for _ in range(2):
            client.post(reverse("jobs:job-create", args=["lab102", "train"]), submit_form(gpus="1", minutes="5"))
            jobs.append(dispatch(Job.objects.latest("created_at")))
        assert all(job.status == Status.PENDING and job.reservation == session.reservation_name for job in jobs)

        def class_jobs_running() -> bool:
            jobs_sync()
            return all(Job.objects.get(pk=job.pk).status in (Status.RUNNING, Status.COMPLETED) for job in jobs)

        wait(class_jobs_running, 180, "the class jobs to start in the lab")
        waiting = squeue(later)
        class_rows = squeue([Job.objects.get(pk=job.pk).slurm_job_id for job in jobs])
        still_waiting = [job_id for job_id, row in waiting.items() if row["state"] == "PENDING"]
        say(
            f"cluster filled at {datetime.fromtimestamp(filled_at, tz=UTC):%H:%M:%S} with 8 research jobs "
            f"of {FILL_SECONDS} s"
        )
        for job_id, row in class_rows.items():
            say(f"class job {job_id}: waited {row['start'] - row['submit']} s, runs on {row['nodes']} in the lab")
        now_epoch = int(time.time())
        for job_id, row in sorted(waiting.items()):
            if row["start"] and row["state"] != "PENDING":
                say(
                    f"research job {job_id} (queued before the class jobs): waited {row['start'] - row['submit']} s,"
                    f" runs on {row['nodes']}"
                )
            else:
                say(
                    f"research job {job_id} (queued before the class jobs): still waiting after "
                    f"{now_epoch - row['submit']} s ({row['reason']})"
                )
        assert all(row["nodes"] == reservation.nodes for row in class_rows.values())
        assert still_waiting, "research work queued before the class jobs still waits while they run"
        assert not any(row["nodes"] == reservation.nodes for row in waiting.values() if row["state"] == "RUNNING")

        page = client.get(reverse("jobs:job-detail", args=[jobs[0].uuid])).content.decode()
        assert f"Running under the lab reservation <code>{session.reservation_name}</code>" in page or (
            f"Sent to the lab reservation <code>{session.reservation_name}</code>" in page
        )

        LabSession.objects.filter(pk=session.pk).update(starts_at=now - timedelta(hours=1), ends_at=timezone.now())
        if any(Job.objects.get(pk=job.pk).status == Status.RUNNING for job in jobs):
            assert labs_tick() == {"reserved": 0, "ended": 1, "released": 0}
            session.refresh_from_db()
            say(f"lab ended with class jobs running: {session.message}")
            assert "in use" in session.message
        for job in jobs:
            wait_for_status(job, Status.COMPLETED)
        assert labs_tick()["released"] == 1
        assert session.reservation_name not in reservations.reservation_list()
    finally:
        ids = fill + later + list(Job.objects.exclude(slurm_job_id="").values_list("slurm_job_id", flat=True))
        if ids:
            runner.run(["scancel", *ids])
        if session is not None and session.reservation_name:
            reservations.reservation_delete(session.reservation_name)
