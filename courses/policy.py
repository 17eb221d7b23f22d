"""What a course permits one job to ask for, and what operations staff permit a course policy and a lab."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from courses.models import Course
from courses.scripting import Resources


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def resource_problems(*, course: Course, resources: Resources, asker: str = "you asked for") -> dict[str, str]:
    """Per-field messages naming each course limit a request exceeds; empty when it fits."""
    problems = {}
    if resources.gpus > course.max_gpus_per_job:
        problems["gpus"] = (
            f"This course allows at most {_plural(course.max_gpus_per_job, 'GPU')} per job; {asker} {resources.gpus}."
        )
    if resources.cpus > course.max_cpus_per_job:
        problems["cpus"] = (
            f"This course allows at most {_plural(course.max_cpus_per_job, 'CPU')} per job; {asker} {resources.cpus}."
        )
    if resources.mem_mb > course.max_mem_mb_per_job:
        problems["mem_mb"] = (
            f"This course allows at most {course.max_mem_mb_per_job} MB of memory per job; "
            f"{asker} {resources.mem_mb} MB."
        )
    if resources.minutes > course.max_minutes_per_job:
        problems["minutes"] = (
            f"This course allows at most {course.max_minutes_per_job} minutes per job; {asker} {resources.minutes}."
        )
    return problems


def submission_problems(*, course: Course, resources: Resources, active_jobs: int, gpu_hours_used: float) -> list[str]:
    """Why the course refuses one more job from this student, beyond the per-job caps: the number of
    jobs waiting or running, and the GPU-hour budget (a job asking for GPUs with the budget spent)."""
    problems = []
    cap = course.max_queued_jobs_per_student
    if cap is not None and active_jobs >= cap:
        problems.append(
            f"This course allows at most {_plural(cap, 'job')} waiting or running per student; "
            f"you have {active_jobs}. Wait for one to finish or cancel one."
        )
    budget = course.gpu_hours_per_student
    if budget_applies(course=course, resources=resources) and gpu_hours_used >= budget:
        problems.append(
            f"Your GPU-hour budget for this course is spent: used {gpu_hours_used:.1f} of {budget} GPU-hours, "
            f"{budget_remaining(budget, gpu_hours_used):.1f} remaining. Jobs without GPUs can still run; "
            "ask your instructor if you need more."
        )
    return problems


def budget_applies(*, course: Course, resources: Resources) -> bool:
    """The course's GPU-hour budget can refuse this request: it has one and the job asks for GPUs."""
    return course.gpu_hours_per_student is not None and resources.gpus > 0


def running_notice(*, course: Course, live_jobs: int) -> str:
    """What a student is told when a new job will wait for their own running-jobs limit ("" if it won't)."""
    cap = course.max_running_jobs_per_student
    if cap is None or live_jobs < cap:
        return ""
    return (
        f"This course runs at most {_plural(cap, 'job')} per student at once and you have {live_jobs} in the "
        "cluster: this one waits until one of them ends."
    )


def budget_remaining(budget: float, used: float) -> float:
    return max(0.0, budget - used)


def lab_overlap_problem(
    *, starts_at, ends_at, size: int, others: list[tuple], capacity: int, unit: str = "node"
) -> str:
    """Why a lab of `size` nodes (or GPUs) in [starts_at, ends_at) does not fit next to the `others`
    (start, end, size, label) with `capacity` reservable; "" when it fits. Checked at every moment
    another lab starts inside the new one, so two labs one after the other both count only once."""
    if size > capacity:
        return f"The cluster has {_plural(capacity, 'reservable ' + unit)}; this lab asks for {size}."
    overlapping = [o for o in others if o[0] < ends_at and o[1] > starts_at]
    for moment in sorted({starts_at, *(o[0] for o in overlapping if o[0] > starts_at)}):
        at_once = [o for o in overlapping if o[0] <= moment < o[1]]
        taken = sum(o[2] for o in at_once)
        if taken + size > capacity:
            names = ", ".join(o[3] for o in at_once)
            return (
                f"From {moment:%Y-%m-%d %H:%M} other labs ({names}) already reserve {taken} of the "
                f"{_plural(capacity, 'reservable ' + unit)}; this lab asks for {size} more. "
                "Pick another time or fewer."
            )
    return ""


@dataclass(frozen=True)
class Ceilings:
    """The most a course policy may allow (operations staff's; courses.selectors.course_ceilings). None: no ceiling."""

    gpus_per_job: int | None
    cpus_per_job: int | None
    mem_mb_per_job: int | None
    minutes_per_job: int | None
    jobs_per_student: int | None
    gpu_hours_per_student: int | None
    gpus_per_course: int | None
    qos: tuple[str, ...] = ()
    partitions: tuple[str, ...] = ()


# Course policy field -> (its ceiling, what the number counts).
CEILING_FIELDS = {
    "max_gpus_per_job": ("gpus_per_job", "GPUs per job"),
    "max_cpus_per_job": ("cpus_per_job", "CPUs per job"),
    "max_mem_mb_per_job": ("mem_mb_per_job", "MB of memory per job"),
    "max_minutes_per_job": ("minutes_per_job", "minutes per job"),
    "max_running_jobs_per_student": ("jobs_per_student", "running jobs per student"),
    "max_queued_jobs_per_student": ("jobs_per_student", "waiting or running jobs per student"),
    "gpu_hours_per_student": ("gpu_hours_per_student", "GPU-hours per student"),
    "max_gpus_course": ("gpus_per_course", "GPUs for the whole course at once"),
}


def ceiling_problems(*, policy: dict, ceilings: Ceilings, contact: str) -> dict[str, str]:
    """Per-field messages for each value of a course policy above operations staff's ceilings, or a QOS or
    partition outside their allow-list; each names the ceiling and who to ask. Empty when the policy fits."""
    ask = f"Only operations staff can raise it: ask {contact}."
    problems = {}
    for field, (name, what) in CEILING_FIELDS.items():
        ceiling = getattr(ceilings, name)
        if ceiling is None or field not in policy:
            continue
        value = policy[field]
        if value is None:
            problems[field] = (
                f"Operations staff set a ceiling of {ceiling} {what} for this course, so this cannot be left "
                f"without a limit: give a number up to {ceiling}. {ask}"
            )
        elif value > ceiling:
            problems[field] = (
                f"This course may allow at most {ceiling} {what} (a ceiling set by operations staff); "
                f"the policy asks for {value}. {ask}"
            )
    for field, allowed, what in (("qos", ceilings.qos, "QOS"), ("partition", ceilings.partitions, "partition")):
        value = policy.get(field)
        if value and value not in allowed:
            listed = ", ".join(allowed) if allowed else "none"
            problems[field] = (
                f"The {what} “{value}” is not one operations staff allow for this course (allowed: {listed}; "
                f"leave it empty for the site's default). {ask}"
            )
    return problems


def held_to_ceilings(*, course: Course, ceilings: Ceilings) -> tuple[dict[str, int | None], list[str]]:
    """The course's policy numbers as Slurm may get them: each within its ceiling (no limit becomes the
    ceiling), and a note for every value held down (a row saved before the ceiling, or written directly)."""
    values, notes = {}, []
    for field, (name, what) in CEILING_FIELDS.items():
        value, ceiling = getattr(course, field), getattr(ceilings, name)
        if ceiling is not None and (value is None or value > ceiling):
            asked = "no limit" if value is None else str(value)
            notes.append(f"{course.slug}: the policy's {what} ({asked}) is above the ceiling; Slurm gets {ceiling}.")
            value = ceiling
        values[field] = value
    return values, notes


def lab_limit_problems(
    *,
    starts_at: datetime,
    ends_at: datetime,
    size: int,
    unit: str,
    now: datetime,
    max_minutes: int,
    max_size: int,
    capacity: int,
    max_days_ahead: int,
    contact: str,
) -> dict[str, str]:
    """Per-field messages for a lab beyond operations staff's limits (length, nodes or GPUs, how far ahead).
    A lab larger than the whole cluster (`capacity`) is left to lab_overlap_problem, which says so."""
    ask = f"For a longer, larger or later lab, ask {contact}."
    problems = {}
    minutes = (ends_at - starts_at).total_seconds() / 60
    if minutes > max_minutes:
        problems["ends_at"] = (
            f"A lab may last at most {_plural(max_minutes, 'minute')} (a limit set by operations staff); "
            f"this one lasts {minutes:.0f}. {ask}"
        )
    if max_size < size <= capacity:
        field = "gpus" if unit == "GPU" else "nodes"
        problems[field] = (
            f"A lab may reserve at most {_plural(max_size, unit)} (a limit set by operations staff); "
            f"this one asks for {size}. {ask}"
        )
    if starts_at > now + timedelta(days=max_days_ahead):
        problems["starts_at"] = (
            f"Labs can be scheduled at most {_plural(max_days_ahead, 'day')} ahead (a limit set by operations "
            f"staff); this one starts on {starts_at:%Y-%m-%d}. {ask}"
        )
    return problems
