from django.contrib import admin

from lms.models import CourseLink, RegistrationIdentity


@admin.register(RegistrationIdentity)
class RegistrationIdentityAdmin(admin.ModelAdmin):
    list_display = ["registration", "claim"]


@admin.register(CourseLink)
class CourseLinkAdmin(admin.ModelAdmin):
    list_display = ["context", "course", "linked_by", "created_at"]
    raw_id_fields = ["context", "course", "linked_by"]
