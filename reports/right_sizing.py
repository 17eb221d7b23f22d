"""Asked for against used, for a course's staff: the course report's section and its CSV (web side).

From the portal's own rows of the course's jobs that finished in the range (what the sync recorded: elapsed time
from sacct -X, CPU time and peak memory from slurm.job_usage); no Slurm call. GPU-hours asked for are GPUs x the
time limit, GPU-hours used GPUs x the time the job ran (GPU utilisation is not measured on every cluster, so
"used" means held). A job asked for far more than it used when it used under a quarter of its time limit or,
where measured, of its memory (jobs.efficiency.OVER_ASKED), on a job that completed.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, ExpressionWrapper, F, FloatField, Q, Sum, Value

from courses.models import Course
from jobs.efficiency import OVER_ASKED
from jobs.models import FINISHED_SLURM, Job, Status
from reports.queries import ReportRange

#: The over-asking jobs listed on the page (the CSV has them all).
OVER_ASKED_SHOWN = 50


@dataclass(frozen=True)
class AskedAndUsed:
    """One assignment's finished jobs in the range."""

    assignment: str
    jobs: int
    gpu_hours_asked: float
    gpu_hours_used: float
    over_asked: int

    @property
    def used_percent(self) -> int | None:
        return round(100 * self.gpu_hours_used / self.gpu_hours_asked) if self.gpu_hours_asked else None

    @property
    def cells(self) -> list:
        used = "" if self.used_percent is None else self.used_percent
        return [
            self.assignment,
            self.jobs,
            f"{self.gpu_hours_asked:.3f}",
            f"{self.gpu_hours_used:.3f}",
            used,
            self.over_asked,
        ]


HEADER = ["Assignment", "Jobs", "GPU-hours asked for", "GPU-hours used", "Used (%)", "Jobs that asked far more"]
JOB_HEADER = ["Job", "Student", "Assignment", "Ran (s)", "Time limit (min)", "Peak memory (MB)", "Memory asked (MB)"]


def _finished(course: Course, window: ReportRange):
    return Job.objects.filter(
        assignment__course=course,
        status__in=FINISHED_SLURM,
        elapsed_seconds__isnull=False,
        ended_at__gte=window.start,
        ended_at__lt=window.end,
    )


def _over_asked_filter() -> Q:
    """A completed job that used under OVER_ASKED of its time limit or, where measured, of its memory."""
    share = Value(OVER_ASKED, output_field=FloatField())
    limit = ExpressionWrapper(F("minutes") * 60 * share, output_field=FloatField())
    memory = ExpressionWrapper(F("mem_mb") * share, output_field=FloatField())
    return Q(status=Status.COMPLETED) & (
        Q(elapsed_seconds__lt=limit) | Q(max_rss_mb__isnull=False, max_rss_mb__lt=memory)
    )


def asked_and_used_by_assignment(*, course: Course, window: ReportRange) -> list[AskedAndUsed]:
    """Per assignment, in one query."""
    rows = (
        _finished(course, window)
        .values("assignment__title")
        .annotate(
            jobs=Count("pk"),
            asked_seconds=Sum(F("gpus") * F("minutes") * 60),
            used_seconds=Sum(F("gpus") * F("elapsed_seconds")),
            over_asked=Count("pk", filter=_over_asked_filter()),
        )
        .order_by("assignment__title")
    )
    return [
        AskedAndUsed(
            assignment=row["assignment__title"],
            jobs=row["jobs"],
            gpu_hours_asked=(row["asked_seconds"] or 0) / 3600,
            gpu_hours_used=(row["used_seconds"] or 0) / 3600,
            over_asked=row["over_asked"],
        )
        for row in rows
    ]


def over_asked_jobs(*, course: Course, window: ReportRange, limit: int | None = OVER_ASKED_SHOWN) -> list[Job]:
    """The completed jobs that asked for far more than they used, the furthest off first."""
    jobs = (
        _finished(course, window)
        .filter(_over_asked_filter())
        .select_related("user", "assignment")
        .order_by("elapsed_seconds", "-minutes", "pk")
    )
    return list(jobs[:limit] if limit else jobs)


def job_cells(job: Job) -> list:
    return [
        str(job.uuid),
        job.run_as,
        job.assignment.title,
        job.elapsed_seconds,
        job.minutes,
        "" if job.max_rss_mb is None else job.max_rss_mb,
        job.mem_mb,
    ]
