"""The home page's job parts (the home page is the course list, and courses does not import jobs)."""

from django import template

from jobs.explanations import explanation_label
from jobs.selectors import job_list_active, job_list_recent_failures, student_budget

register = template.Library()


@register.inclusion_tag("jobs/_active_jobs.html", takes_context=True)
def active_jobs(context) -> dict:
    return {"jobs": job_list_active(user=context["request"].user)}


@register.inclusion_tag("jobs/_recent_failures.html", takes_context=True)
def recent_failures(context) -> dict:
    jobs = job_list_recent_failures(user=context["request"].user)
    return {"failures": [(job, explanation_label(job.explanation_key)) for job in jobs]}


@register.inclusion_tag("jobs/_budget_meter.html", takes_context=True)
def budget_meter(context, course) -> dict:
    """The signed-in person's used / remaining GPU-hours in the course as a meter (nothing without a budget)."""
    return {"course": course, "budget": student_budget(user=context["request"].user, course=course)}
