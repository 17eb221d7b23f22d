"""Personal access tokens (web side): made and revoked on the settings page (api.views), checked at each API
request (api.auth). The token's text is shown once and never stored: only its SHA-256 digest is."""

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from api.models import TOKEN_PREFIX, PersonalToken
from api.selectors import token_active_count
from courses.models import Course

#: Don't write last_used_at more often than this for one token: a script polling a job writes once a minute.
LAST_USED_EVERY = timedelta(minutes=1)


class TokenRefused(Exception):
    """The token is unknown, revoked or expired: the message says which and what to do (401)."""


class TooManyTokens(Exception):
    """The person already has as many active tokens as one person may (LABQUEUE_API_TOKENS_PER_PERSON)."""


def token_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@transaction.atomic
def token_create(*, owner, name: str, scopes: list[str], course: Course | None, days: int) -> tuple[PersonalToken, str]:
    """A new token and its text, which the caller shows once; TooManyTokens when the owner has the most active
    tokens one person may have."""
    # One person's new tokens one after the other: two requests at once would both count before either is saved.
    get_user_model().objects.select_for_update(no_key=True).filter(pk=owner.pk).exists()
    limit = settings.LABQUEUE_API_TOKENS_PER_PERSON
    if token_active_count(owner=owner) >= limit:
        raise TooManyTokens(
            f"You have {limit} active API tokens, the most one person may have. Revoke one you no longer use "
            "(listed below), then make this one."
        )
    text = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = PersonalToken.objects.create(
        owner=owner,
        name=name,
        digest=token_digest(text),
        hint=text[:8],
        scopes=sorted(set(scopes)),
        course=course,
        expires_at=timezone.now() + timedelta(days=days),
    )
    return token, text


def token_revoke(*, owner, token_uuid) -> bool:
    """Revoke one of the owner's tokens now; False when it is not theirs or was revoked before."""
    changed = PersonalToken.objects.filter(owner=owner, uuid=token_uuid, revoked_at__isnull=True)
    return bool(changed.update(revoked_at=timezone.now()))


def token_authenticate(*, text: str) -> PersonalToken:
    """The active token with this text, its use recorded; else TokenRefused."""
    token = None
    if text.startswith(TOKEN_PREFIX):
        token = PersonalToken.objects.select_related("owner", "course").filter(digest=token_digest(text)).first()
    if token is None:
        raise TokenRefused("This token is not one the portal knows. Make a new one on your API tokens page.")
    if token.revoked_at is not None:
        raise TokenRefused("This token was revoked. Make a new one on your API tokens page.")
    if token.expires_at <= timezone.now():
        raise TokenRefused("This token has expired. Make a new one on your API tokens page.")
    if not token.owner.is_active:
        raise TokenRefused("The account this token belongs to cannot sign in any more.")
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_EVERY:
        PersonalToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token
