from django.contrib import admin

from courses.models import Assignment, Course, Dataset, Enrollment, LabSession, StarterFile


class EnrollmentInline(admin.TabularInline):
    model = Enrollment
    autocomplete_fields = ["user"]
    extra = 0


@admin.register(Course)
class CourseAdmin(admin.ModelAdmin):
    list_display = ("code", "term", "title", "slurm_account", "partition")
    search_fields = ("code", "title", "slurm_account")
    inlines = [EnrollmentInline]


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ("name", "course", "path")


class StarterFileInline(admin.TabularInline):
    model = StarterFile
    extra = 0


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("title", "course", "gpus", "minutes")
    inlines = [StarterFileInline]


@admin.register(LabSession)
class LabSessionAdmin(admin.ModelAdmin):
    list_display = ("course", "starts_at", "ends_at", "nodes", "state", "reservation_name")
    list_filter = ("state",)
