"""Ingesting Slurm accounting: one sacct per cycle, a moving window, nothing lost when Slurm is away."""

from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

import slurm
from courses.models import Role
from reports import tasks
from reports.ingest import portal_job_uuid, usage_ingest
from reports.models import AccountingCursor, UsageRecord
from slurm import runner
from tests.conftest import make_user
from tests.reports.test_reports_reconciliation import ingest_until_seen, wait_in_sacct
from tests.reports.test_reports_scale import REPORT_PAGE_AGAIN_QUERIES

pytestmark = pytest.mark.slurm


def outside_job() -> str:
    argv = [
        "sbatch",
        "--parsable",
        "--export=NONE",
        "--account=cs102",
        "--partition=gpu",
        "--gres=gpu:1",
        "--job-name=by-hand",
        "--no-requeue",
        "--output=/dev/null",
        "--time=1",
        "--wrap=sleep 1",
    ]
    return runner.run(argv, run_as="student3").strip()


def test_one_ingest_cycle_is_one_sacct_call_over_the_window_since_the_mark_minus_the_overlap(db, settings):
    settings.LABQUEUE_USAGE_OVERLAP_SECONDS = 600
    first = usage_ingest()
    with runner.command_log() as commands:
        second = usage_ingest()
    assert Counter(command.tool for command in commands) == Counter({"sacct": 1})
    argv = commands[0].argv
    assert {"-a", "-X", "-P", "-n"} <= set(argv)
    assert argv[argv.index("-S") + 1] == (first.until - timedelta(seconds=600)).strftime("%Y-%m-%dT%H:%M:%S")
    assert second.since == first.until - timedelta(seconds=600)
    assert AccountingCursor.objects.get(cluster="lab").ingested_until == second.until


def test_when_slurm_does_not_answer_the_mark_stays_and_the_next_cycle_catches_up(db, settings, tmp_path):
    usage_ingest()
    mark = AccountingCursor.objects.get().ingested_until
    job_id = outside_job()
    wait_in_sacct(job_id)

    lab_tools = settings.SLURM_BIN_DIR
    settings.SLURM_BIN_DIR = str(tmp_path)  # no sacct there: the runner reports Slurm unavailable
    with pytest.raises(slurm.SlurmUnavailable):
        usage_ingest()
    tasks.usage_ingest()  # the beat task logs and returns; it does not crash the worker
    cursor = AccountingCursor.objects.get()
    assert cursor.ingested_until == mark and "sacct" in cursor.last_error
    assert not UsageRecord.objects.filter(slurm_job_id=job_id).exists()

    settings.SLURM_BIN_DIR = lab_tools
    ingest_until_seen([job_id])
    cursor = AccountingCursor.objects.get()
    assert cursor.ingested_until > mark and cursor.last_error == ""
    record = UsageRecord.objects.get(slurm_job_id=job_id)
    final_state = runner.run(["sacct", "-X", "-n", "-P", "-j", job_id, "-o", "State"]).split()[0]
    assert (record.user, record.account, record.state, record.gpus) == ("student3", "cs102", final_state, 1)
    assert record.job is None and record.qos and record.partition == "gpu"
    assert record.started_at and record.ended_at and record.submitted_at


def test_the_ingest_task_keeps_the_report_of_each_course_it_brought_records_for(client, other_course):
    teacher = make_user("instructor2", "instructor2")
    other_course.enrollments.create(user=teacher, role=Role.INSTRUCTOR)
    wait_in_sacct(outside_job())  # a job on cs102's account
    tasks.usage_ingest()  # as the beat runs it: the records copied, then cs102's report computed and kept
    client.force_login(teacher)

    with CaptureQueriesContext(connection) as queries:
        page = client.get(reverse("reports:course-report", args=["cs102"]))

    assert len(queries) == REPORT_PAGE_AGAIN_QUERIES, "read, not computed"
    assert page.context["report"].total.jobs >= 1 and not page.context["report"].updating


def test_only_lq_names_holding_a_uuid_link_to_portal_jobs(db):
    assert str(portal_job_uuid("lq-1b4e28ba-2fa1-11d2-883f-0016d3cca427")) == "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
    assert portal_job_uuid("lq-test-1b4e28ba") is None
    assert portal_job_uuid("train.sh") is None
