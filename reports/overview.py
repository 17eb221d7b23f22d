"""The usage overview's figures (every account's usage, and per cluster on a site of several), kept in the reports
cache (reports.course_report) until a usage record is added or an ingest moves a cluster's mark, and at most for
REPORT_CACHE_SECONDS (running jobs' hours grow while nothing is written): the records change only with an ingest.
The courses are read on every view, so a course added or renamed shows at once."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core.cache import caches
from django.db.models import Max
from django.utils import timezone

from courses.models import Course
from reports.course_report import CACHE, REPORT_CACHE_SECONDS
from reports.models import AccountingCursor, UsageRecord
from reports.queries import (
    ReportRange,
    SiteTotals,
    Usage,
    overview_rows,
    site_has_several_clusters,
    site_totals,
    usage_by_account,
)


@dataclass(frozen=True)
class Overview:
    rows: list[tuple[Course | None, Usage]]
    totals: SiteTotals | None  # per cluster and in all, on a site of several clusters
    computed_at: datetime


@dataclass(frozen=True)
class _Kept:
    by_account: dict[str, Usage]
    totals: SiteTotals | None
    computed_at: datetime


def usage_overview_kept(*, window: ReportRange) -> Overview:
    """The overview over `window`: its figures from the cache while the records are as they were, else computed
    (two queries over the range's records) and kept."""
    now = timezone.now()
    key = _cache_key(window)
    kept = caches[CACHE].get(key)
    if kept is None or now - kept.computed_at >= timedelta(seconds=REPORT_CACHE_SECONDS):
        totals = site_totals(window=window, now=now) if site_has_several_clusters() else None
        kept = _Kept(usage_by_account(window=window, now=now), totals, now)
        caches[CACHE].set(key, kept, REPORT_CACHE_SECONDS)
    return Overview(overview_rows(kept.by_account), kept.totals, kept.computed_at)


def _cache_key(window: ReportRange) -> str:
    """The range, the newest record and every cluster's ingest mark (an ingest that updates records moves it), and
    the shape of what is kept."""
    newest = UsageRecord.objects.aggregate(last=Max("pk"))["last"]
    marks = list(AccountingCursor.objects.order_by("cluster").values_list("cluster", "ingested_until"))
    shapes = [[field.name for field in dataclasses.fields(kind)] for kind in (_Kept, SiteTotals, Usage)]
    inputs = f"{window.start.isoformat()}:{window.end.isoformat()}:{newest}:{marks}:{shapes}"
    return "usage-overview:" + hashlib.sha256(inputs.encode()).hexdigest()
