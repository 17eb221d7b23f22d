"""A course bound to the site's other cluster, lab2 (scripts/labcluster up-lab2: gpu3 and gpu4, its own slurmctld,
lab's slurmdbd): its jobs are sent, followed, finished and cancelled on lab2 only, through `-M lab2`; while lab2's
controller is down, lab's courses go on as usual and lab2's pages say that cluster is not answering, then catch up.
"""

import pwd
import re
import subprocess
import time
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

import slurm
from jobs.dispatch import job_scancel, jobs_sync
from jobs.models import Heartbeat, Job, Status, cluster_heartbeat_name
from slurm import runner
from tests.conftest import dispatch, submitted, wait_for_status
from tests.lab import labcluster, slurm_tool

pytestmark = pytest.mark.slurm


def _submit_on_lab2(client, student, seconds: int = 0) -> Job:
    client.force_login(student)
    form = {"param_SECONDS_TO_SLEEP": str(seconds), "gpus": "1", "cpus": "1", "mem_mb": "500", "minutes": "5"}
    response = client.post(reverse("jobs:job-create", args=["cs102", "hello"]), form)
    assert response.status_code == 302, response.content.decode()[:2000]
    return Job.objects.filter(user=student, assignment__course__slug="cs102").latest("pk")


def _names_on(cluster: str | None) -> str:
    argv = [slurm_tool("squeue"), *(["-M", cluster] if cluster else []), "-h", "-a", "-t", "all", "-o", "%j"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True).stdout


def test_a_course_on_lab2_submits_syncs_and_cancels_on_lab2_only(client, student, course_on_lab2):
    job = dispatch(_submit_on_lab2(client, student))
    assert (job.cluster, job.status) == ("lab2", Status.PENDING)
    assert job.slurm_name in _names_on("lab2") and job.slurm_name not in _names_on(None)
    job = wait_for_status(job, Status.COMPLETED)
    assert job.exit_code == 0 and job.accounting["state"] == "COMPLETED"  # lab2's sacct, through -M
    client.force_login(student)
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "<dt>Cluster</dt><dd><code>lab2</code></dd>" in page
    assert re.search(r"gpu[34] as student1", page)  # lab2's nodes
    assert "Cluster <code>lab2</code>" in client.get(reverse("courses:course-detail", args=["cs102"])).content.decode()

    running = wait_for_status(dispatch(_submit_on_lab2(client, student, seconds=300)), Status.RUNNING)
    assert client.post(reverse("jobs:job-cancel", args=[running.uuid])).status_code == 302
    job_scancel(job_id=running.pk)  # what the worker's task does: scancel -M lab2, as the student
    cancelled = wait_for_status(running, Status.CANCELLED)
    assert cancelled.cancelled_by == str(pwd.getpwnam("student1").pw_uid)  # the student, as sacct -M lab2 says


def test_with_lab2_silent_lab_courses_go_on_and_lab2_pages_say_so_then_catch_up(
    client, student, assignment, course_on_lab2
):
    def course_page(slug: str) -> str:
        return client.get(reverse("courses:course-detail", args=[slug])).content.decode()

    waiting_on_lab2 = wait_for_status(dispatch(_submit_on_lab2(client, student, seconds=120)), Status.RUNNING)
    labcluster("lab2-ctld", "stop")
    try:
        # lab answers: a cs101 job is sent, followed and finished as ever, and the sync does not fail.
        on_lab = wait_for_status(dispatch(submitted(client, student)), Status.COMPLETED)
        assert on_lab.cluster == ""
        # lab2 does not: its job keeps its last status, a new one waits in the portal, its pages say why.
        with pytest.raises(slurm.SlurmUnavailable):
            dispatch(_submit_on_lab2(client, student))
        new_on_lab2 = Job.objects.filter(assignment__course__slug="cs102").latest("pk")
        assert new_on_lab2.status == Status.QUEUED
        Heartbeat.objects.filter(name=cluster_heartbeat_name("lab2")).update(at=timezone.now() - timedelta(seconds=10))
        jobs_sync()
        waiting_on_lab2.refresh_from_db()
        assert waiting_on_lab2.status == Status.RUNNING
        silent = "The cluster <code>lab2</code>, where this course's jobs run, is not answering the portal"
        assert silent in course_page("cs102") and "not answering the portal" not in course_page("cs101")
        assignment_page = client.get(reverse("jobs:assignment-detail", args=["cs102", "hello"])).content.decode()
        assert silent in assignment_page
    finally:
        labcluster("lab2-ctld", "start")
    # lab2 is back: the sync hears from it again, the job sent now reaches it, the pages stop warning.
    resent = wait_for_status(dispatch(new_on_lab2), Status.PENDING, Status.RUNNING, Status.COMPLETED)
    assert resent.cluster == "lab2" and resent.slurm_job_id
    wait_for_status(waiting_on_lab2, Status.RUNNING, Status.COMPLETED)
    assert "not answering the portal" not in course_page("cs102")
    cancel = [slurm_tool("scancel"), "-M", "lab2", waiting_on_lab2.slurm_job_id, resent.slurm_job_id]
    subprocess.run(cancel, check=False)


def test_one_cycle_asks_each_cluster_once_however_many_jobs(client, student, assignment, course_on_lab2, monkeypatch):
    """The sync's Slurm commands: one squeue per cluster whatever the number of jobs (constant per cluster)."""
    for _ in range(3):
        dispatch(_submit_on_lab2(client, student, seconds=60))
    dispatch(submitted(client, student))
    calls = []
    original = runner.run

    def counting(argv, **kwargs):
        calls.append(" ".join(argv[:3]) if argv[1] == "-M" else argv[0])
        return original(argv, **kwargs)

    monkeypatch.setattr(runner, "run", counting)
    jobs_sync()
    assert calls.count("squeue -M lab2") == 1 and calls.count("squeue") == 1
    for job in Job.objects.filter(assignment__course__slug="cs102"):
        subprocess.run([slurm_tool("scancel"), "-M", "lab2", job.slurm_job_id], check=False)


def test_doctor_checks_each_other_cluster_answers(lab2, settings):
    from ops.doctor import FAIL, OK, doctor_run

    def check():
        return next(result for result in doctor_run() if result.name == "other clusters")

    assert check().status == OK
    settings.LABQUEUE_SLURM_OTHER_CLUSTERS = ["lab2", "lab9"]
    result = check()
    assert result.status == FAIL and "lab9: not a cluster of this slurmdbd" in result.detail
    settings.LABQUEUE_SLURM_OTHER_CLUSTERS = ["lab2"]
    labcluster("lab2-ctld", "stop")
    try:
        result = check()
    finally:
        labcluster("lab2-ctld", "start")
    assert result.status == FAIL and "lab2: its controller does not answer" in result.detail


def _assoc(cluster: str, account: str, user: str) -> str:
    argv = [slurm_tool("sacctmgr"), "-n", "-P", "show", "assoc", "where", f"cluster={cluster}", f"account={account}"]
    rows = subprocess.run([*argv, f"user={user}", "format=MaxJobs,MaxSubmit"], capture_output=True, text=True).stdout
    return rows.strip()


def test_the_association_reconciliation_writes_a_lab2_courses_policy_on_lab2_only_and_then_has_nothing_to_do(
    course_on_lab2, student
):
    from clusterpolicy.associations import associations_reconcile

    course_on_lab2.max_running_jobs_per_student = 1
    course_on_lab2.max_queued_jobs_per_student = 2
    course_on_lab2.save()
    before_on_lab = _assoc("lab", "cs102", "student1")
    try:
        first = associations_reconcile(course_slugs=["cs102"], trigger="policy")
        assert first.errors == [] and first.changes
        assert all("cluster=lab2" in " ".join(change["argv"]) for change in first.changes)
        assert _assoc("lab2", "cs102", "student1") == "1|2"
        assert _assoc("lab", "cs102", "student1") == before_on_lab
        again = associations_reconcile(course_slugs=["cs102"], trigger="policy")
        assert again.changes == [] and again.errors == []
    finally:
        restore = [slurm_tool("sacctmgr"), "-i", "modify", "user", "where", "name=student1", "account=cs102"]
        subprocess.run([*restore, "cluster=lab2", "set", "MaxJobs=-1", "MaxSubmitJobs=-1"], check=False)


def test_the_usage_ingest_keeps_each_clusters_records_and_the_same_job_id_on_both_is_two_records(
    client, student, course_on_lab2
):
    from reports.ingest import usage_ingest
    from reports.models import UsageRecord

    job = wait_for_status(dispatch(_submit_on_lab2(client, student)), Status.COMPLETED)
    usage_ingest()
    on_lab2 = UsageRecord.objects.filter(cluster="lab2")
    deadline = time.monotonic() + 30
    # As the periodic task does: a job that ended in the very second of a cycle's end is in the next cycle's
    # window (sacct -E takes whole seconds; each cycle reads an overlap again).
    while not on_lab2.filter(slurm_job_id=job.slurm_job_id).exists() and time.monotonic() < deadline:
        usage_ingest(other_cluster="lab2")
        time.sleep(0.5)
    assert on_lab2.filter(slurm_job_id=job.slurm_job_id, job=job).exists()  # linked to the portal's job
    assert not UsageRecord.objects.filter(cluster="lab", job=job).exists()
    # Both clusters count their job ids from 1 (lab's first job is scripts/labcluster's smoke test).
    both = set(on_lab2.values_list("slurm_job_id", flat=True)) & set(
        UsageRecord.objects.filter(cluster="lab").values_list("slurm_job_id", flat=True)
    )
    assert both
    shared = both.pop()
    assert set(UsageRecord.objects.filter(slurm_job_id=shared).values_list("cluster", flat=True)) == {"lab", "lab2"}


def test_a_lab2_job_whose_sbatch_answer_was_lost_is_adopted_by_name_on_lab2_not_sent_twice(
    client, student, course_on_lab2
):
    job = dispatch(_submit_on_lab2(client, student, seconds=60))
    slurm_id = job.slurm_job_id
    # sbatch succeeded but its answer was lost: the task gave the job back to the queue to try again.
    Job.objects.filter(pk=job.pk).update(status=Status.QUEUED, slurm_job_id="", slurm_state="")

    job = dispatch(job)  # Celery's retry of the same task asks lab2 (not lab) by name first
    try:
        assert (job.status, job.slurm_job_id, job.submit_attempts) == (Status.PENDING, slurm_id, 1)
        assert _names_on("lab2").split().count(job.slurm_name) == 1, "lab2 holds exactly one job of this name"
    finally:
        job_scancel(job_id=job.pk)
