"""The instructor's course page: how each assignment is going (courses does not import jobs). Web side."""

from django import template

from jobs.selectors import assignment_progress_list

register = template.Library()


@register.inclusion_tag("jobs/_assignment_progress.html")
def assignment_progress(course) -> dict:
    """Per assignment: students who submitted, not yet, late, with a failed job and with full marks from the
    check, each linking to the list that shows them. Only for the course's staff: the page asks for it then."""
    enrolled, assignments = assignment_progress_list(course=course)
    rows = [(assignment, enrolled - assignment.submitted) for assignment in assignments]
    return {"course": course, "enrolled": enrolled, "rows": rows}
