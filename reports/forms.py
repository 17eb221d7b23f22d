from datetime import date, timedelta

from django import forms
from django.utils import timezone

from reports.queries import ReportRange

MAX_DAYS = 800
FIRST_YEAR, LAST_YEAR = 1970, 9998


class ReportRangeForm(forms.Form):
    """A range of whole days, both ends included, in the portal's time zone."""

    first = forms.DateField(label="From", widget=forms.DateInput(attrs={"type": "date"}))
    last = forms.DateField(label="To", widget=forms.DateInput(attrs={"type": "date"}))

    def clean(self) -> dict:
        data = super().clean()
        first, last = data.get("first"), data.get("last")
        if any(day and not FIRST_YEAR <= day.year <= LAST_YEAR for day in (first, last)):
            # the range's bounds are moments (its first midnight, the one after its last day) in UTC too
            raise forms.ValidationError(f"Choose days between the years {FIRST_YEAR} and {LAST_YEAR}.")
        if first and last:
            if last < first:
                raise forms.ValidationError("The range ends before it starts.")
            if (last - first).days >= MAX_DAYS:
                raise forms.ValidationError(f"Choose at most {MAX_DAYS} days.")
        return data


def range_from_request(params, *, default_first: date) -> tuple[ReportRange, ReportRangeForm]:
    """The range asked for in the query string, else ``default_first`` to today."""
    today = timezone.localdate()
    default = {"first": min(default_first, today), "last": today}
    form = ReportRangeForm(params if "first" in params or "last" in params else None, initial=default)
    if form.is_bound and form.is_valid():
        return ReportRange.for_days(form.cleaned_data["first"], form.cleaned_data["last"]), form
    return ReportRange.for_days(default["first"], default["last"]), form


def course_default_first(course) -> date:
    """A course row is made for its term, so its term starts around the day it was created."""
    return timezone.localdate(course.created_at)


def overview_default_first(*, days: int) -> date:
    return timezone.localdate() - timedelta(days=days - 1)
