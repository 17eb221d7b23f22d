"""A big course for measuring pages at scale, for the benchmarks (scripts/bench_pages.py calls `seed_scale`
once Django is set up): 300 students, 20,000 jobs and 20,000 usage records over the last 60 days, one student
with 500 jobs. Nothing runs in Slurm.

Idempotent: a second run finds the data set complete and changes nothing; a partial one is made again.
Only on a database of its own (the benchmark's), never on a production one.
"""

import random
import uuid
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from courses.models import Assignment, Course, Role
from jobs.models import Job, Status
from reports.models import AccountingCursor, UsageRecord

SLUG = "scale"
ACCOUNT = "scale"
#: Final statuses and how often each occurs, and the Slurm state of its usage record.
OUTCOMES = [(Status.COMPLETED, "COMPLETED", 70), (Status.FAILED, "FAILED", 20), (Status.CANCELLED, "CANCELLED", 10)]
EXPLANATIONS = ["", "out_of_memory", "time_limit", "python_error"]


def seed_scale(*, students: int = 300, jobs: int = 20_000, busy_student_jobs: int = 500) -> str:
    """Seed the course (or find it seeded); says what it did."""
    course = Course.objects.filter(slug=SLUG).first()
    if course and Job.objects.filter(assignment__course=course).count() == jobs:
        cursor = AccountingCursor.objects.filter(cluster=settings.LABQUEUE_SLURM_CLUSTER).exists()
        if cursor and UsageRecord.objects.filter(account=ACCOUNT).count() == jobs:
            return f"The course '{SLUG}' is already seeded ({jobs} jobs); nothing changed."
    with transaction.atomic():
        _seed(students=students, jobs=jobs, busy=busy_student_jobs)
        # Accounting copied up to now, so the course report reconciles every record as in production.
        AccountingCursor.objects.update_or_create(
            cluster=settings.LABQUEUE_SLURM_CLUSTER, defaults={"ingested_until": timezone.now()}
        )
    if connection.vendor == "postgresql":  # fresh statistics, as autovacuum would gather them
        with connection.cursor() as cursor:
            for model in (Job, UsageRecord, Assignment, Course):
                cursor.execute(f"ANALYZE {model._meta.db_table}")
    return f"Seeded '{SLUG}': {students} students, {jobs} jobs, {jobs} usage records."


def _seed(*, students: int, jobs: int, busy: int) -> None:
    UsageRecord.objects.filter(account=ACCOUNT).delete()
    Job.objects.filter(assignment__course__slug=SLUG).delete()
    course, _ = Course.objects.update_or_create(
        slug=SLUG,
        defaults={
            "code": "SCALE",
            "title": "Pages at scale",
            "term": "-",
            "slurm_account": ACCOUNT,
            "partition": "gpu",
        },
    )
    assignments = [
        Assignment.objects.update_or_create(
            course=course, slug=f"a{number}", defaults={"title": f"Assignment {number}", "script_template": "true"}
        )[0]
        for number in range(1, 11)
    ]
    people = _people(course, students)
    rng = random.Random(14)
    now = timezone.now()
    weights = [weight for _, _, weight in OUTCOMES]
    rows, records = [], []
    for number in range(jobs):
        # The first student has `busy` jobs; the others share the rest.
        user = people[0] if number < busy else people[1 + number % (len(people) - 1)]
        status, state, _ = rng.choices(OUTCOMES, weights=weights)[0]
        submitted = now - timedelta(days=60) + timedelta(seconds=rng.randrange(60 * 86400))
        started = submitted + timedelta(seconds=rng.randrange(600))
        elapsed = rng.randrange(30, 3600)
        job_uuid = uuid.uuid4()
        slurm_id = str(100_000 + number)
        rows.append(
            Job(
                uuid=job_uuid,
                user=user,
                assignment=assignments[number % len(assignments)],
                run_as=user.netid,
                gpus=1,
                cpus=2,
                mem_mb=4000,
                minutes=60,
                account=ACCOUNT,
                script="",
                workdir=f"/nonexistent/{user.netid}/{job_uuid}",
                status=status,
                slurm_job_id=slurm_id,
                slurm_state=state,
                exit_code=0 if status == Status.COMPLETED else 1,
                submitted_at=submitted,
                started_at=started,
                ended_at=started + timedelta(seconds=elapsed),
                elapsed_seconds=elapsed,
                explanation_key=rng.choice(EXPLANATIONS) if status == Status.FAILED else "",
            )
        )
        records.append(
            UsageRecord(
                cluster=settings.LABQUEUE_SLURM_CLUSTER,
                slurm_job_id=slurm_id,
                submitted_at=submitted,
                job_name=f"lq-{job_uuid}",
                user=user.netid,
                account=ACCOUNT,
                partition="gpu",
                state=state,
                exit_code=0 if status == Status.COMPLETED else 1,
                started_at=started,
                ended_at=started + timedelta(seconds=elapsed),
                elapsed_seconds=elapsed,
                gpus=1,
                cpus=2,
                mem_mb=4000,
                billing=2,
                ingested_at=now,
            )
        )
    # The course began with its term, sixty days ago: the report page opens on every job (from the day it was made).
    Course.objects.filter(pk=course.pk).update(created_at=now - timedelta(days=61))
    made = Job.objects.bulk_create(rows, batch_size=2000)
    Job.objects.filter(pk__in=[job.pk for job in made]).update(created_at=F("submitted_at"))
    for record, job in zip(records, made, strict=True):
        record.job = job
    UsageRecord.objects.bulk_create(records, batch_size=2000)


def _people(course: Course, students: int) -> list:
    User = get_user_model()
    names = [f"scale{number:03d}" for number in range(1, students + 1)]
    have = set(User.objects.filter(username__in=names).values_list("username", flat=True))
    User.objects.bulk_create(
        [User(username=name, netid=name, password="!") for name in names if name not in have], batch_size=1000
    )
    users = list(User.objects.filter(username__in=names).order_by("username"))
    staff = [("scale-ta", Role.TA), ("scale-instructor", Role.INSTRUCTOR)]
    for name, _ in staff:
        User.objects.get_or_create(username=name, defaults={"password": "!"})
    enrolled = set(course.enrollments.values_list("user__username", flat=True))
    wanted = [(user, Role.STUDENT) for user in users] + [
        (User.objects.get(username=name), role) for name, role in staff
    ]
    missing = [(user, role) for user, role in wanted if user.username not in enrolled]
    course.enrollments.bulk_create([course.enrollments.model(course=course, user=u, role=r) for u, r in missing])
    return users
