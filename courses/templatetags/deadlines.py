"""An assignment's dates as students read them: opens, due, time left, and what happens after the due date."""

from django import template

from courses.deadlines import assignment_dates as dates_of

register = template.Library()


@register.inclusion_tag("courses/_dates.html")
def assignment_dates(assignment, compact: bool = False) -> dict:
    return {"assignment": assignment, "dates": dates_of(assignment=assignment), "compact": compact}
