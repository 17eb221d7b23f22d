"""Cursor pagination for the API's lists: newest first on (created_at, id), the cursor an opaque token of the
last row given (so rows added meanwhile neither repeat nor shift a page)."""

import base64
import binascii
from datetime import UTC, datetime

from django.db.models import Q, QuerySet
from ninja.errors import HttpError

MAX_LIMIT = 100


def _encode(row) -> str:
    return base64.urlsafe_b64encode(f"{row.created_at.isoformat()}|{row.pk}".encode()).decode().rstrip("=")


def _decode(cursor: str) -> tuple[datetime, int]:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        at, _, pk = text.partition("|")
        when = datetime.fromisoformat(at)
        if when.tzinfo is None:
            raise ValueError(at)
        # In UTC: Python takes offsets up to 23:59, PostgreSQL only up to 15:59 (a crafted cursor's would fail)
        return when.astimezone(UTC), int(pk)
    except (binascii.Error, UnicodeDecodeError, ValueError, OverflowError) as error:
        raise HttpError(400, "This cursor is not one the API gave out. Start again without ?cursor=.") from error


def page(rows: QuerySet, *, cursor: str, limit: int) -> tuple[list, str | None]:
    """One page of `rows` after `cursor` ("" for the first), at most `limit`, and the next page's cursor."""
    rows = rows.order_by("-created_at", "-pk")
    if cursor:
        at, pk = _decode(cursor)
        rows = rows.filter(Q(created_at__lt=at) | Q(created_at=at, pk__lt=pk))
    taken = list(rows[: limit + 1])
    more = len(taken) > limit
    taken = taken[:limit]
    return taken, _encode(taken[-1]) if more and taken else None
