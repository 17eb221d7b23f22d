from django.contrib import admin

from clusterpolicy.models import AssociationRun


@admin.register(AssociationRun)
class AssociationRunAdmin(admin.ModelAdmin):
    list_display = ("started_at", "trigger", "dry_run", "finished_at")
    readonly_fields = [field.name for field in AssociationRun._meta.fields]
