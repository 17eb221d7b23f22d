"""The reconciliation of a course bound to the federation (LABQUEUE_SLURM_FEDERATION): its jobs are sent to every
member and the member that runs one files its accounting record, so a record on lab or lab2 is where the job was
sent, and the course is compared up to where every member's accounting was copied. Rows are built directly, as
in test_reports_per_cluster.py (the federated job's own record is read on the lab in tests/jobs)."""

from datetime import timedelta

import pytest
from django.urls import reverse

from tests.http_helpers import table_rows
from tests.reports.test_reconciliation_causes import MISSING, T0, portal_job, short
from tests.reports.test_reports_per_cluster import RANGE, copied, on, record_on


@pytest.fixture
def federated(settings, course):
    settings.LABQUEUE_SLURM_CLUSTER = "lab"
    settings.LABQUEUE_SLURM_OTHER_CLUSTERS = ["lab2"]
    settings.LABQUEUE_SLURM_FEDERATION = "labfed"
    course.cluster = "labfed"
    course.save()
    return course


def reconciliation_of(client, instructor, course) -> str:
    client.force_login(instructor)
    response = client.get(reverse("reports:course-report", args=[course.slug]) + RANGE)
    assert response.status_code == 200
    return response.content.decode()


def test_a_federated_courses_jobs_agree_with_records_on_whichever_member_ran_them(
    client, instructor, student, assignment, federated
):
    ran_on_lab = on("labfed", portal_job(student, assignment, minute=1), slurm_job_id="67108900")
    ran_on_lab2 = on("labfed", portal_job(student, assignment, minute=2), slurm_job_id="67108901")
    record_on("lab", ran_on_lab)
    record_on("lab2", ran_on_lab2)
    copied("lab")
    assert 'id="reconciliation-agrees"' not in reconciliation_of(client, instructor, federated)  # lab2 not yet

    copied("lab2")

    page = reconciliation_of(client, instructor, federated)
    assert 'id="reconciliation-agrees"' in page, table_rows(page, "reconciliation-differences")


def test_a_federated_job_no_member_has_a_record_of_is_missing_once_every_member_was_copied(
    client, instructor, student, assignment, federated
):
    lost = on("labfed", portal_job(student, assignment, minute=1), slurm_job_id="67108902")
    copied("lab")
    copied("lab2", until=T0 + timedelta(days=20))

    rows = table_rows(reconciliation_of(client, instructor, federated), "reconciliation-differences")

    assert [row[0] for row in rows] == [MISSING] and short(lost) in rows[0]
