"""Reads for the usage reports: every number is aggregated in the database.

A report covers a range [start, end). A usage record belongs to the range when it was
submitted before the end and had not ended before the start (sacct's -S/-E rule); its
time counts only inside the range ("clipped"): GPU-seconds = gres/gpu in AllocTRES x
overlap(start..end of the job, the range). Python only reshapes the few aggregated rows
(one per student, per assignment, per day group); each page costs a constant number of
queries however many records there are.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.conf import settings
from django.db.models import (
    Aggregate,
    BigIntegerField,
    Case,
    CharField,
    Count,
    DateTimeField,
    F,
    FloatField,
    Func,
    Q,
    QuerySet,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Coalesce, Greatest, Least, TruncDate
from django.utils import timezone

from courses.models import Course, Enrollment, Role
from reports.models import UsageRecord
from slurm import states

#: The Slurm states of jobs still waiting or running (slurm.states), in a fixed order for the SQL.
LIVE_STATES = sorted(states.LIVE_STATES)
ZERO = Value(0, output_field=BigIntegerField())
#: Differences listed per kind; one more is fetched to know that the list was cut.
DIFFERENCES_SHOWN = 500


class Epoch(Func):
    """A datetime as whole seconds since 1970, computed by the database."""

    output_field = BigIntegerField()
    template = "CAST(EXTRACT(EPOCH FROM %(expressions)s) AS bigint)"

    def as_sqlite(self, compiler, connection, **extra):
        # '%%%%s' survives both the template's % and the backend's "%s" -> "?" rewrite.
        return self.as_sql(compiler, connection, template="CAST(strftime('%%%%s', %(expressions)s) AS integer)")


class _SqliteMedian:
    """SQLite has no percentile function; the demo database gets this one (same single query)."""

    def __init__(self) -> None:
        self.values: list[float] = []

    def step(self, value) -> None:
        if value is not None:
            self.values.append(value)

    def finalize(self) -> float | None:
        values = sorted(self.values)
        if not values:
            return None
        middle = len(values) // 2
        return float(values[middle]) if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


class Median(Aggregate):
    """The median: PostgreSQL's percentile_cont(0.5); a registered aggregate on SQLite."""

    function = "PERCENTILE_CONT"
    name = "Median"
    output_field = FloatField()
    template = "%(function)s(0.5) WITHIN GROUP (ORDER BY %(expressions)s)"

    def as_sqlite(self, compiler, connection, **extra):
        connection.ensure_connection()
        connection.connection.create_aggregate("lq_median", 1, _SqliteMedian)
        plain = self.copy()
        plain.function, plain.template = "lq_median", "%(function)s(%(expressions)s)"
        return plain.as_sql(compiler, connection, **extra)


@dataclass(frozen=True)
class ReportRange:
    """[start, end) in time; usually whole local days (``for_days``), in tests a few minutes."""

    start: datetime
    end: datetime

    @classmethod
    def for_days(cls, first: date, last: date) -> ReportRange:
        """From the start of ``first`` to the end of ``last``, local time."""
        return cls(_midnight(first), _midnight(last + timedelta(days=1)))

    @property
    def first(self) -> date:
        return timezone.localdate(self.start)

    @property
    def last(self) -> date:
        return timezone.localdate(self.end - timedelta(microseconds=1))

    @property
    def days(self) -> list[date]:
        return [self.first + timedelta(days=n) for n in range((self.last - self.first).days + 1)]


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=timezone.get_current_timezone())


def _hours(seconds: int) -> str:
    return f"{seconds / 3600:.3f}"


@dataclass(frozen=True)
class Usage:
    """One row of a report: a student, an assignment, a course, or everything."""

    label: str
    key: str = ""
    jobs: int = 0
    gpu_seconds: int = 0
    cpu_seconds: int = 0
    billing_seconds: int = 0
    completed: int = 0
    failed: int = 0
    cancelled: int = 0
    live: int = 0
    median_wait: float | None = None
    note: str = ""

    HEADER = (
        "Name",
        "Key",
        "Jobs",
        "GPU-hours",
        "CPU-hours",
        "Usage units",
        "Completed",
        "Failed",
        "Cancelled",
        "Running or waiting",
        "Success rate",
        "Median queue wait (s)",
        "Attempts per success",
    )

    @classmethod
    def from_row(cls, row: dict, label: str, key: str = "", note: str = "") -> Usage:
        return cls(
            label=label,
            key=key,
            note=note,
            jobs=row["jobs"],
            gpu_seconds=int(row["gpu_seconds"] or 0),
            cpu_seconds=int(row["cpu_seconds"] or 0),
            billing_seconds=int(row["billing_seconds"] or 0),
            completed=row["completed"],
            failed=row["failed"],
            cancelled=row["cancelled"],
            live=row["live"],
            median_wait=row["median_wait"],
        )

    @property
    def gpu_hours(self) -> float:
        return self.gpu_seconds / 3600

    @property
    def usage_units(self) -> float:
        """Slurm billing units x hours: an accounting unit, not money."""
        return self.billing_seconds / 3600

    @property
    def finished(self) -> int:
        return self.jobs - self.live

    @property
    def success_rate(self) -> float | None:
        return self.completed / self.finished if self.finished else None

    @property
    def attempts_per_success(self) -> float | None:
        return self.jobs / self.completed if self.completed else None

    @property
    def cells(self) -> list[str]:
        """The row exactly as both the page and the CSV show it."""
        rate, attempts = self.success_rate, self.attempts_per_success
        return [
            self.label,
            self.key,
            str(self.jobs),
            _hours(self.gpu_seconds),
            _hours(self.cpu_seconds),
            _hours(self.billing_seconds),
            str(self.completed),
            str(self.failed),
            str(self.cancelled),
            str(self.live),
            "" if rate is None else f"{rate:.0%}",
            "" if self.median_wait is None else f"{self.median_wait:.0f}",
            "" if attempts is None else f"{attempts:.2f}",
        ]


def seconds_in(window: ReportRange, now: datetime, start: str = "started_at", end: str = "ended_at") -> Func:
    """Seconds of a job's run inside the window (0 if none); a job still running runs until ``now``."""
    run_start = Epoch(Coalesce(start, end, Value(now, output_field=DateTimeField())))
    run_end = Epoch(Coalesce(end, Value(now, output_field=DateTimeField())))
    clipped = Least(run_end, Value(int(window.end.timestamp()))) - Greatest(
        run_start, Value(int(window.start.timestamp()))
    )
    return Greatest(clipped, ZERO, output_field=BigIntegerField())


def cluster_named(field: str = "cluster") -> Case:
    """A job's (or course's) cluster as the database sees it: the field, or the portal's own cluster when empty.

    Usage records always name their cluster; jobs and courses leave it empty for the portal's own."""
    own = Value(settings.LABQUEUE_SLURM_CLUSTER, output_field=CharField())
    return Case(When(**{field: ""}, then=own), default=F(field), output_field=CharField())


def outcome_is(outcome: str) -> Q:
    """Records whose Slurm state has this portal outcome: slurm.states.final_outcome as a database filter."""
    if outcome == states.OUTCOME_FAILED:
        return ~Q(state__in=LIVE_STATES) & ~Q(state__in=sorted(states.OUTCOME_OF_STATE))
    return Q(state__in=sorted(states.states_with_outcome(outcome)))


def expected_outcome() -> Case:
    """The portal outcome each record's Slurm state leads to, "live" for an unfinished one (slurm.states)."""
    return Case(
        *(When(state=state, then=Value(outcome)) for state, outcome in sorted(states.OUTCOME_OF_STATE.items())),
        When(state__in=LIVE_STATES, then=Value("live")),
        default=Value(states.OUTCOME_FAILED),
    )


def _metrics(window: ReportRange, now: datetime) -> dict:
    seconds = seconds_in(window, now)
    return {
        "jobs": Count("pk"),
        "gpu_seconds": Sum(F("gpus") * seconds, output_field=BigIntegerField()),
        "cpu_seconds": Sum(F("cpus") * seconds, output_field=BigIntegerField()),
        "billing_seconds": Sum(F("billing") * seconds, output_field=BigIntegerField()),
        "completed": Count("pk", filter=outcome_is(states.OUTCOME_COMPLETED)),
        "failed": Count("pk", filter=outcome_is(states.OUTCOME_FAILED)),
        "cancelled": Count("pk", filter=outcome_is(states.OUTCOME_CANCELLED)),
        "live": Count("pk", filter=Q(state__in=LIVE_STATES)),
        "median_wait": Median(Epoch("started_at") - Epoch("submitted_at"), filter=Q(started_at__isnull=False)),
    }


def usage_records_in_range(*, window: ReportRange, accounts: list[str] = (), user: str = "") -> QuerySet:
    """Records that were submitted before the end and had not ended before the start."""
    records = UsageRecord.objects.filter(submitted_at__lt=window.end).filter(
        Q(ended_at__isnull=True) | Q(ended_at__gte=window.start)
    )
    if accounts:
        records = records.filter(account__in=accounts)
    if user:
        records = records.filter(user=user)
    return records.order_by()


def usage_total(*, records: QuerySet, window: ReportRange, now: datetime, label: str = "Total") -> Usage:
    return Usage.from_row(records.aggregate(**_metrics(window, now)), label)


def usage_by_cluster(*, records: QuerySet, window: ReportRange, now: datetime) -> list[Usage]:
    """One row per cluster: the portal's own and LABQUEUE_SLURM_OTHER_CLUSTERS (zeros included), then any other
    cluster with records in the range. A job id is a job only on its cluster: the same id on two is two jobs,
    one in each row. One query; the pages show the rows only when there is more than one."""
    found = {row["cluster"]: row for row in records.values("cluster").annotate(**_metrics(window, now))}
    names = [settings.LABQUEUE_SLURM_CLUSTER, *settings.LABQUEUE_SLURM_OTHER_CLUSTERS]
    names += sorted(set(found) - set(names))
    return [Usage.from_row(found[name], name) if name in found else Usage(label=name) for name in names]


def usage_by_user(*, course: Course, records: QuerySet, window: ReportRange, now: datetime) -> list[Usage]:
    """One row per student of the course (zeros included) plus anyone else who used the account. Two queries."""
    by_user = {row["user"]: row for row in records.values("user").annotate(**_metrics(window, now))}
    students = Enrollment.objects.filter(course=course, role=Role.STUDENT).values_list(
        "user__netid", "user__username", "user__first_name", "user__last_name"
    )
    rows = []
    for netid, username, first, last in students:
        name = f"{first} {last}".strip() or username
        row = by_user.pop(netid, None) if netid else None
        rows.append(Usage.from_row(row, name, netid or "") if row else Usage(label=name, key=netid or ""))
    for netid, row in by_user.items():
        rows.append(Usage.from_row(row, netid, netid, note="not a student of this course"))
    return sorted(rows, key=lambda usage: (-usage.gpu_seconds, usage.label.lower()))


def usage_by_assignment(*, records: QuerySet, window: ReportRange, now: datetime, course: Course) -> list[Usage]:
    """One row per assignment with usage, and one for jobs that did not come through the portal. One query."""
    grouped = records.values("job__assignment__course_id", "job__assignment__slug", "job__assignment__title")
    rows = []
    for row in grouped.annotate(**_metrics(window, now)):
        if row["job__assignment__slug"] is None:
            rows.append(Usage.from_row(row, "Outside the portal", note="submitted with sbatch, not through LabQueue"))
        elif row["job__assignment__course_id"] != course.pk:
            rows.append(
                Usage.from_row(
                    row,
                    row["job__assignment__title"],
                    row["job__assignment__slug"],
                    note="an assignment of another course",
                )
            )
        else:
            rows.append(Usage.from_row(row, row["job__assignment__title"], row["job__assignment__slug"]))
    return sorted(rows, key=lambda usage: (-usage.gpu_seconds, usage.label.lower()))


def usage_by_state(*, records: QuerySet) -> list[tuple[str, int]]:
    return [(row["state"], row["jobs"]) for row in records.values("state").annotate(jobs=Count("pk")).order_by("state")]


def gpu_hours_by_day(*, records: QuerySet, window: ReportRange, now: datetime) -> list[tuple[date, float]]:
    """GPU-hours per local day, each job's time split across the days it ran. One query.

    The database groups jobs by (first day, last day) of their clipped run and sums
    gpus, gpus x start and gpus x end; a group's share of each day follows from those
    three sums, so Python touches only the groups, never the records.
    """
    now_value = Value(now, output_field=DateTimeField())
    clipped_start = Greatest(Coalesce("started_at", "ended_at", now_value), Value(window.start))
    clipped_end = Least(Coalesce("ended_at", now_value), Value(window.end))
    groups = (
        records.filter(gpus__gt=0)
        .annotate(run_start=clipped_start, run_end=clipped_end)
        .annotate(start_s=Epoch("run_start"), end_s=Epoch("run_end"))
        .filter(end_s__gt=F("start_s"))
        .values(first=TruncDate("run_start"), last=TruncDate("run_end"))
        .annotate(
            gpu_count=Sum("gpus"),
            start_sum=Sum(F("gpus") * F("start_s"), output_field=BigIntegerField()),
            end_sum=Sum(F("gpus") * F("end_s"), output_field=BigIntegerField()),
        )
        .order_by()
    )
    # A run starts inside the window, so its first day and the days after it are always here; it may end at the
    # window's end, the midnight after its last day, so a "last" day past the window's is added with nothing.
    seconds = {day: 0 for day in window.days}

    def midnight(day: date) -> int:
        return int(_midnight(day).timestamp())

    for group in groups:
        first, last, gpus = group["first"], group["last"], int(group["gpu_count"])
        start_sum, end_sum = int(group["start_sum"]), int(group["end_sum"])
        if first == last:
            seconds[first] += end_sum - start_sum
            continue
        seconds[first] += gpus * midnight(first + timedelta(days=1)) - start_sum
        day = first + timedelta(days=1)
        while day < last:
            seconds[day] += gpus * (midnight(day + timedelta(days=1)) - midnight(day))
            day += timedelta(days=1)
        seconds[last] = seconds.get(last, 0) + end_sum - gpus * midnight(last)
    return [(day, seconds[day] / 3600) for day in window.days]


@dataclass(frozen=True)
class MyUsage:
    total: Usage
    clusters: list[Usage]  # per cluster (usage_by_cluster); the page shows them when there are several
    assignments: list[Usage]
    days: list[tuple[date, float]]


def my_usage(*, course: Course, netid: str, window: ReportRange, now: datetime | None = None) -> MyUsage:
    """One person's own usage on the course account; nobody else's rows. Four queries."""
    now = now or timezone.now()
    records = usage_records_in_range(window=window, accounts=[course.slurm_account], user=netid)
    if not netid:
        records = records.none()
    return MyUsage(
        total=usage_total(records=records, window=window, now=now, label="You"),
        clusters=usage_by_cluster(records=records, window=window, now=now),
        assignments=usage_by_assignment(records=records, window=window, now=now, course=course),
        days=gpu_hours_by_day(records=records, window=window, now=now),
    )


@dataclass(frozen=True)
class SiteTotals:
    clusters: list[Usage]  # usage_by_cluster
    total: Usage


def site_totals(*, window: ReportRange, now: datetime | None = None) -> SiteTotals:
    """Every record in the range, per cluster and in all, for operations staff. Two queries."""
    now = now or timezone.now()
    records = usage_records_in_range(window=window)
    return SiteTotals(
        clusters=usage_by_cluster(records=records, window=window, now=now),
        total=usage_total(records=records, window=window, now=now, label="All clusters"),
    )


def site_has_several_clusters() -> bool:
    """Whether the usage overview has a line per cluster (usage_by_cluster gives more than one row for some range):
    other clusters are set (LABQUEUE_SLURM_OTHER_CLUSTERS) or records of a cluster other than the portal's own
    were copied once. One lookup in the records' (cluster, ...) index at most, however many records there are."""
    if settings.LABQUEUE_SLURM_OTHER_CLUSTERS:
        return True
    own = settings.LABQUEUE_SLURM_CLUSTER
    return UsageRecord.objects.filter(Q(cluster__lt=own) | Q(cluster__gt=own)).exists()


def usage_overview(*, window: ReportRange, now: datetime | None = None) -> list[tuple[Course | None, Usage]]:
    """Every course (by its Slurm account) and every other account with usage, for operations staff. Two queries."""
    return overview_rows(usage_by_account(window=window, now=now))


def usage_by_account(*, window: ReportRange, now: datetime | None = None) -> dict[str, Usage]:
    """The usage of every account with records in the range, by account (labelled later). One query."""
    now = now or timezone.now()
    records = usage_records_in_range(window=window)
    rows = records.values("account").annotate(**_metrics(window, now))
    return {row["account"]: Usage.from_row(row, "", row["account"]) for row in rows}


def overview_rows(by_account: dict[str, Usage]) -> list[tuple[Course | None, Usage]]:
    """The overview's rows: every course, with its account's usage, then every other account with usage. One query."""
    rows: list[tuple[Course | None, Usage]] = []
    for course in Course.objects.order_by("code", "term"):
        usage = by_account.get(course.slurm_account, Usage("", course.slurm_account))
        rows.append((course, dataclasses.replace(usage, label=str(course))))
    for account in sorted(set(by_account) - {course.slurm_account for course, _ in rows}):
        rows.append((None, dataclasses.replace(by_account[account], label="no course in the portal")))
    return rows
