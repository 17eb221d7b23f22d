"""Times and durations as every page shows them: one format, with the zone, in a <time> element.

`{{ job.created_at|when }}` -> `<time datetime="2026-11-30T13:05:00+00:00">2026-11-30 13:05 UTC</time>`, in the
portal's time zone (LABQUEUE_TIME_ZONE); `{{ job.elapsed_seconds|duration }}` -> `<time datetime="PT754S">12 min
34 s</time>`. Both show "–" for a missing value.
"""

from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()

#: The one way a time reads on every page: date, 24-hour time, zone.
WHEN_FORMAT = "Y-m-d H:i T"
MISSING = "–"


@register.filter
def when(value: datetime | None) -> SafeString | str:
    if value is None or value == "":
        return MISSING
    local = timezone.localtime(value) if timezone.is_aware(value) else value
    return format_html(
        '<time datetime="{}">{}</time>', local.replace(microsecond=0).isoformat(), date_format(local, WHEN_FORMAT)
    )


def duration_text(seconds: int) -> str:
    """Seconds as people read them: "45 s", "12 min 34 s", "3 h 05 min"."""
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"


@register.filter
def duration(seconds: int | None) -> SafeString | str:
    if seconds is None or seconds == "":
        return MISSING
    return format_html('<time datetime="PT{}S">{}</time>', int(seconds), duration_text(seconds))
