from django.contrib import admin

from lms.models import CourseLink, RegistrationIdentity, ScorePost


@admin.register(RegistrationIdentity)
class RegistrationIdentityAdmin(admin.ModelAdmin):
    list_display = ["registration", "claim"]


@admin.register(CourseLink)
class CourseLinkAdmin(admin.ModelAdmin):
    list_display = ["context", "course", "linked_by", "created_at"]
    raw_id_fields = ["context", "course", "linked_by"]


@admin.register(ScorePost)
class ScorePostAdmin(admin.ModelAdmin):
    list_display = ["user", "assignment", "context", "status", "score", "max_score", "sent_at", "answer"]
    list_filter = ["status"]
    raw_id_fields = ["user", "assignment", "context"]
