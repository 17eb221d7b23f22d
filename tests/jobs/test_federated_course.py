"""A course bound to the federation labfed of lab and lab2 (LABQUEUE_SLURM_FEDERATION; scripts/labcluster
federation-on): its jobs are sent without -M and run on whichever cluster can start them first, the job page says
where; the other courses' jobs carry -M <their cluster> and stay there; the course's associations are written on
both clusters. The federation is on only inside a test, and every job a test started is cancelled after it.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from courses.models import Course, LabSession
from courses.services import lab_session_schedule
from jobs.dispatch import job_scancel, jobs_sync
from jobs.models import Job, Status
from slurm import SlurmUnavailable, runner
from tests.conftest import dispatch, submitted, wait_for_status
from tests.lab import lab_slurm_conf, labcluster, slurm_tool
from tests.slurm.helpers import wait_for
from tests.two_clusters import course_bound_to

pytestmark = pytest.mark.slurm

FEDERATION = "labfed"
LAB2_NODES = {"gpu3", "gpu4"}


def tool(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([slurm_tool(name), *args], capture_output=True, text=True, timeout=60)


def rows_of(job_id: str) -> set[tuple[str, str, str]]:
    """(cluster, state, clusters it may run on) of every row `squeue -M all` prints for the job id."""
    answer = tool("squeue", "-M", "all", "-h", "-j", job_id, "-O", "Cluster:|,JobID:|,State:|,SiblingsViable:|")
    rows = [line.split("|") for line in answer.stdout.splitlines() if line.count("|") >= 4]
    return {(cluster.strip(), state.strip(), viable.strip()) for cluster, row_id, state, viable, *_ in rows}


@pytest.fixture
def lab2(lab2, settings) -> str:
    """lab2 (tests/two_clusters.py), in the federation FEDERATION with lab."""
    settings.LABQUEUE_SLURM_FEDERATION = FEDERATION
    return lab2


@pytest.fixture
def federated_course(other_course, student, lab2):
    """cs102 bound to the federation, with student1 in it (both clusters have lab's accounts and users)."""
    return course_bound_to(other_course, FEDERATION, student=student, title="Hello federation")


@pytest.fixture
def lab_full(in_the_federation) -> Iterator[list[str]]:
    """lab's 8 GPUs taken by root's jobs (account root, -M lab); cancelled after the test, whatever happened. The
    jobs are sent once the federation is on: Slurm 24.11 refuses to cancel a job sent before it (a cluster's own job
    id is "Not a valid federated job" then)."""
    with _full("lab", ("gpu1", "gpu2")) as fillers:
        yield fillers


@contextmanager
def _full(cluster: str, nodes: tuple[str, ...]) -> Iterator[list[str]]:
    """Every GPU of the cluster's nodes taken by root's jobs (account root, -M <cluster>), running; the jobs
    cancelled at the end, whatever happened."""
    fillers: list[str] = []
    try:
        for node in nodes:
            argv = [
                "-M",
                cluster,
                "--parsable",
                "-A",
                "root",
                "-t",
                "10",
                "--chdir=/tmp",
                "-o",
                "/dev/null",
                "-w",
                node,
            ]
            answer = tool("sbatch", *argv, "--gres=gpu:4", "--wrap", "sleep 600")
            assert answer.returncode == 0, answer.stderr
            fillers.append(answer.stdout.strip().split(";")[0])
        running = ["squeue", "-M", cluster, "-h", "-j", ",".join(fillers), "-o", "%T"]
        wait_for(lambda: tool(*running).stdout.split() == ["RUNNING"] * len(nodes))
        yield fillers
    finally:
        if fillers:
            tool("scancel", "-M", cluster, *fillers)


@pytest.fixture
def in_the_federation(federated_course) -> Iterator[None]:
    """The federation labfed on; after the test, whatever happened, every portal job cancelled, then it is off."""
    labcluster("federation-on")
    try:
        yield
    finally:
        portal_ids = [job_id for job_id in Job.objects.values_list("slurm_job_id", flat=True) if job_id]
        if portal_ids:
            tool("scancel", *portal_ids)  # a federated job: on its origin, which cancels it where it runs
            tool("scancel", "-M", "lab,lab2", *portal_ids)
        labcluster("federation-off")


def _submit_federated(client, student, seconds: int) -> Job:
    client.force_login(student)
    form = {"param_SECONDS_TO_SLEEP": str(seconds), "gpus": "1", "cpus": "1", "mem_mb": "500", "minutes": "5"}
    response = client.post(reverse("jobs:job-create", args=["cs102", "hello"]), form)
    assert response.status_code == 302, response.content.decode()[:2000]
    return Job.objects.filter(user=student, assignment__course__slug="cs102").latest("pk")


def test_with_lab_full_a_federated_courses_job_starts_on_lab2_and_a_lab_courses_job_stays_on_lab(
    client, student, assignment, lab_full, in_the_federation, monkeypatch, caplog
):
    job = dispatch(_submit_federated(client, student, seconds=30))
    assert job.status == Status.PENDING and job.cluster == FEDERATION
    assert int(job.slurm_job_id) >= 1 << 26  # sent without -M: a federation-wide id
    job = wait_for_status(job, Status.RUNNING)
    assert job.ran_on == "lab2"
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert f"Started on <code>lab2</code> (offered to every cluster of the federation <code>{FEDERATION}</code>" in page
    origin, local = job.federated_id_parts
    assert f"for job {local} of the cluster it was sent from (cluster id {origin})" in page
    course_page = client.get(reverse("courses:course-detail", args=["cs102"])).content.decode()
    assert "not answering the portal" not in course_page  # both members answer
    _one_squeue_per_member_and_a_silent_lab2_is_unknown_not_finished(job, monkeypatch, caplog)

    # cs101, bound to lab: sent with -M lab during the federation, it waits for lab's GPUs and is never offered
    # to lab2 (sent without -M it would have been federated and started on lab2's free GPUs).
    on_lab = dispatch(submitted(client, student))
    assert on_lab.status == Status.PENDING and on_lab.cluster == ""
    assert rows_of(on_lab.slurm_job_id) == {("lab", "PENDING", "lab")}

    job = wait_for_status(job, Status.COMPLETED)
    assert job.exit_code == 0 and job.ran_on == "lab2"
    assert job.accounting["state"] == "COMPLETED" and job.accounting["node_list"] in LAB2_NODES  # lab2's record
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "Started on <code>lab2</code>" in page and f"{job.accounting['node_list']} as student1" in page
    _filed_once_under_lab2(job)

    assert rows_of(on_lab.slurm_job_id) == {("lab", "PENDING", "lab")}  # still waiting on lab, after all that
    job_scancel(job_id=on_lab.pk)  # scancel -M lab, as the student
    assert wait_for_status(on_lab, Status.CANCELLED).ran_on == ""


def _one_squeue_per_member_and_a_silent_lab2_is_unknown_not_finished(job: Job, monkeypatch, caplog) -> None:
    """The sync's Slurm calls: one squeue per member (-M lab, -M lab2), however many jobs. With lab2's controller
    stopped, lab shows only the REVOKED copy: the job is not taken for finished, it waits for lab2's answer, and the
    operator's log says which member did not answer."""
    calls: list[str] = []
    original = runner.run

    def counting(argv, **kwargs):
        calls.append(" ".join(argv[:3]) if argv[0] == "squeue" else argv[0])
        return original(argv, **kwargs)

    monkeypatch.setattr(runner, "run", counting)
    jobs_sync()
    monkeypatch.setattr(runner, "run", original)
    assert sorted(call for call in calls if call.startswith("squeue")) == ["squeue -M lab", "squeue -M lab2"]
    labcluster("lab2-ctld", "stop")
    try:
        with caplog.at_level(logging.WARNING, logger="jobs.dispatch"):
            jobs_sync()
    finally:
        labcluster("lab2-ctld", "start")
    job.refresh_from_db()
    assert job.status == Status.RUNNING and job.left_queue_at is None
    assert "Federated jobs wait for the next cycle: lab2 did not answer." in caplog.messages


def _filed_once_under_lab2(job: Job) -> None:
    """Each cluster's usage copy (lab's asked with -M lab in the federation): the job's record once, lab2's."""
    from reports.ingest import usage_ingest
    from reports.models import UsageRecord

    def filed() -> list[str]:
        usage_ingest()
        usage_ingest(other_cluster="lab2")
        return list(UsageRecord.objects.filter(job=job).values_list("cluster", flat=True))

    assert wait_for(filed, timeout=30) == ["lab2"]


@pytest.fixture
def both_full(lab_full) -> Iterator[list[str]]:
    """lab2's 8 GPUs taken by root's jobs too (lab's by lab_full); cancelled after the test, whatever happened."""
    with _full("lab2", ("gpu3", "gpu4")) as fillers:
        yield fillers


def test_a_federated_job_waiting_on_both_clusters_waits_and_one_whose_accounting_is_silent_waits_for_it(
    client, student, both_full, in_the_federation, settings, tmp_path, caplog
):
    """Both members full: the job waits in both queues and the portal follows it as waiting, not as gone. With
    slurmdbd down no member's queue can be read (`squeue -M` finds controllers through it): the job stays as it
    was and the operator's log names both members. Then, lab2 freed, it runs there and ends while the
    federation's accounting does not answer (only sacct cut off from slurmdbd; squeue answers): it is not taken
    for finished, the operator's log says why, and the next cycle with accounting back records how it ended."""
    job = dispatch(_submit_federated(client, student, seconds=1))
    assert {(cluster, state) for cluster, state, _ in rows_of(job.slurm_job_id)} == {
        ("lab", "PENDING"),
        ("lab2", "PENDING"),
    }
    jobs_sync()
    job.refresh_from_db()
    assert (job.status, job.left_queue_at, job.ran_on) == (Status.PENDING, None, "")
    own_tools, settings.SLURM_BIN_DIR = settings.SLURM_BIN_DIR, str(_tools_without_slurmdbd(tmp_path / "a", "squeue"))
    with caplog.at_level(logging.WARNING, logger="jobs.dispatch"), pytest.raises(SlurmUnavailable):
        jobs_sync()  # slurmdbd down: no member's controller can be found
    assert "Federated jobs wait for the next cycle: lab, lab2 did not answer." in caplog.messages
    job.refresh_from_db()
    assert (job.status, job.left_queue_at) == (Status.PENDING, None)

    freed = tool("scancel", "-M", "lab2", *both_full)
    assert freed.returncode == 0 and not freed.stderr, freed.stderr
    wait_for(lambda: not {state for _, state, _ in rows_of(job.slurm_job_id)} - {"REVOKED"}, timeout=90)
    settings.SLURM_BIN_DIR = str(_tools_without_slurmdbd(tmp_path / "b", "sacct"))
    with caplog.at_level(logging.WARNING, logger="jobs.dispatch"):
        jobs_sync()
    job.refresh_from_db()
    assert job.status == Status.PENDING and job.left_queue_at is not None  # left the queue; how, not known yet
    said = "The federation's accounting did not answer; its jobs wait for the next cycle: "
    warnings = [message for message in caplog.messages if message.startswith(said)]
    assert warnings and warnings[0].endswith("Problem talking to the database: Connection refused"), caplog.messages

    settings.SLURM_BIN_DIR = own_tools
    job = wait_for_status(job, Status.COMPLETED)
    assert job.accounting["node_list"] in LAB2_NODES


def _tools_without_slurmdbd(folder: Path, *cut_off: str) -> Path:
    """A Slurm tools folder: the lab's own squeue, scontrol, sbatch, scancel and sacct, except that the tools named
    in `cut_off` run the real ones with a copy of slurm.conf whose AccountingStoragePort nobody listens on: as when
    slurmdbd is down, sacct cannot read records and `squeue -M <cluster>` cannot find the cluster's controller."""
    tools, etc = folder / "bin", folder / "etc"
    tools.mkdir(parents=True)
    etc.mkdir()
    conf = lab_slurm_conf().read_text()
    (etc / "slurm.conf").write_text(re.sub(r"(?m)^AccountingStoragePort=.*$", "AccountingStoragePort=9", conf))
    for name in ("squeue", "scontrol", "sbatch", "scancel", "sacct"):
        real = shutil.which(slurm_tool(name))
        if name in cut_off:
            (tools / name).write_text(f'#!/bin/sh\nSLURM_CONF={etc / "slurm.conf"} exec {real} "$@"\n')
            (tools / name).chmod(0o755)
        else:
            (tools / name).symlink_to(real)
    return tools


def _assoc(cluster: str, account: str, user: str) -> str:
    argv = ["-n", "-P", "show", "assoc", "where", f"cluster={cluster}", f"account={account}", f"user={user}"]
    return tool("sacctmgr", *argv, "format=MaxJobs,MaxSubmit").stdout.strip()


def test_a_federated_courses_associations_are_written_on_both_clusters_and_a_second_run_changes_nothing(
    federated_course, student
):
    from clusterpolicy.associations import associations_reconcile

    federated_course.max_running_jobs_per_student = 1
    federated_course.max_queued_jobs_per_student = 2
    federated_course.save()
    try:
        first = associations_reconcile(course_slugs=["cs102"], trigger="policy")
        assert first.errors == [] and first.changes
        touched = {arg for change in first.changes for arg in change["argv"] if arg.startswith("cluster=")}
        assert touched == {"cluster=lab", "cluster=lab2"}
        assert _assoc("lab", "cs102", "student1") == _assoc("lab2", "cs102", "student1") == "1|2"
        again = associations_reconcile(course_slugs=["cs102"], trigger="policy")
        assert again.changes == [] and again.errors == []
    finally:
        for cluster in ("lab", "lab2"):  # cs102 as scripts/labcluster makes it: no limits anywhere
            where = ["-i", "modify", "user", "where", "name=student1", "account=cs102", f"cluster={cluster}", "set"]
            tool(
                "sacctmgr", *where, "MaxJobs=-1", "MaxSubmitJobs=-1", "MaxTRES=cpu=-1,mem=-1,gres/gpu=-1", "MaxWall=-1"
            )
            account = ["-i", "modify", "account", "where", "name=cs102", f"cluster={cluster}", "set"]
            tool("sacctmgr", *account, "GrpTRES=gres/gpu=-1")


def test_a_federated_courses_lab_is_reserved_on_the_own_cluster_and_its_lab_job_runs_there(
    client, student, settings, in_the_federation
):
    from clusterpolicy.labs import labs_tick

    settings.LABQUEUE_RESERVABLE_NODES = ["gpu1", "gpu2"]
    settings.LABQUEUE_RESERVATION_STRATEGY = "nodes"
    now = timezone.now()
    session = lab_session_schedule(
        course=Course.objects.get(slug="cs102"), starts_at=now, ends_at=now + timedelta(minutes=30), nodes=1
    )
    try:
        labs_tick()
        session.refresh_from_db()
        assert session.state == LabSession.State.RESERVED and session.reserved_nodes in ("gpu1", "gpu2")
        shown = tool("scontrol", "-M", "lab", "-o", "show", "reservation", session.reservation_name).stdout
        assert f"ReservationName={session.reservation_name} " in shown and "Accounts=cs102 " in shown

        # Sent with -M lab (its reservation is on lab only), so never offered to lab2.
        job = dispatch(_submit_federated(client, student, seconds=20))
        assert (job.status, job.reservation) == (Status.PENDING, session.reservation_name)
        assert {viable for _, _, viable in rows_of(job.slurm_job_id)} == {"lab"}
        job = wait_for_status(job, Status.RUNNING)
        assert job.ran_on == "lab"
        page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
        assert "Started on <code>lab</code> (offered to every cluster of the federation" in page
    finally:
        tool(
            "scancel", "-M", "lab", *[job_id for job_id in Job.objects.values_list("slurm_job_id", flat=True) if job_id]
        )
        wait_for(lambda: _reservation_gone(session.pk), timeout=30)


def _reservation_gone(session_pk: int) -> bool:
    name = LabSession.objects.get(pk=session_pk).reservation_name or f"lq-cs102-{session_pk}"
    tool("scontrol", "-M", "lab", "delete", f"reservationname={name}")
    return f"ReservationName={name} " not in tool("scontrol", "-M", "lab", "-o", "show", "reservation", name).stdout
