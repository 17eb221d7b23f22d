from django import forms

from api.models import Scope
from courses.models import Course

EXPIRY_DAYS = [(7, "7 days"), (30, "30 days"), (90, "90 days"), (365, "1 year")]


class TokenForm(forms.Form):
    """A new token: its name, scopes from the fixed list, an optional course, and how long it lasts."""

    name = forms.CharField(max_length=100, help_text="What it is for, e.g. 'cs101 CI smoke test'.")
    scopes = forms.MultipleChoiceField(
        choices=Scope.choices,
        widget=forms.CheckboxSelectMultiple,
        help_text="A scope reaches no further than your role in each course at the time of each request.",
        error_messages={"required": "Choose at least one scope.", "invalid_choice": "%(value)s is not a scope."},
    )
    course = forms.ModelChoiceField(
        queryset=Course.objects.none(), required=False, empty_label="Every course of mine", label="Only in course"
    )
    days = forms.TypedChoiceField(choices=EXPIRY_DAYS, coerce=int, initial=90, label="Expires after")

    def __init__(self, *args, owner, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["course"].queryset = Course.objects.filter(enrollments__user=owner).order_by("code")
