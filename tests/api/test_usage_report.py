"""The course usage report through the API: the page's rows for its staff, held to their role now."""

from datetime import datetime, timedelta

from django.utils import timezone

from tests.api.conftest import call, problem


def test_course_staff_get_the_reports_rows_and_a_student_does_not(client, ta, student, course, token_for):
    today = timezone.localdate()

    report = call(client, "get", "/api/v1/courses/cs101/usage", token_for(ta))
    refused = call(client, "get", "/api/v1/courses/cs101/usage", token_for(student))

    assert report.status_code == 200, report.content
    assert (report.json()["course"], report.json()["last"]) == ("cs101", today.isoformat())
    assert report.json()["total"]["jobs"] == 0
    as_of = datetime.fromisoformat(report.json()["as_of"])
    assert timezone.now() - timedelta(seconds=30) < as_of <= timezone.now() and report.json()["updating"] is False
    assert problem(refused)["status"] == 403


def test_a_range_the_page_would_refuse_is_refused_with_its_message(client, ta, course, token_for):
    today = timezone.localdate()
    url = f"/api/v1/courses/cs101/usage?first={today}&last={today - timedelta(days=1)}"

    response = call(client, "get", url, token_for(ta))

    assert response.status_code == 422
    assert problem(response)["detail"] == "The range ends before it starts."


def test_a_token_without_read_reports_gets_403(client, ta, course, token_for):
    response = call(client, "get", "/api/v1/courses/cs101/usage", token_for(ta, scopes=["read:gradebook"]))

    assert "read:reports" in problem(response)["detail"]


def test_the_report_has_a_row_per_cluster_and_the_same_job_id_on_two_is_two_jobs(
    client, ta, student, assignment, course, token_for, settings
):
    from tests.reports.test_reconciliation_causes import portal_job
    from tests.reports.test_reports_per_cluster import RANGE, copied, on, record_on

    settings.LABQUEUE_SLURM_CLUSTER, settings.LABQUEUE_SLURM_OTHER_CLUSTERS = "lab", ["lab2", "lab3"]
    record_on("lab", on("", portal_job(student, assignment, minute=1), slurm_job_id="7500"))
    record_on("lab2", on("lab2", portal_job(student, assignment, gpus=2, minute=2), slurm_job_id="7500"))
    copied("lab")

    report = call(client, "get", "/api/v1/courses/cs101/usage" + RANGE, token_for(ta)).json()

    rows = [(row["label"], row["jobs"], row["gpu_seconds"]) for row in report["clusters"]]
    assert rows == [("lab", 1, 3600), ("lab2", 1, 7200), ("lab3", 0, 0)]
    assert (report["total"]["jobs"], report["total"]["gpu_seconds"]) == (2, 10800)
