"""What a course permits one job to ask for."""

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
    if budget is not None and resources.gpus > 0 and gpu_hours_used >= budget:
        problems.append(
            f"Your GPU-hour budget for this course is spent: used {gpu_hours_used:.1f} of {budget} GPU-hours, "
            f"{budget_remaining(budget, gpu_hours_used):.1f} remaining. Jobs without GPUs can still run; "
            "ask your instructor if you need more."
        )
    return problems


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
