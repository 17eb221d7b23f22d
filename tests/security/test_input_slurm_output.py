"""Attacks on the portal's reading of squeue and sacct output, on the real lab cluster.

A student outside the portal submits, with sbatch as their own cluster user, a job whose name (and
comment) holds a line break and the field delimiter, so that squeue and sacct print one more line that
reads like a record of another job. Slurm 22.05 prints job names as they are (line breaks and \\x1f
included: checked on this cluster), so the forged line reaches the output; this cluster does not keep
job comments in accounting (sacct prints an empty Comment). The portal's real sync and ingest then run;
the forged line changes nothing.
"""

import time
import uuid

import pytest

from jobs.dispatch import jobs_sync
from jobs.models import Job, JobEvent, Status
from reports.ingest import usage_ingest
from reports.models import UsageRecord
from slurm import parsers, runner
from tests.behaviour_helpers import squeue_field, wait_until
from tests.conftest import job_row
from tests.reports.test_reports_reconciliation import wait_in_sacct

pytestmark = pytest.mark.slurm

D = parsers.DELIMITER
ATTACKER = "student2"


def sbatch(*options: str, run_as: str) -> str:
    argv = ["sbatch", "--parsable", "--export=NONE", "--partition=gpu", "--output=/dev/null", *options]
    return runner.run(argv, run_as=run_as).strip()


def cancel(*job_ids: str) -> None:
    ids = [job_id for job_id in job_ids if job_id]
    if ids:
        runner.run(["scancel", *ids])


def sacct_name(job_id: str) -> str:
    return runner.run(["sacct", "-X", "-n", "-P", "-j", job_id, "-o", "JobName"]).rstrip("\n")


def ingest_until_any(*job_ids: str, timeout: float = 30) -> None:
    """Ingest cycles until a record of one of these jobs is copied (slurmdbd answers a windowed sacct
    for a just-finished job a moment after `sacct -j` does), then one more."""
    deadline = time.monotonic() + timeout
    while not UsageRecord.objects.filter(slurm_job_id__in=job_ids).exists():
        assert time.monotonic() < deadline, f"none of {job_ids} was ingested"
        usage_ingest()
        time.sleep(0.5)
    usage_ingest()


@pytest.fixture
def waiting_portal_job(student, assignment):
    """A portal job Slurm holds PENDING: a real job under the portal's own name for it."""
    job = job_row(student, assignment, status=Status.PENDING)
    slurm_id = sbatch("--hold", "--account=cs101", f"--job-name={job.slurm_name}", "--wrap=true", run_as="student1")
    Job.objects.filter(pk=job.pk).update(slurm_job_id=slurm_id)
    job.refresh_from_db()
    yield job
    cancel(slurm_id)


def test_a_job_name_holding_a_forged_squeue_line_does_not_move_a_portal_job(waiting_portal_job, classmate):
    job = waiting_portal_job
    now = int(time.time())
    forged = D.join(
        [job.slurm_job_id, "student1", "cs101", "gpu", "RUNNING", "None", "1", str(now), str(now), "gpu2"]
        + [job.slurm_name]
    )
    attacker_id = ""
    try:
        # Running, so that squeue (sorted by partition, then state) prints it after the waiting portal job.
        attacker_id = sbatch(
            "--account=cs101",
            f"--job-name=x\n{forged}",
            f"--comment=y\n{forged}",
            "--time=2",
            "--wrap=sleep 110",
            run_as=ATTACKER,
        )
        wait_until(lambda: squeue_field(attacker_id, "%T") == "RUNNING", what="the attacker's job to run")
        printed = runner.run(["squeue", "-h", "-j", attacker_id, "-o", "%j"])
        assert f"\n{forged}" in printed, "Slurm prints the line break and the delimiters as they are"
        events = JobEvent.objects.filter(job=job).count()

        jobs_sync()

        job.refresh_from_db()
        assert job.status == Status.PENDING
        assert job.slurm_state == "PENDING" and "Held" in job.reason
        assert JobEvent.objects.filter(job=job).count() == events
    finally:
        cancel(attacker_id)


@pytest.fixture
def finished_portal_job(outsider, assignment):
    """A portal job of another student (cs101's assignment, run by student3), for the forged record to claim."""
    return job_row(outsider, assignment, status=Status.COMPLETED, run_as="student3", slurm_job_id="1")


def test_a_job_name_holding_a_forged_sacct_line_adds_no_usage_record(db, finished_portal_job):
    forged_id = str(900_000_000 + uuid.uuid4().int % 1_000_000)
    now = int(time.time())
    forged = D.join(
        [forged_id, "student3", "cs101", "gpu", "normal", "", "COMPLETED", "0:0", "None"]
        + [str(now - 60), str(now - 50), str(now - 10), "36000"]
        + ["billing=400,cpu=8,gres/gpu=4,mem=8G,node=1", "gpu1", finished_portal_job.slurm_name]
    )
    attacker_id = sbatch(
        "--account=cs101", f"--job-name=x\n{forged}", f"--comment=y\n{forged}", "--wrap=true", run_as=ATTACKER
    )
    try:
        wait_in_sacct(attacker_id)
        # slurmdbd shows the name "allocation" for a moment, then the job's own: as Slurm prints it, line
        # break and delimiters included.
        wait_until(lambda: f"\n{forged}" in sacct_name(attacker_id), what="sacct to print the forged line")

        ingest_until_any(attacker_id, forged_id)

        assert not UsageRecord.objects.filter(slurm_job_id=forged_id).exists()
        assert not UsageRecord.objects.filter(job=finished_portal_job).exists()
        own = UsageRecord.objects.get(slurm_job_id=attacker_id)
        assert (own.user, own.job, own.gpus) == (ATTACKER, None, 0), "its real values, linked to no portal job"
    finally:
        cancel(attacker_id)


def test_a_job_named_after_another_students_portal_job_is_not_linked_to_it(db, finished_portal_job):
    attacker_id = sbatch(
        "--account=cs101", f"--job-name={finished_portal_job.slurm_name}", "--wrap=true", run_as=ATTACKER
    )
    try:
        wait_in_sacct(attacker_id)
        wait_until(lambda: sacct_name(attacker_id) == finished_portal_job.slurm_name, what="sacct to print the name")

        ingest_until_any(attacker_id)

        record = UsageRecord.objects.get(slurm_job_id=attacker_id)
        assert (record.user, record.job) == (ATTACKER, None)
    finally:
        cancel(attacker_id)
