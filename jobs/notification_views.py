"""The notifications page: which job e-mails the signed-in person gets (jobs.notifications sends them)."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from jobs.models import NotificationPreference
from jobs.notifications import notification_preference_get, user_is_course_staff


class NotificationPreferenceForm(forms.ModelForm):
    """Always the signed-in person's own choices: the form has no field naming whose they are."""

    class Meta:
        model = NotificationPreference
        fields = ["notify_finished", "notify_failed", "notify_refused", "daily_digest"]
        labels = {
            "notify_finished": "When one of my jobs finishes successfully",
            "notify_failed": "When one of my jobs fails",
            "notify_refused": "When one of my jobs is refused (not run at all)",
            "daily_digest": "A daily digest of new failed jobs in the courses I teach or assist",
        }
        help_texts = {
            "notify_finished": "Off unless you turn it on.",
            "notify_failed": "The mail says what went wrong and what to do next.",
            "notify_refused": "For example when you are no longer enrolled, or the cluster refuses the request.",
            "daily_digest": "One mail a day, only on days with new failures.",
        }

    def __init__(self, *args, course_staff: bool, **kwargs):
        super().__init__(*args, **kwargs)
        if not course_staff:  # students cannot ask for (or send) the TAs' digest
            del self.fields["daily_digest"]


@login_required
@require_http_methods(["GET", "POST"])
def notification_settings(request: HttpRequest) -> HttpResponse:
    preference = notification_preference_get(user=request.user)
    course_staff = user_is_course_staff(user=request.user)
    form = NotificationPreferenceForm(request.POST or None, instance=preference, course_staff=course_staff)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, "Your notification choices are saved. They apply to jobs that end from now on.")
        return redirect("jobs:notification-settings")
    context = {"form": form, "course_staff": course_staff, "email": request.user.email}
    return render(request, "jobs/notification_settings.html", context)
