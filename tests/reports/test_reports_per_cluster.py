"""Reports and the reconciliation when the site has a second cluster, lab2, beside the portal's own (lab).

A Slurm job is its cluster and its job id: ids restart on each cluster, so the same id on lab and lab2 is two
jobs, two records, two report lines. Rows are built directly, as in test_reconciliation_causes.py (the ingest
per cluster is tested on the lab clusters); no Slurm is called.
"""

import csv
import io
from datetime import timedelta

import pytest
from django.test import override_settings
from django.urls import reverse

from courses.models import Course
from jobs.models import Job
from reports.models import AccountingCursor, UsageRecord
from tests.conftest import make_user
from tests.http_helpers import table_rows
from tests.reports.test_reconciliation_causes import (
    DISAGREES,
    MISSING,
    T0,
    agreeing,  # noqa: F401 (a fixture)
    portal_job,
    short,
    slurm_record,
)
from tests.reports.test_reports_scale import REPORT_PAGE_QUERIES

RANGE = "?first=2025-03-01&last=2025-03-31"
AFTER_THE_JOBS = T0 + timedelta(days=20)


@pytest.fixture
def operator(db):
    return make_user("ops", None, is_staff=True)


@pytest.fixture
def lab2(settings):
    settings.LABQUEUE_SLURM_CLUSTER = "lab"
    settings.LABQUEUE_SLURM_OTHER_CLUSTERS = ["lab2"]
    return "lab2"


def on(cluster: str, job: Job, *, slurm_job_id: str = "") -> Job:
    """`job` as sent to `cluster` ("" the portal's own), as Slurm job `slurm_job_id` there."""
    Job.objects.filter(pk=job.pk).update(cluster=cluster, slurm_job_id=slurm_job_id or job.slurm_job_id)
    job.refresh_from_db()
    return job


def record_on(cluster: str, job: Job) -> UsageRecord:
    """Slurm's record of `job` as `cluster`'s accounting has it."""
    with override_settings(LABQUEUE_SLURM_CLUSTER=cluster):  # the cluster slurm_record files it under
        return slurm_record(job)


def copied(cluster: str, until=AFTER_THE_JOBS) -> None:
    AccountingCursor.objects.update_or_create(cluster=cluster, defaults={"ingested_until": until})


def report_page(client, instructor, course: Course) -> str:
    client.force_login(instructor)
    response = client.get(reverse("reports:course-report", args=[course.slug]) + RANGE)
    assert response.status_code == 200
    return response.content.decode()


def test_a_course_on_lab2_is_compared_up_to_lab2s_copy_of_the_accounting(
    client, instructor, student, assignment, course, lab2
):
    course.cluster = lab2
    course.save()
    done = on(lab2, portal_job(student, assignment, minute=1))
    record_on(lab2, done)
    copied(lab2, until=T0 + timedelta(minutes=5))  # lab's accounting was never copied: lab2's is what counts
    later = on(lab2, portal_job(student, assignment, minute=10))  # after lab2's copy: not compared yet

    page = report_page(client, instructor, course)
    assert 'id="reconciliation-agrees"' in page
    assert "Slurm's accounting of <code>lab2</code>, the course's cluster, copied up to" in page

    copied("lab")  # lab's copy, however recent, says nothing about lab2's jobs
    assert 'id="reconciliation-agrees"' in report_page(client, instructor, course)

    copied(lab2)  # lab2's copy moves past the later job, which Slurm has no record of: the cached report is renewed
    assert table_rows(report_page(client, instructor, course), "reconciliation-differences") == [
        [
            MISSING,
            "lab2",
            later.slurm_job_id,
            "student1",
            short(later),
            f"The portal sent it to Slurm as job {later.slurm_job_id}, but Slurm's accounting has no record of it.",
        ]
    ]


def test_the_same_job_id_on_lab_and_lab2_is_two_jobs_two_report_lines_and_agrees(
    client, instructor, student, assignment, course, lab2, django_assert_num_queries
):
    # The course ran on lab, then moved to lab2: each cluster gave one of its jobs the id 7500.
    on_lab = on("", portal_job(student, assignment, minute=1), slurm_job_id="7500")
    on_lab2 = on(lab2, portal_job(student, assignment, gpus=2, minute=2), slurm_job_id="7500")
    record_on("lab", on_lab)
    record_on(lab2, on_lab2)
    course.cluster = lab2
    course.save()
    copied("lab")
    copied(lab2)

    client.force_login(instructor)
    with django_assert_num_queries(REPORT_PAGE_QUERIES):  # as many as with one cluster
        page = client.get(reverse("reports:course-report", args=[course.slug]) + RANGE).content.decode()
    assert 'id="reconciliation-agrees"' in page
    totals = [(row[0], row[2], row[3]) for row in table_rows(page, "usage-total")]
    assert totals == [("lab", "1", "1.000"), ("lab2", "1", "2.000"), ("Total", "2", "3.000")]

    response = client.get(reverse("reports:course-report-csv", args=[course.slug]) + RANGE)
    rows = [row[:5] for row in csv.reader(io.StringIO(response.content.decode()))]
    assert rows[1:4] == [
        ["cluster", "lab", "", "1", "1.000"],
        ["cluster", "lab2", "", "1", "2.000"],
        ["total", "Total", "", "2", "3.000"],
    ]
    statement = client.get(reverse("reports:course-statement", args=[course.slug]) + RANGE).content.decode()
    assert [row[:3] for row in table_rows(statement, "statement") if row[0].startswith("On cluster")] == [
        ["On cluster lab", "1", "1.000"],
        ["On cluster lab2", "1", "2.000"],
    ]


@pytest.mark.usefixtures("agreeing")
def test_a_record_of_the_portal_job_on_another_cluster_is_a_disagreement_that_names_both(
    client, instructor, student, assignment, lab2
):
    job = portal_job(student, assignment, minute=10)  # sent to lab, the portal's own
    record_on(lab2, job)  # but the only record carrying its name and id is lab2's
    copied(lab2)

    rows = table_rows(report_page(client, instructor, job.assignment.course), "reconciliation-differences")
    missing = f"The portal sent it to Slurm as job {job.slurm_job_id}, but Slurm's accounting has no record of it."
    elsewhere = "Slurm ran it on lab2; the portal sent it to lab."
    assert rows == [
        [MISSING, "lab", job.slurm_job_id, "student1", short(job), missing],
        [DISAGREES, "lab2", job.slurm_job_id, "student1", short(job), elsewhere],
    ]


@pytest.mark.usefixtures("agreeing")
def test_records_of_the_same_id_on_two_clusters_outside_the_portal_are_two_rows(
    client, instructor, student, assignment, lab2
):
    stray = portal_job(student, assignment, minute=10)
    for cluster in ("lab", lab2):
        record = record_on(cluster, stray)
        UsageRecord.objects.filter(pk=record.pk).update(job=None, job_name="by-hand", slurm_job_id="7600")
    Job.objects.filter(pk=stray.pk).delete()
    copied(lab2)

    rows = table_rows(report_page(client, instructor, stray.assignment.course), "reconciliation-differences")
    assert [row[:3] for row in rows] == [
        ["Slurm job the portal did not submit", "lab", "7600"],
        ["Slurm job the portal did not submit", "lab2", "7600"],
    ]


def test_the_site_overview_totals_each_cluster_and_all_of_them(client, student, assignment, lab2, operator):
    for cluster, gpus in (("", 1), (lab2, 2)):
        job = on(cluster, portal_job(student, assignment, gpus=gpus, minute=1), slurm_job_id="7700")
        record_on(cluster or "lab", job)
    client.force_login(operator)
    page = client.get(reverse("reports:usage-overview") + RANGE).content.decode()
    assert [row[:3] for row in table_rows(page, "overview-clusters")] == [
        ["lab", "1", "1.000"],
        ["lab2", "1", "2.000"],
        ["All clusters", "2", "3.000"],
    ]


def test_my_usage_totals_each_cluster_i_ran_on_and_all_of_them(client, student, classmate, assignment, lab2):
    for cluster, gpus in (("", 1), (lab2, 2)):
        job = on(cluster, portal_job(student, assignment, gpus=gpus, minute=1), slurm_job_id="7800")
        record_on(cluster or "lab", job)
    record_on(lab2, on(lab2, portal_job(classmate, assignment, gpus=4, minute=2), slurm_job_id="7801"))
    client.force_login(student)
    page = client.get(reverse("reports:my-usage", args=[assignment.course.slug]) + RANGE).content.decode()
    assert "Per cluster, then in all." in page
    assert [(row[0], row[2], row[3]) for row in table_rows(page, "usage-total")] == [
        ("lab", "1", "1.000"),
        ("lab2", "1", "2.000"),  # the classmate's 4 GPU-hours on lab2 are not the student's
        ("You", "2", "3.000"),
    ]


@pytest.mark.usefixtures("agreeing")
def test_with_one_cluster_and_no_setting_the_pages_have_no_cluster_lines(
    client, instructor, student, assignment, operator, settings
):
    assert settings.LABQUEUE_SLURM_OTHER_CLUSTERS == []
    page = report_page(client, instructor, assignment.course)
    assert len(table_rows(page, "usage-total")) == 1 and "Per cluster, then in all" not in page
    csv_rows = client.get(reverse("reports:course-report-csv", args=["cs101"]) + RANGE).content.decode()
    assert "\ncluster," not in csv_rows
    client.force_login(student)
    mine = client.get(reverse("reports:my-usage", args=["cs101"]) + RANGE).content.decode()
    assert len(table_rows(mine, "usage-total")) == 1 and "Per cluster, then in all" not in mine
    client.force_login(operator)
    assert 'id="overview-clusters"' not in client.get(reverse("reports:usage-overview") + RANGE).content.decode()
