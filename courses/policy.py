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
            f"This course allows at most {_plural(course.max_gpus_per_job, 'GPU')} per job; "
            f"{asker} {resources.gpus}."
        )
    if resources.cpus > course.max_cpus_per_job:
        problems["cpus"] = (
            f"This course allows at most {_plural(course.max_cpus_per_job, 'CPU')} per job; "
            f"{asker} {resources.cpus}."
        )
    if resources.mem_mb > course.max_mem_mb_per_job:
        problems["mem_mb"] = (
            f"This course allows at most {course.max_mem_mb_per_job} MB of memory per job; "
            f"{asker} {resources.mem_mb} MB."
        )
    if resources.minutes > course.max_minutes_per_job:
        problems["minutes"] = (
            f"This course allows at most {course.max_minutes_per_job} minutes per job; "
            f"{asker} {resources.minutes}."
        )
    return problems
