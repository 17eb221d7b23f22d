"""On the two lab clusters (lab, and lab2 of scripts/labcluster up-lab2, sharing lab's slurmdbd): the same Slurm job
id on both is two usage records after the ingest and two report lines, and the reconciliation of a course on lab2
compares its jobs with lab2's records, up to lab2's copy of the accounting.

Job ids restart on each cluster and lab2 runs far fewer jobs than lab, so a job sent to lab2 now takes an id lab
gave before: the test sends jobs to lab2 through the portal until lab's accounting has a job of the same id (lab's
ids have gaps where its state was reset).
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

ATTEMPTS = 40


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


def _ids_on_lab() -> set[str]:
    """The job ids lab's accounting holds, as sacct lists them (no ingest: lab's is not copied yet)."""
    argv = [slurm_tool("sacct"), "-M", "lab", "-a", "-X", "-n", "-P", "-o", "JobID", "-S", "now-60days"]
    return set(subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout.split())


def _sent_to_lab2_until_lab_has_its_id(client, student) -> Job:
    """Jobs sent to lab2 through the portal until one has an id lab's accounting has too; all of them finished."""
    on_lab, jobs = _ids_on_lab(), []
    while len(jobs) < ATTEMPTS and (not jobs or jobs[-1].slurm_job_id not in on_lab):
        jobs.append(dispatch(_submit_on_lab2(client, student)))
    assert jobs[-1].slurm_job_id in on_lab, f"lab's accounting has none of the ids lab2 gave to {ATTEMPTS} jobs"
    return [wait_for_status(job, Status.COMPLETED) for job in jobs][-1]


@pytest.mark.usefixtures("course_on_lab2")
def test_the_same_job_id_on_lab_and_lab2_is_two_records_and_two_report_lines_and_lab2s_course_agrees(
    client, student, settings
):
    course = Course.objects.get(slug="cs102", cluster="lab2")
    settings.LABQUEUE_USAGE_FIRST_DAYS = 60  # lab's first ingest reaches back to the jobs that took lab2's ids
    started = timezone.now() - timedelta(seconds=1)
    job = _sent_to_lab2_until_lab_has_its_id(client, student)
    on_lab2 = _ingested_on_lab2(job)
    # lab2's course is compared with lab2's records up to lab2's copy, whether or not lab's was ever copied.
    report = course_report(course=course, window=ReportRange(started, timezone.now()))
    assert report.reconciliation is not None and report.reconciliation.differences == []
    assert report.reconciliation.agrees and report.reconciliation.portal.jobs >= 1

    usage_ingest()
    on_lab = UsageRecord.objects.get(cluster="lab", slurm_job_id=job.slurm_job_id)
    assert on_lab2.job == job and on_lab.job != job  # each record is its own cluster's job
    same_id = UsageRecord.objects.filter(slurm_job_id=job.slurm_job_id, submitted_at__gte=on_lab.submitted_at)
    assert sorted(same_id.values_list("cluster", flat=True)) == ["lab", "lab2"]
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
