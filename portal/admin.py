from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from portal.models import User


@admin.register(User)
class PortalUserAdmin(UserAdmin):
    fieldsets = UserAdmin.fieldsets + (("Cluster", {"fields": ("netid",)}),)
    list_display = ("username", "netid", "email", "is_staff")
    search_fields = ("username", "netid", "email")
