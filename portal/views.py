from django.contrib import admin
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from portal.auth import local_passwords_enabled


def admin_login(request: HttpRequest) -> HttpResponse:
    """/admin/login/: while local passwords are off, staff reach the admin through campus sign-in and back."""
    if local_passwords_enabled() or admin.site.has_permission(request):
        return admin.site.login(request)  # its password form, or for staff already signed in, on to the admin
    if request.user.is_authenticated:
        return render(request, "portal/admin_refused.html", status=403)
    return redirect_to_login(request.GET.get("next") or reverse("admin:index"), reverse("account_login"))


def password_reset_off(request: HttpRequest) -> HttpResponse:
    """The password-reset address while local passwords are off (allauth then serves no reset pages)."""
    return render(request, "portal/password_reset_off.html", status=404)
