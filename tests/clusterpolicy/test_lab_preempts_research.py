"""A lab starts on time on a cluster full of research work: a site with preemption (LABQUEUE_LAB_QOS).

Research jobs in the preemptable QOS `research` (submitted with --requeue, as the lab's research user under
an account this test makes) hold every GPU of both nodes. A lab starting now gets its reservation from the
labs tick; the reconciliation grants the course's students the lab QOS `coursework`; class jobs sent through
the portal run in the lab within seconds, and the research jobs on the lab's node are requeued, not lost:
`sacct -D` shows their first run PREEMPTED and a later run that completes. Everything this test makes
(jobs, reservation, accounts) is removed at the end.
"""

import re
import subprocess
import time
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from clusterpolicy.associations import associations_reconcile
from clusterpolicy.labs import labs_tick
from courses.models import Assignment, Course, Enrollment, LabSession, Role
from courses.services import lab_session_schedule
from jobs.models import Job, Status
from tests.behaviour_helpers import SLURM_ENV, account_deleted, cancel_slurm_jobs, reservation_text, slurm, wait_until
from tests.conftest import cancel_jobs_under, dispatch, make_user, submit_form, wait_for_status
from tests.lab import slurm_tool

pytestmark = pytest.mark.slurm

COURSE_ACCOUNT = "lqpreemptlab"
RESEARCH_ACCOUNT = "lqpreemptrsch"
RESEARCHER = "researcher1"  # the lab's research user (scripts/labcluster)
RESEARCH_SECONDS = 60  # long enough that a class job waiting for them would wait far over the 30 s a lab allows
# A requeued run (SLURM_RESTART_COUNT) ends at once: the test waits for it to run again, not for its work.
RESEARCH_SCRIPT = f'[ "${{SLURM_RESTART_COUNT:-0}}" -gt 0 ] || sleep {RESEARCH_SECONDS}'


def strategy() -> str:
    """How the lab reserves on the cluster under test: GPUs by count from Slurm 23.11 on (as the README advises;
    `make test-slurm24`), whole nodes before (`make test`)."""
    found = re.search(r"(\d+)\.(\d+)", slurm("sinfo", "--version"))
    assert found, "sinfo --version printed no version"
    return "gpus" if (int(found[1]), int(found[2])) >= (23, 11) else "nodes"


def research_job(index: int) -> str:
    """One GPU of research work in the preemptable QOS, requeueable; its Slurm job id."""
    argv = [
        *("runuser", "-u", RESEARCHER, "--", slurm_tool("sbatch"), "--parsable", "--export=NONE"),
        *(f"--account={RESEARCH_ACCOUNT}", "--qos=research", "--requeue", "--partition=gpu"),
        *("--gres=gpu:1", "--cpus-per-task=1", "--mem=500", "-t", "5", f"--job-name=lq-preemptable-{index}"),
        *("--output=/dev/null", f"--wrap={RESEARCH_SCRIPT}"),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd="/tmp", env=SLURM_ENV, check=True)
    return done.stdout.strip().split(";")[0]


def runs(job_id: str) -> list[str]:
    """The states of every run of the job, first run first (`sacct -D`: one record per run)."""
    out = slurm("sacct", "-D", "-X", "-n", "-P", "-j", job_id, "-S", "2000-01-01", "-o", "JobID,State")
    return [line.split("|")[1].split()[0] for line in out.splitlines() if line.split("|")[0] == job_id]


def running(ids: list[str]) -> list[str]:
    out = slurm("squeue", "-h", "-t", "RUNNING", "-j", ",".join(ids), "-o", "%i")
    return out.split()


@pytest.fixture
def research_account():
    """An account for research work whose users may ask for the preemptable QOS; removed at the end."""
    slurm("sacctmgr", "-i", "add", "account", RESEARCH_ACCOUNT, "cluster=lab", "description=preemptable research")
    slurm("sacctmgr", "-i", "add", "user", RESEARCHER, f"account={RESEARCH_ACCOUNT}", "cluster=lab")
    slurm("sacctmgr", "-i", "modify", "account", RESEARCH_ACCOUNT, "where", "cluster=lab", "set", "qos+=research")
    yield RESEARCH_ACCOUNT


@pytest.fixture
def cleanup(db, job_root):
    """Cancel every job, delete the reservation and both accounts, even on failure."""
    research: list[str] = []
    try:
        yield research
    finally:
        cancel_slurm_jobs(ids=research)
        cancel_jobs_under(job_root)
        for name in LabSession.objects.exclude(reservation_name="").values_list("reservation_name", flat=True):
            wait_until(lambda name=name: gone(name), timeout=60, what=f"reservation {name} to be deleted")
        for account in (COURSE_ACCOUNT, RESEARCH_ACCOUNT):
            # Slurm keeps an account while jobs of it are still in the queue ("Job(s) active").
            wait_until(lambda account=account: account_deleted(account), timeout=60, what=f"account {account} gone")


def start_now(job_id: str) -> bool:
    """The requeued job waits in the queue again: let it start as soon as a GPU is free (no BeginTime delay)."""
    if slurm("squeue", "-h", "-j", job_id, "-o", "%T").strip() != "PENDING":
        return False
    slurm("scontrol", "update", f"jobid={job_id}", "starttime=now")
    return True


def gone(reservation: str) -> bool:
    slurm("scontrol", "delete", f"reservationname={reservation}", check=False)
    return f"ReservationName={reservation} " not in reservation_text(reservation)


def test_a_lab_starting_on_a_cluster_full_of_research_work_runs_its_jobs_at_once(
    client, settings, research_account, cleanup
):
    settings.LABQUEUE_LAB_QOS = "coursework"
    settings.LABQUEUE_RESERVATION_STRATEGY = strategy()
    course = Course.objects.create(
        slug="lab-preempt", code="CS190", title="Lab", term="Fall", slurm_account=COURSE_ACCOUNT, partition="gpu"
    )
    Assignment.objects.create(
        course=course, slug="train", title="Train", script_template="echo lab\nsleep 5\n", gpus=1, cpus=1, mem_mb=500
    )
    student = make_user("student4", "student4")
    Enrollment.objects.create(user=student, course=course, role=Role.STUDENT)
    run = associations_reconcile(course_slugs=[course.slug], trigger="test")
    assert not run.errors, run.errors
    qos = slurm("sacctmgr", "-n", "-P", "show", "assoc", f"account={COURSE_ACCOUNT}", "user=student4", "format=qos")
    assert "coursework" in qos.split(","), "the reconciliation lets the course's students use the lab QOS"

    research = cleanup
    research += [research_job(index) for index in range(8)]
    wait_until(lambda: len(running(research)) == 8, timeout=60, what="research work on all 8 GPUs")

    now = timezone.now()
    # A node, or 2 GPUs by count: on 24.11 the lab cluster's gres.conf has one line per GPU for that to work.
    session = lab_session_schedule(course=course, starts_at=now, ends_at=now + timedelta(minutes=20), nodes=1, gpus=2)
    assert labs_tick()["reserved"] == 1
    session.refresh_from_db()

    client.force_login(student)
    jobs = []
    for _ in range(2):
        client.post(reverse("jobs:job-create", args=[course.slug, "train"]), submit_form(gpus="1", minutes="5"))
        jobs.append(dispatch(Job.objects.latest("created_at")))
    assert all(job.reservation == session.reservation_name for job in jobs)
    submitted = time.monotonic()

    # Without preemption they would wait for the research jobs' end (RESEARCH_SECONDS); a lab allows 30 s.
    for job in jobs:
        wait_for_status(job, Status.RUNNING, Status.COMPLETED, timeout=30 - (time.monotonic() - submitted))
    for job in jobs:
        # squeue: sacct may still say "Unknown" for a job that just started (22.05)
        qos = slurm("squeue", "-h", "-t", "all", "-j", job.slurm_job_id, "-o", "%q").split()
        assert qos == ["coursework"], "lab jobs are sent with the site's lab QOS"
    preempted = [job_id for job_id in research if runs(job_id)[:1] == ["PREEMPTED"]]
    assert 1 <= len(preempted) <= 2, "as many research jobs as the class needs GPUs make way, no more"

    # Requeued, not lost: each waits again in the queue (Slurm's requeue delay, BeginTime 120 s, which an
    # operator may cut short and the test does), then runs again outside the lab.
    for job_id in preempted:
        wait_until(lambda job_id=job_id: start_now(job_id), timeout=60, what=f"research job {job_id} requeued")

    def finished() -> bool:
        return all(runs(job_id)[-1:] == ["COMPLETED"] for job_id in research)

    wait_until(finished, timeout=330, interval=3, what="the research jobs to finish, the preempted ones run again")
    for job_id in preempted:
        assert runs(job_id) == ["PREEMPTED", "COMPLETED"], f"research job {job_id} ran again to the end"
    for job in jobs:
        assert wait_for_status(job, Status.COMPLETED).status == Status.COMPLETED
