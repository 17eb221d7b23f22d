"""The course report costs a constant number of queries and adds up in the database.

300 students and 20,000 usage records made with bulk_create; every expected number is
computed here in Python from the generated data, independently of the report's SQL.
"""

import random
import statistics
import time
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

import slurm
from courses.models import Assignment, Course, Enrollment, Role
from jobs.models import Job, Status
from reports.course_report import course_report
from reports.ingest import usage_records_save
from reports.models import AccountingCursor, UsageRecord
from reports.queries import ReportRange

#: Queries for the course report page, with 3 records or 20,000: session, user, course,
#: role, what the report reads has changed? (jobs, records, roster, cursor), then the report
#: (totals, per cluster, per student x2, per assignment, states, chart days, cursors, portal totals,
#: three difference lists, asked for and used per assignment, the jobs that asked for far more), and the reports
#: cache: its read, then its write (the table's size, the key, the row, inside a savepoint).
REPORT_PAGE_QUERIES = 28
#: The same page again while nothing it reads has changed: session, user, course, role, the four checks, the
#: report read from the cache.
REPORT_PAGE_AGAIN_QUERIES = 9
BASE = datetime(2026, 9, 1, tzinfo=UTC)
STATES = ["COMPLETED"] * 6 + ["FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY"]
PORTAL_STATUS = {"COMPLETED": Status.COMPLETED, "CANCELLED": Status.CANCELLED}


def build(*, students: int, records: int, outside: int = 0, seed: int = 5):
    """A course on account big1 with its students, assignments, portal jobs and their usage records."""
    course = Course.objects.create(slug="big", code="BIG1", title="Big", term="Fall", slurm_account="big1")
    users = get_user_model().objects.bulk_create(
        [get_user_model()(username=f"s{n:03d}", netid=f"s{n:03d}", first_name=f"S{n:03d}") for n in range(students)]
    )
    Enrollment.objects.bulk_create([Enrollment(user=user, course=course, role=Role.STUDENT) for user in users])
    assignments = Assignment.objects.bulk_create(
        [Assignment(course=course, slug=f"a{n}", title=f"Assignment {n}", script_template="true") for n in range(20)]
    )
    rng = random.Random(seed)
    runs = []
    for _ in range(records + outside):
        submit = BASE + timedelta(seconds=rng.randrange(30 * 86400))
        start = submit + timedelta(seconds=rng.randrange(0, 900))
        end = start + timedelta(seconds=rng.randrange(1, 20 * 3600))
        runs.append((users[rng.randrange(students)], rng.choice([0, 1, 1, 2]), submit, start, end, rng.choice(STATES)))
    jobs = Job.objects.bulk_create(
        [
            Job(
                user=user,
                assignment=rng.choice(assignments),
                run_as=user.netid,
                gpus=gpus,
                cpus=2,
                mem_mb=100,
                minutes=1200,
                account="big1",
                script="",
                workdir="",
                status=PORTAL_STATUS.get(state, Status.FAILED),
                slurm_job_id=str(n + 1),
                submitted_at=submit,
                started_at=start,
                ended_at=end,
                elapsed_seconds=int((end - start).total_seconds()),
            )
            for n, (user, gpus, submit, start, end, state) in enumerate(runs[:records])
        ]
    )
    now = timezone.now()
    UsageRecord.objects.bulk_create(
        [
            UsageRecord(
                cluster="lab",
                slurm_job_id=str(n + 1),
                submitted_at=submit,
                job=jobs[n] if n < records else None,
                job_name="lq-x",
                user=user.netid,
                account="big1",
                state=state,
                started_at=start,
                ended_at=end,
                elapsed_seconds=int((end - start).total_seconds()),
                gpus=gpus,
                cpus=2,
                billing=2,
                ingested_at=now,
            )
            for n, (user, gpus, submit, start, end, state) in enumerate(runs)
        ],
        batch_size=5000,
    )
    AccountingCursor.objects.create(cluster="lab", ingested_until=now)
    if connection.vendor == "postgresql":
        # Fresh statistics, as autovacuum gives a real database after a bulk load: planned with the statistics
        # of the near-empty tables earlier tests left, a report over 20,000 records can take minutes.
        with connection.cursor() as cursor:
            for model in (UsageRecord, Job, Enrollment, get_user_model()):
                cursor.execute(f'ANALYZE "{model._meta.db_table}"')
    return course, runs


def expected_gpu_seconds(runs, window: ReportRange) -> dict[str, int]:
    totals: dict[str, int] = defaultdict(int)
    for user, gpus, _, start, end, _ in runs:
        overlap = (min(end, window.end) - max(start, window.start)).total_seconds()
        if overlap > 0:
            totals[user.netid] += gpus * int(overlap)
    return dict(totals)


def login_instructor(client, course) -> None:
    instructor = get_user_model().objects.create_user(username="prof", password="pw", netid="prof")
    Enrollment.objects.create(user=instructor, course=course, role=Role.INSTRUCTOR)
    client.force_login(instructor)


def report_url(first: date, last: date) -> str:
    return reverse("reports:course-report", args=["big"]) + f"?first={first}&last={last}"


@pytest.mark.timeout(900)  # 20,000 records written and reported under the coverage tracer
def test_the_report_of_300_students_and_20000_records_costs_a_constant_number_of_queries(client, db):
    course, runs = build(students=300, records=20_000, outside=40)
    login_instructor(client, course)
    url = report_url(date(2026, 9, 5), date(2026, 9, 19))
    with CaptureQueriesContext(connection) as queries:
        started = time.monotonic()
        response = client.get(url)
        seconds = time.monotonic() - started
    assert response.status_code == 200
    assert len(queries) == REPORT_PAGE_QUERIES, [query["sql"][:120] for query in queries]
    for query in queries:
        if "jobs_usagerecord" in query["sql"]:
            sql = query["sql"].upper()
            assert "SUM(" in sql or "COUNT(" in sql or "LIMIT 501" in sql, sql[:300]
    print(f"\n20,000 records, 300 students: {len(queries)} queries, page in {seconds:.2f}s")


@pytest.mark.timeout(900)  # 20,000 records written and reported under the coverage tracer
def test_the_report_shown_again_with_nothing_changed_reads_no_record_and_an_ingest_renews_it(client, db):
    course, runs = build(students=300, records=20_000)
    login_instructor(client, course)
    url = report_url(date(2026, 9, 5), date(2026, 9, 19))
    first = client.get(url)
    with CaptureQueriesContext(connection) as queries:
        again = client.get(url)
    assert len(queries) == REPORT_PAGE_AGAIN_QUERIES, [query["sql"][:120] for query in queries]
    assert again.context["report"].total == first.context["report"].total
    assert again.context["report"].reconciliation == first.context["report"].reconciliation

    inside = {"started_at__gte": BASE + timedelta(days=5), "ended_at__lt": BASE + timedelta(days=18)}
    template = UsageRecord.objects.filter(account="big1", **inside).first()
    UsageRecord.objects.create(
        **{
            **{field.attname: getattr(template, field.attname) for field in UsageRecord._meta.concrete_fields},
            "id": None,
            "slurm_job_id": "999999",
            "job_id": None,
        }
    )
    AccountingCursor.objects.update(ingested_until=timezone.now())  # the ingest that copied it
    renewed = client.get(url).context["report"]
    assert renewed.total.jobs == first.context["report"].total.jobs + 1
    assert renewed.reconciliation != first.context["report"].reconciliation, "the new record is compared too"


def test_a_tiny_course_costs_the_same_number_of_queries(client, db, django_assert_num_queries):
    course, _ = build(students=2, records=3)
    login_instructor(client, course)
    with django_assert_num_queries(REPORT_PAGE_QUERIES):
        response = client.get(report_url(date(2026, 9, 1), date(2026, 10, 5)))
    assert response.status_code == 200


def test_per_student_gpu_hours_are_clipped_to_the_range_in_the_database(db):
    course, runs = build(students=30, records=2_000, outside=10)
    window = ReportRange.for_days(date(2026, 9, 10), date(2026, 9, 12))
    report = course_report(course=course, window=window)
    expected = expected_gpu_seconds(runs, window)
    assert {row.key: row.gpu_seconds for row in report.students if row.gpu_seconds} == expected
    assert report.total.gpu_seconds == sum(expected.values())
    in_range = [(submit, start) for _, _, submit, start, end, _ in runs if submit < window.end and end >= window.start]
    waits = [(start - submit).total_seconds() for submit, start in in_range]
    assert report.total.median_wait == statistics.median(waits)
    assert round(sum(hours for _, hours in report.days) * 3600) == report.total.gpu_seconds
    assert [day for day, _ in report.days] == [date(2026, 9, 10), date(2026, 9, 11), date(2026, 9, 12)]


def test_the_chart_splits_a_job_across_the_days_it_ran(db):
    course = Course.objects.create(slug="c", code="C", title="C", term="Fall", slurm_account="acct")
    start = datetime(2026, 9, 1, 20, 0, tzinfo=UTC)
    UsageRecord.objects.create(
        cluster="lab",
        slurm_job_id="1",
        submitted_at=start,
        user="u",
        account="acct",
        state="COMPLETED",
        started_at=start,
        ended_at=start + timedelta(hours=30),
        elapsed_seconds=30 * 3600,
        gpus=2,
        ingested_at=start,
    )
    report = course_report(course=course, window=ReportRange.for_days(date(2026, 9, 1), date(2026, 9, 3)))
    assert report.days == [(date(2026, 9, 1), 8.0), (date(2026, 9, 2), 48.0), (date(2026, 9, 3), 4.0)]
    assert report.total.gpu_seconds == 60 * 3600


def test_outside_jobs_are_differences_but_only_the_first_500_are_listed(db):
    course, _ = build(students=3, records=5, outside=510)
    report = course_report(course=course, window=ReportRange.for_days(date(2026, 8, 1), date(2026, 10, 31)))
    outside = [d for d in report.reconciliation.differences if d.kind == "outside"]
    assert len(outside) == 500 and report.reconciliation.cut
    assert report.reconciliation.slurm.jobs == 515 and report.reconciliation.portal.jobs == 5


def test_a_job_the_portal_and_slurm_see_differently_is_listed_with_its_cause(db):
    course, _ = build(students=2, records=3)
    job = Job.objects.order_by("pk").first()
    Job.objects.filter(pk=job.pk).update(status=Status.RUNNING, gpus=job.gpus + 1)
    other = Job.objects.order_by("pk")[1]
    UsageRecord.objects.filter(job=other).delete()
    report = course_report(course=course, window=ReportRange.for_days(date(2026, 8, 1), date(2026, 10, 31)))
    causes = {d.kind: d for d in report.reconciliation.differences}
    assert set(causes) == {"disagrees", "missing"}
    assert causes["disagrees"].job_uuid == job.uuid
    assert f"the portal asked for {job.gpus + 1}" in causes["disagrees"].cause
    assert "the portal says running" in causes["disagrees"].cause
    assert causes["missing"].job_uuid == other.uuid and causes["missing"].slurm_job_id == other.slurm_job_id
    assert not report.reconciliation.agrees


def test_saving_20000_accounting_records_twice_leaves_the_same_rows(db):
    now = timezone.now()
    records = [
        slurm.AcctRecord(
            job_id=str(n),
            name=f"job{n}",
            user=f"s{n % 300:03d}",
            account="big1",
            partition="gpu",
            qos="normal",
            reservation="",
            state="COMPLETED",
            cancelled_by="",
            exit_code=0,
            signal=0,
            reason="",
            submit=BASE + timedelta(seconds=n),
            start=BASE + timedelta(seconds=n + 5),
            end=BASE + timedelta(seconds=n + 65),
            elapsed_seconds=60,
            gpus=n % 3,
            cpus=2,
            mem_mb=1000,
            billing=2,
        )
        for n in range(20_000)
    ]
    started = time.monotonic()
    usage_records_save(cluster="lab", records=records, now=now)
    first = time.monotonic() - started
    snapshot = list(UsageRecord.objects.order_by("pk").values())
    started = time.monotonic()
    with CaptureQueriesContext(connection) as queries:
        usage_records_save(cluster="lab", records=records, now=now + timedelta(minutes=5))
    again = time.monotonic() - started
    assert list(UsageRecord.objects.order_by("pk").values()) == snapshot
    assert len(snapshot) == 20_000 and len(queries) <= 20_000 // 2000 + 1
    print(f"\nsaving 20,000 records: {first:.2f}s first time, {again:.2f}s again ({len(queries)} queries)")
