"""Template tags for the course pages that need job data (courses does not import jobs)."""

from django import template

from jobs.selectors import (
    assignment_typical_use,
    cluster_silent_since,
    course_gpus_in_use,
    job_script_change,
    student_budget,
    student_last_attempt,
)

register = template.Library()


@register.inclusion_tag("jobs/_budget.html", takes_context=True)
def gpu_budget(context, course) -> dict:
    """The signed-in student's used / remaining GPU-hours in the course (nothing when there is no budget)."""
    user = context["request"].user
    return {"course": course, "budget": student_budget(user=user, course=course) if user.is_authenticated else None}


@register.inclusion_tag("jobs/_script_changed.html", takes_context=True)
def script_changed(context, assignment) -> dict:
    """Tells the signed-in student when the assignment's script changed since their last attempt."""
    user = context["request"].user
    last = student_last_attempt(user=user, assignment=assignment) if user.is_authenticated else None
    return {"last": last, "change": job_script_change(job=last) if last else None}


@register.inclusion_tag("jobs/_course_gpus.html")
def course_gpus(course) -> dict:
    """Says before a submission when all the GPUs the course may use at once are taken (from the database)."""
    return {"course": course, "gpus": course_gpus_in_use(course=course)}


@register.inclusion_tag("jobs/_typical_use.html")
def typical_use(assignment) -> dict:
    """The assignment editor's line on what the latest completed attempts used, beside the default resources."""
    return {"assignment": assignment, "use": assignment_typical_use(assignment=assignment) if assignment else None}


@register.inclusion_tag("jobs/_cluster_silent.html")
def cluster_status(course) -> dict:
    """Says on a course's pages when the other cluster its jobs run on has stopped answering the portal."""
    return {"course": course, "silent_since": cluster_silent_since(cluster=course.cluster)}
