from django import forms
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import UserChangeForm

from portal.identity import netid_refusal
from portal.models import User


class PortalUserChangeForm(UserChangeForm):
    def clean_netid(self) -> str | None:
        netid = self.cleaned_data["netid"]  # None when left blank: no cluster account
        if netid and (reason := netid_refusal(netid)):
            raise forms.ValidationError(reason)
        return netid


@admin.register(User)
class PortalUserAdmin(UserAdmin):
    form = PortalUserChangeForm
    fieldsets = UserAdmin.fieldsets + (("Cluster", {"fields": ("netid",)}),)
    list_display = ("username", "netid", "email", "is_staff")
    search_fields = ("username", "netid", "email")
