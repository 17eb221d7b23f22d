from django.contrib import admin

from jobs.models import Job, JobEvent


class JobEventInline(admin.TabularInline):
    model = JobEvent
    extra = 0
    readonly_fields = ("at", "from_status", "to_status", "cause", "actor")


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("uuid", "user", "assignment", "status", "slurm_job_id", "created_at")
    list_filter = ("status", "assignment__course")
    search_fields = ("uuid", "slurm_job_id", "user__username", "run_as")
    readonly_fields = [field.name for field in Job._meta.fields]
    inlines = [JobEventInline]
