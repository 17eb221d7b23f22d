"""What a finished job used against what it asked for, and a right-sized request for the next attempt.

Web side: the job page's "What your job used" and its "Resubmit with these resources" link (jobs.views), and
the resubmit page that link opens (jobs.resubmit_views). Pure: it reads the job's row only; the figures come
from Slurm's accounting through the worker's sync (jobs.dispatch._collect_usage), never from a page.

A suggestion is made only for a COMPLETED job that clearly asked for more than it used (under a quarter of
its memory or time, about half or fewer of its CPUs busy), with room to spare, rounded to numbers a person
would type, at most half of what it asked, never below the floors below and always within the course's limits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from urllib.parse import urlencode

from courses.models import Course
from jobs.models import FINISHED_SLURM, Job, Status

#: A job that used less than this share of its memory or time asked for clearly too much.
OVER_ASKED = 0.25
#: Room a suggestion leaves above the peak (memory is sampled, so a short peak may be missed) and the time used.
MEMORY_HEADROOM = 1.5
TIME_HEADROOM = 2
#: The smallest requests a suggestion makes.
FLOOR_MEM_MB = 256
FLOOR_MINUTES = 5


@dataclass(frozen=True)
class Suggestion:
    """The whole request to make next time (gpus, cpus, mem_mb, minutes) and why, one sentence a resource."""

    resources: dict[str, int]
    sentences: list[str] = field(default_factory=list)

    @property
    def query(self) -> str:
        """The resubmit page's query string that prefills it (jobs.forms.resources_from_query reads it)."""
        return urlencode(self.resources)


@dataclass(frozen=True)
class JobUse:
    """The job page's figures. None: not measured (or the job never ran long enough to say)."""

    elapsed_seconds: int
    limit_seconds: int
    cpus: int
    cpu_efficiency: float | None
    cpus_busy: float | None
    peak_mem_mb: int | None
    mem_mb: int
    gpus: int
    gpu_hours: float
    gpu_util_percent: float | None
    gpu_mem_mb: int | None
    suggestion: Suggestion | None

    @property
    def time_percent(self) -> int:
        return round(100 * self.elapsed_seconds / self.limit_seconds) if self.limit_seconds else 0

    @property
    def cpu_percent(self) -> int | None:
        return None if self.cpu_efficiency is None else round(100 * self.cpu_efficiency)

    @property
    def mem_percent(self) -> int | None:
        return None if self.peak_mem_mb is None or not self.mem_mb else round(100 * self.peak_mem_mb / self.mem_mb)


def job_use(job: Job) -> JobUse | None:
    """What the finished job used; None while it has not finished in Slurm or its usage is not collected yet."""
    if job.status not in FINISHED_SLURM or job.usage_collected_at is None or job.elapsed_seconds is None:
        return None
    elapsed = job.elapsed_seconds
    busy = job.cpu_seconds_used / elapsed if elapsed and job.cpu_seconds_used is not None else None
    return JobUse(
        elapsed_seconds=elapsed,
        limit_seconds=job.minutes * 60,
        cpus=job.cpus,
        cpu_efficiency=min(busy / job.cpus, 1.0) if busy is not None and job.cpus else None,
        cpus_busy=busy,
        peak_mem_mb=job.max_rss_mb,
        mem_mb=job.mem_mb,
        gpus=job.gpus,
        gpu_hours=job.gpus * elapsed / 3600,
        gpu_util_percent=job.gpu_util_percent,
        gpu_mem_mb=job.gpu_mem_mb,
        suggestion=suggestion(job, busy=busy) if job.status == Status.COMPLETED else None,
    )


def job_use_awaited(job: Job) -> bool:
    """The job ran in Slurm and finished, and the sync has not read what it used yet."""
    return job.status in FINISHED_SLURM and bool(job.slurm_job_id) and job.usage_collected_at is None


def suggestion(job: Job, *, busy: float | None) -> Suggestion | None:
    """A smaller request for a job that clearly asked for more than it used; None when it used what it asked."""
    course = job.assignment.course
    resources = dict(job.resources)
    sentences = []
    for name, smaller, sentence in (
        ("mem_mb", _memory(job, course), _memory_sentence),
        ("cpus", _cpus(job, course, busy), _cpus_sentence),
        ("minutes", _minutes(job, course), _minutes_sentence),
    ):
        if smaller is not None:
            resources[name] = smaller
            sentences.append(sentence(job, smaller))
    return Suggestion(resources, sentences) if sentences else None


def _memory(job: Job, course: Course) -> int | None:
    peak = job.max_rss_mb
    if peak is None or peak >= job.mem_mb * OVER_ASKED:
        return None
    need = max(peak * MEMORY_HEADROOM, FLOOR_MEM_MB)
    step = 256 if need <= 1024 else 1024
    return _smaller(math.ceil(need / step) * step, asked=job.mem_mb, course_max=course.max_mem_mb_per_job)


def _cpus(job: Job, course: Course, busy: float | None) -> int | None:
    if busy is None or job.cpus < 2:
        return None
    need = max(1, math.ceil(busy - 0.1))  # a tenth of a CPU of noise (start-up, the shell) is not another CPU
    if need > job.cpus // 2:
        return None
    return _smaller(need, asked=job.cpus, course_max=course.max_cpus_per_job)


def _minutes(job: Job, course: Course) -> int | None:
    elapsed_minutes = (job.elapsed_seconds or 0) / 60
    if elapsed_minutes >= job.minutes * OVER_ASKED:
        return None
    need = max(elapsed_minutes * TIME_HEADROOM, FLOOR_MINUTES)
    step = 5 if need <= 60 else 15
    return _smaller(math.ceil(need / step) * step, asked=job.minutes, course_max=course.max_minutes_per_job)


def _smaller(value: int, *, asked: int, course_max: int) -> int | None:
    """The suggested value within the course's limit, or None when it would not save at least half of what was
    asked (300 MB to 256 MB is not worth a word)."""
    value = min(value, course_max)
    return value if value <= asked / 2 else None


def _memory_sentence(job: Job, smaller: int) -> str:
    return (
        f"You asked for {memory_text(job.mem_mb)} of memory and used at most {memory_text(job.max_rss_mb or 0)}; "
        f"asking for {memory_text(smaller)} lets the job start sooner."
    )


def _cpus_sentence(job: Job, smaller: int) -> str:
    return (
        f"You asked for {job.cpus} CPUs and the job kept about {smaller} busy; asking for {smaller} "
        f"lets the job start sooner and leaves the others to your classmates."
    )


def _minutes_sentence(job: Job, smaller: int) -> str:
    return (
        f"You asked for {job.minutes} minutes and the job ran {_elapsed_text(job.elapsed_seconds or 0)}; "
        f"asking for {smaller} minutes lets Slurm fit it in sooner."
    )


def memory_text(mb: int) -> str:
    """``512`` -> "512 MB", ``1229`` -> "1.2 GB", ``16384`` -> "16 GB" (1 GB = 1024 MB, as Slurm counts)."""
    if mb < 1024:
        return f"{mb} MB"
    return f"{mb / 1024:.1f}".removesuffix(".0") + " GB"


def _elapsed_text(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    return f"{round(seconds / 60)} minutes"
