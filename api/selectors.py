from django.db.models import QuerySet

from api.models import PersonalToken


def token_list(*, owner) -> QuerySet[PersonalToken]:
    """The person's tokens, newest first, revoked and expired ones included (the page says which)."""
    return PersonalToken.objects.filter(owner=owner).select_related("course").order_by("-created_at")
