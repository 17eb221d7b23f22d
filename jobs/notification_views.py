"""The notifications page: which job e-mails the signed-in person gets (jobs.notifications sends them), and,
where the campus sign-in sent no address, the person's own address, used once they open the link mailed to it.
"""

import smtplib

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from jobs.models import NotificationPreference
from jobs.notifications import (
    AddressLinkRefused,
    address_link_claim,
    address_link_unclaim,
    notification_address_send,
    notification_address_verify,
    notification_preference_get,
    user_is_course_staff,
)


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


class NotificationAddressForm(forms.Form):
    email = forms.EmailField(label="Your e-mail address", max_length=254)


@login_required
@require_http_methods(["GET", "POST"])
def notification_settings(request: HttpRequest) -> HttpResponse:
    """GET the page; POST the choices, or (the "Send the link" button) an address to verify."""
    sending_link = request.method == "POST" and "send_link" in request.POST
    preference = notification_preference_get(user=request.user)
    course_staff = user_is_course_staff(user=request.user)
    choices = request.POST if request.method == "POST" and not sending_link else None
    form = NotificationPreferenceForm(choices, instance=preference, course_staff=course_staff)
    address_form = NotificationAddressForm(request.POST if sending_link else None)
    if sending_link and not request.user.email and address_form.is_valid():
        _address_link_send(request, address_form.cleaned_data["email"])
        return redirect("jobs:notification-settings")
    if choices is not None and form.is_valid():
        form.save()
        messages.success(request, "Your notification choices are saved. They apply to jobs that end from now on.")
        return redirect("jobs:notification-settings")
    context = {"form": form, "address_form": address_form, "course_staff": course_staff, "email": request.user.email}
    return render(request, "jobs/notification_settings.html", context, status=400 if request.method == "POST" else 200)


def _address_link_send(request: HttpRequest, address: str) -> None:
    waited = address_link_claim(user=request.user)
    if waited is not None:
        messages.error(request, f"A link was sent {waited} s ago. Wait a minute before asking for another.")
        return
    try:
        notification_address_send(user=request.user, address=address)
    except (smtplib.SMTPException, OSError):
        address_link_unclaim(user=request.user)
        messages.error(request, f"The mail to {address} could not be sent just now. Try again in a few minutes.")
        return
    messages.success(
        request, f"A link is on its way to {address}. Open it within a day while signed in here to start mail there."
    )


@login_required
@require_GET
def notification_address_confirm(request: HttpRequest, token: str) -> HttpResponse:
    """The link from the verification mail: the signed-in person's address becomes the one it carries."""
    try:
        address = notification_address_verify(user=request.user, token=token)
    except AddressLinkRefused as error:
        messages.error(request, str(error))
    else:
        messages.success(request, f"Your address {address} is confirmed: job mail goes there from now on.")
    return redirect("jobs:notification-settings")
