from django.contrib import admin

from courses.models import (
    Assignment,
    AssignmentVersion,
    Course,
    CourseCeiling,
    Dataset,
    Enrollment,
    LabSession,
    StarterFile,
    VersionStarterFile,
)
from courses.services import assignment_version_current


class EnrollmentInline(admin.TabularInline):
    model = Enrollment
    autocomplete_fields = ["user"]
    extra = 0


@admin.register(Course)
class CourseAdmin(admin.ModelAdmin):
    list_display = ("code", "term", "title", "slurm_account", "partition", "cluster")
    search_fields = ("code", "title", "slurm_account")
    inlines = [EnrollmentInline]


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ("name", "course", "path")


class StarterFileInline(admin.TabularInline):
    model = StarterFile
    extra = 0


@admin.register(CourseCeiling)
class CourseCeilingAdmin(admin.ModelAdmin):
    """Operations staff's ceilings for one course (Django's change permission on course ceilings; instructors
    have no admin access). Empty fields use the site-wide LABQUEUE_CEILING_* settings."""

    list_display = ("course", "gpus_per_job", "minutes_per_job", "gpus_per_course", "allowed_qos", "updated_at")
    autocomplete_fields = ["course"]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("title", "course", "gpus", "minutes")
    inlines = [StarterFileInline]

    def save_related(self, request, form, formsets, change) -> None:
        """After the data sets and starter files are saved too: a change to any of them is a new version."""
        super().save_related(request, form, formsets, change)
        assignment_version_current(assignment=form.instance, author=request.user)


class VersionStarterFileInline(admin.TabularInline):
    """A version's starter files, as kept: read-only, like the version."""

    model = VersionStarterFile
    extra = 0
    readonly_fields = ("name", "file", "sha256")
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(AssignmentVersion)
class AssignmentVersionAdmin(admin.ModelAdmin):
    """Kept versions of assignment scripts: read-only, never deleted here (jobs record the one they ran)."""

    list_display = ("assignment", "number", "author", "created_at")
    readonly_fields = [field.name for field in AssignmentVersion._meta.fields] + ["datasets"]
    inlines = [VersionStarterFileInline]

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(LabSession)
class LabSessionAdmin(admin.ModelAdmin):
    list_display = ("course", "starts_at", "ends_at", "nodes", "state", "reservation_name")
    list_filter = ("state",)
