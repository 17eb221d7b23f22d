"""On the two lab clusters (lab, and lab2 of scripts/labcluster up-lab2, sharing lab's slurmdbd): the same Slurm job
id on both is two usage records after the ingest and two report lines, and the reconciliation of a course on lab2
compares its jobs with lab2's records, up to lab2's copy of the accounting.

Job ids restart on each cluster, and lab runs far more jobs than lab2: a job sent to lab2 now mostly takes an id
lab gave before. Where it would not (lab's ids have a gap there, or lab is behind), the cluster behind is moved up
to the other first, with held jobs of root's cancelled at once (Slurm never gives an id twice), so the test needs
no luck with the ids either cluster has given.
"""

import subprocess
import time
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from courses.models import Course
from jobs.models import Job, Status
from reports.course_report import course_report
from reports.ingest import usage_ingest
from reports.models import UsageRecord
from reports.queries import ReportRange, usage_records_in_range
from tests.conftest import dispatch, make_user, wait_for_status
from tests.http_helpers import table_rows
from tests.jobs.test_other_cluster import _submit_on_lab2
from tests.lab import slurm_tool

pytestmark = pytest.mark.slurm

#: The job ids one held job of root's takes at most: a heterogeneous job takes one per component.
IDS_PER_HELD_JOB = 500
HELD = "lq-held-for-its-id"  # lq-: tests/two_clusters.py cancels what a failed test leaves on lab2


def _ingested_on_lab2(job: Job) -> UsageRecord:
    """lab2's ingest, run until it has the job's record (a job that ended in the very second a cycle ends is in
    the next cycle's window, as in the periodic task)."""
    deadline = time.monotonic() + 30
    while True:
        usage_ingest(other_cluster="lab2")
        record = UsageRecord.objects.filter(cluster="lab2", slurm_job_id=job.slurm_job_id).first()
        if record or time.monotonic() > deadline:
            assert record, f"lab2's accounting has no record of job {job.slurm_job_id}"
            return record
        time.sleep(0.5)


def _ids_on_lab() -> set[int]:
    """The job ids lab's accounting holds, as sacct lists them (no ingest: lab's is not copied yet)."""
    argv = [slurm_tool("sacct"), "-M", "lab", "-a", "-X", "-n", "-P", "-o", "JobID", "-S", "now-60days"]
    listed = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout.split()
    return {int(job_id) for job_id in listed if job_id.isdigit()}


def _sbatch_as_root(cluster: str, *options: str, parts: int = 1) -> int:
    """A job of root's on `cluster` with `parts` components (each takes its own job id, in a row); the first id."""
    each = ["-n1", "-o", "/dev/null"]
    argv = [slurm_tool("sbatch"), "-M", cluster, "--parsable", "-J", HELD, *options]
    argv += [*(each + [":"]) * (parts - 1), *each, "--wrap", "true"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    return int(done.stdout.split(";")[0])


def _next_id_made(cluster: str, wanted: int, *, taken: int) -> None:
    """`cluster`, whose held job took id `taken` (below `wanted`), gives `wanted` next: the ids between are taken
    by more held jobs; all of them are cancelled."""
    while taken < wanted - 1:
        parts = min(IDS_PER_HELD_JOB, wanted - 1 - taken)
        taken = _sbatch_as_root(cluster, "--hold", parts=parts) + parts - 1
    subprocess.run([slurm_tool("scancel"), "-M", cluster, "-n", HELD], timeout=30, check=True)
    assert taken == wanted - 1, f"{cluster} had given job id {taken} already, past {wanted}"


def _finished_on_lab(job_id: int) -> None:
    """Wait until lab's accounting has job `job_id` finished, and lists it among its jobs (a second later)."""
    argv = [slurm_tool("sacct"), "-M", "lab", "-X", "-n", "-P", "-o", "State", "-j", str(job_id)]
    deadline = time.monotonic() + 60
    while "COMPLETED" not in subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout or (
        job_id not in _ids_on_lab()
    ):
        assert time.monotonic() < deadline, f"lab's job {job_id} did not finish"
        time.sleep(0.5)


def _sent_to_lab2_with_an_id_lab_has(client, student) -> Job:
    """A job sent to lab2 through the portal, finished, whose Slurm id lab's accounting has too.

    Where lab has given an id above lab2's next, lab2 is moved up to the first of them; otherwise lab is behind
    (or its ids have a gap up to now), and is moved up to give lab2's job's id to a job of root's."""
    on_lab, taken = _ids_on_lab(), _sbatch_as_root("lab2", "--hold")
    later = sorted(job_id for job_id in on_lab if job_id > taken)
    _next_id_made("lab2", later[0] if later else taken + 1, taken=taken)
    job = dispatch(_submit_on_lab2(client, student))
    if not later:
        _next_id_made("lab", int(job.slurm_job_id), taken=_sbatch_as_root("lab", "--hold"))
        _finished_on_lab(_sbatch_as_root("lab"))
    assert int(job.slurm_job_id) in _ids_on_lab(), f"lab's accounting has no job {job.slurm_job_id}"
    return wait_for_status(job, Status.COMPLETED)


@pytest.mark.usefixtures("course_on_lab2")
def test_the_same_job_id_on_lab_and_lab2_is_two_records_and_two_report_lines_and_lab2s_course_agrees(
    client, student, settings
):
    course = Course.objects.get(slug="cs102", cluster="lab2")
    settings.LABQUEUE_USAGE_FIRST_DAYS = 60  # lab's first ingest reaches back to the jobs that took lab2's ids
    started = timezone.now() - timedelta(seconds=1)
    job = _sent_to_lab2_with_an_id_lab_has(client, student)
    on_lab2 = _ingested_on_lab2(job)
    # lab2's course is compared with lab2's records up to lab2's copy, whether or not lab's was ever copied.
    report = course_report(course=course, window=ReportRange(started, timezone.now()))
    assert report.reconciliation is not None and report.reconciliation.differences == []
    assert report.reconciliation.agrees and report.reconciliation.portal.jobs >= 1

    usage_ingest()
    on_lab = UsageRecord.objects.filter(cluster="lab", slurm_job_id=job.slurm_job_id).latest("submitted_at")
    assert on_lab2.job == job and on_lab.job != job  # each record is its own cluster's job
    same_id = UsageRecord.objects.filter(slurm_job_id=job.slurm_job_id)
    assert set(same_id.values_list("cluster", flat=True)) == {"lab", "lab2"}
    assert same_id.filter(cluster="lab2").get() == on_lab2 and not same_id.filter(cluster="lab", job=job).exists()
    report = course_report(course=course, window=ReportRange(started, timezone.now()))
    assert report.reconciliation.agrees  # lab's record of the same id is not lab2's job

    # The site's usage per cluster: each record of that id is a job on its own cluster's line.
    client.force_login(make_user("ops", None, is_staff=True))
    first, last = timezone.localdate(on_lab.submitted_at), timezone.localdate()
    page = client.get(reverse("reports:usage-overview") + f"?first={first}&last={last}").content.decode()
    lines = {row[0]: int(row[1]) for row in table_rows(page, "overview-clusters")}
    in_range = usage_records_in_range(window=ReportRange.for_days(first, last))
    assert on_lab in in_range.filter(cluster="lab") and on_lab2 in in_range.filter(cluster="lab2")
    assert lines == {
        "lab": in_range.filter(cluster="lab").count(),
        "lab2": in_range.filter(cluster="lab2").count(),
        "All clusters": in_range.count(),
    }
