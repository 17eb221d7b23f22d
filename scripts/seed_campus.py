"""A campus-sized database for the benchmarks (scripts/bench_campus.py calls `seed_campus` once Django is set up):
five years of a college. The course 'scale' of seed_scale.py (300 students, 20,000 jobs in the last 60 days, the
measured student scale001 with 500 of them) and 99 more courses, ten a term over ten terms, each with four
assignments, a TA, an instructor and 150 of 2,700 more students: 3,000 students, 100 courses, 1,000,000 jobs and
1,000,000 usage records in all. A course's jobs fall in its term; its row was made when the term began. Jobs
that ended more than RETAIN_DAYS ago had their files removed, as the retention purge would have done; what they
used was collected, as the sync does. One operations user (`campus-ops`) sees the usage overview. Nothing runs
in Slurm.

Rows are written with COPY into the tables as the migrations make them (every index in place), in one
transaction: an interrupted seed leaves nothing. Idempotent: a second run finds the data set complete and
changes nothing. Only on a database of its own (the benchmark's), never on a production one.
"""

import random
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, models, transaction
from django.utils import timezone
from seed_scale import EXPLANATIONS, OUTCOMES, seed_scale

from courses.models import Assignment, Course, Enrollment, Role
from jobs.models import Job, Status
from reports.models import AccountingCursor, UsageRecord

PREFIX = "campus"
COURSES = 99  # and 'scale'
STUDENTS = 2_700  # and the 300 of 'scale'
STUDENTS_PER_COURSE = 150
ASSIGNMENTS = 4
JOBS = 980_000  # and the 20,000 of 'scale'
TERMS = 10
TERM_DAYS = 120
YEARS = 5
#: Files of jobs that ended longer ago than this were removed (LABQUEUE_RETAIN_JOB_FILES_DAYS of the campus).
RETAIN_DAYS = 180
OPS = "campus-ops"
FIRST_SLURM_ID = 1_000_000


def seed_campus() -> str:
    """Seed the campus (or find it seeded); says what it did."""
    print(seed_scale())
    courses = Course.objects.filter(slug__startswith=f"{PREFIX}-")
    if courses.count() == COURSES:
        jobs = Job.objects.filter(assignment__course__in=courses).count()
        records = UsageRecord.objects.filter(account__startswith=PREFIX).count()
        if jobs == JOBS and records == JOBS:
            return f"The campus is already seeded ({COURSES + 1} courses, {JOBS + 20_000} jobs); nothing changed."
    with transaction.atomic():
        UsageRecord.objects.filter(account__startswith=PREFIX).delete()
        Job.objects.filter(assignment__course__slug__startswith=f"{PREFIX}-").delete()
        _seed(now=timezone.now())
        AccountingCursor.objects.update_or_create(
            cluster=settings.LABQUEUE_SLURM_CLUSTER, defaults={"ingested_until": timezone.now()}
        )
    with connection.cursor() as cursor:  # what autovacuum would have done to a table that grew over five years
        for model in (Job, UsageRecord, Assignment, Course, Enrollment, get_user_model()):
            cursor.execute(f"VACUUM ANALYZE {model._meta.db_table}")
    return f"Seeded the campus: {COURSES} courses, {STUDENTS} students, {JOBS} jobs, {JOBS} usage records."


def _seed(*, now: datetime) -> None:
    User = get_user_model()
    students = _users([f"{PREFIX}{number:04d}" for number in range(1, STUDENTS + 1)])
    ops = _users([OPS])[0]
    User.objects.filter(pk=ops.pk).update(is_staff=True)
    rng = random.Random(2026)
    first_term = now - timedelta(days=365 * YEARS)
    plans = []
    for number in range(1, COURSES + 1):
        term = number % TERMS
        begins = first_term + timedelta(days=term * 365 * YEARS / TERMS)
        course, _ = Course.objects.update_or_create(
            slug=f"{PREFIX}-{number:03d}",
            defaults={
                "code": f"C{number:03d}",
                "title": f"Campus course {number}",
                "term": f"T{term}",
                "slurm_account": f"{PREFIX}{number:03d}",
                "partition": "gpu",
            },
        )
        Course.objects.filter(pk=course.pk).update(created_at=begins)
        assignments = [
            Assignment.objects.update_or_create(
                course=course, slug=f"a{index}", defaults={"title": f"Assignment {index}", "script_template": "true"}
            )[0]
            for index in range(1, ASSIGNMENTS + 1)
        ]
        roster = rng.sample(students, STUDENTS_PER_COURSE)
        staff = _users([f"{PREFIX}-ta-{number:03d}", f"{PREFIX}-instructor-{number:03d}"])
        wanted = [(user, Role.STUDENT) for user in roster] + list(zip(staff, (Role.TA, Role.INSTRUCTOR), strict=True))
        Enrollment.objects.bulk_create(
            [Enrollment(course=course, user=user, role=role) for user, role in wanted], ignore_conflicts=True
        )
        plans.append((course, begins, assignments, roster))
    start = _next_id(Job)
    _copy(Job, _job_rows(plans, start=start, now=now, rng_seed=14))
    _copy(UsageRecord, _record_rows(plans, start=start, now=now, rng_seed=14))
    with connection.cursor() as cursor:
        for model in (Job, UsageRecord):
            table = model._meta.db_table
            cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")


def _users(names: list[str]) -> list:
    User = get_user_model()
    have = set(User.objects.filter(username__in=names).values_list("username", flat=True))
    User.objects.bulk_create(
        [User(username=name, netid=name, password="!") for name in names if name not in have], batch_size=1000
    )
    return list(User.objects.filter(username__in=names).order_by("username"))


def _runs(plans: list, *, rng_seed: int) -> Iterator[tuple]:
    """(number, course, assignment, user, status, state, submitted, started, elapsed, explanation) of every job,
    the same on every call with the same seed."""
    rng = random.Random(rng_seed)
    weights = [weight for _, _, weight in OUTCOMES]
    per_course = JOBS // len(plans)
    number = 0
    for index, (course, begins, assignments, roster) in enumerate(plans):
        for _ in range(per_course + (JOBS % len(plans) if index == 0 else 0)):
            status, state, _ = rng.choices(OUTCOMES, weights=weights)[0]
            submitted = begins + timedelta(seconds=rng.randrange(TERM_DAYS * 86400))
            started = submitted + timedelta(seconds=rng.randrange(600))
            explanation = rng.choice(EXPLANATIONS) if status == Status.FAILED else ""
            user = roster[rng.randrange(len(roster))]
            assignment = assignments[rng.randrange(len(assignments))]
            yield (
                number,
                course,
                assignment,
                user,
                status,
                state,
                submitted,
                started,
                rng.randrange(30, 3600),
                explanation,
            )
            number += 1


def _job_rows(plans: list, *, start: int, now: datetime, rng_seed: int) -> Iterator[dict]:
    purged_before = now - timedelta(days=RETAIN_DAYS)
    for number, course, assignment, user, status, state, submitted, started, elapsed, explanation in _runs(
        plans, rng_seed=rng_seed
    ):
        ended = started + timedelta(seconds=elapsed)
        job_uuid = uuid.UUID(int=random.Random(number).getrandbits(128), version=4)
        yield {
            "id": start + number,
            "uuid": job_uuid,
            "user_id": user.pk,
            "assignment_id": assignment.pk,
            "run_as": user.netid,
            "gpus": 1,
            "cpus": 2,
            "mem_mb": 4000,
            "minutes": 60,
            "account": course.slurm_account,
            "partition": "gpu",
            "workdir": f"/nonexistent/{user.netid}/{job_uuid}",
            "status": status,
            "slurm_job_id": str(FIRST_SLURM_ID + number),
            "slurm_state": state,
            "exit_code": 0 if status == Status.COMPLETED else 1,
            "explanation_key": explanation,
            "created_at": submitted,
            "updated_at": ended,
            "submitted_at": submitted,
            "started_at": started,
            "ended_at": ended,
            "elapsed_seconds": elapsed,
            "checked_at": ended,
            "usage_collected_at": ended,
            "files_purged_at": ended + timedelta(days=RETAIN_DAYS) if ended < purged_before else None,
        }


def _record_rows(plans: list, *, start: int, now: datetime, rng_seed: int) -> Iterator[dict]:
    for number, course, _, user, status, state, submitted, started, elapsed, _ in _runs(plans, rng_seed=rng_seed):
        job_uuid = uuid.UUID(int=random.Random(number).getrandbits(128), version=4)
        yield {
            "cluster": settings.LABQUEUE_SLURM_CLUSTER,
            "slurm_job_id": str(FIRST_SLURM_ID + number),
            "submitted_at": submitted,
            "job_id": start + number,
            "job_name": f"lq-{job_uuid}",
            "user": user.netid,
            "account": course.slurm_account,
            "partition": "gpu",
            "state": state,
            "exit_code": 0 if status == Status.COMPLETED else 1,
            "started_at": started,
            "ended_at": started + timedelta(seconds=elapsed),
            "elapsed_seconds": elapsed,
            "gpus": 1,
            "cpus": 2,
            "mem_mb": 4000,
            "billing": 2,
            "ingested_at": started + timedelta(seconds=elapsed + 300),
        }


def _next_id(model: type[models.Model]) -> int:
    return (model.objects.aggregate(last=models.Max("pk"))["last"] or 0) + 1


def _copy(model: type[models.Model], rows: Iterator[dict]) -> None:
    """COPY the rows into the model's table; a column a row leaves out gets the field's default, else NULL
    (nullable) or "" (text)."""
    first = next(rows)
    given = list(first)
    fields = [field for field in model._meta.concrete_fields if field.attname not in given and not field.primary_key]
    constants = tuple(
        field.get_db_prep_save(field.get_default() if field.has_default() else None if field.null else "", connection)
        for field in fields
    )
    columns = ", ".join(f'"{name}"' for name in [*given, *(field.column for field in fields)])
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(f"COPY {model._meta.db_table} ({columns}) FROM STDIN") as copy,
    ):
        copy.write_row((*first.values(), *constants))
        for row in rows:
            copy.write_row((*row.values(), *constants))
