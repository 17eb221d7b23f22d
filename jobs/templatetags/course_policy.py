"""Template tags for the course pages that need job data (courses does not import jobs)."""

from django import template

from jobs.selectors import student_budget

register = template.Library()


@register.inclusion_tag("jobs/_budget.html", takes_context=True)
def gpu_budget(context, course) -> dict:
    """The signed-in student's used / remaining GPU-hours in the course (nothing when there is no budget)."""
    user = context["request"].user
    return {"course": course, "budget": student_budget(user=user, course=course) if user.is_authenticated else None}
