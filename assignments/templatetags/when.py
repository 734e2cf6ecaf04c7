"""One date format on every staff page: `{{ value|when }}` is a <time> reading "Mon 7 Sep 2026, 09:00 UTC" in
the site's time zone (TIME_ZONE), `{{ value|when:assignment.time_zone }}` in the assignment's, with the exact
instant in the datetime attribute."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django import template
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()

STAFF_DATE = "D j M Y, H:i T"
STAFF_INSTANT = "D j M Y, H:i:s T"  # the same, to the second: when a submission arrived


@register.filter
def when(value: datetime | None, zone: str = "") -> SafeString | str:
    return _shown(value, zone, STAFF_DATE)


@register.filter
def when_exact(value: datetime | None, zone: str = "") -> SafeString | str:
    return _shown(value, zone, STAFF_INSTANT)


def _shown(value: datetime | None, zone: str, pattern: str) -> SafeString | str:
    if not isinstance(value, datetime):
        return "—"
    try:
        shown = timezone.localtime(value, ZoneInfo(zone) if zone else None) if timezone.is_aware(value) else value
    except (ZoneInfoNotFoundError, ValueError):
        shown = timezone.localtime(value)
    return format_html('<time datetime="{}">{}</time>', shown.isoformat(), date_format(shown, pattern))
