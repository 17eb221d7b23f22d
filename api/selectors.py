from django.db.models import QuerySet
from django.utils import timezone

from api.models import PersonalToken


def token_list(*, owner) -> QuerySet[PersonalToken]:
    """The person's tokens, newest first, revoked and expired ones included (the page says which)."""
    return PersonalToken.objects.filter(owner=owner).select_related("course").order_by("-created_at")


def token_active_count(*, owner) -> int:
    """How many of the person's tokens work now (neither revoked nor expired)."""
    return PersonalToken.objects.filter(owner=owner, revoked_at__isnull=True, expires_at__gt=timezone.now()).count()
