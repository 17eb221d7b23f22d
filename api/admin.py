from django.contrib import admin

from api.models import PersonalToken


@admin.register(PersonalToken)
class PersonalTokenAdmin(admin.ModelAdmin):
    """Operators see and revoke tokens; nobody sees a token's text (only its digest is kept)."""

    list_display = ["name", "owner", "hint", "course", "expires_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["name", "owner__username", "hint"]
    readonly_fields = ["uuid", "owner", "digest", "hint", "scopes", "last_used_at", "created_at"]
