"""One date format on every staff page: `{{ value|when }}` is a <time> reading "Mon 7 Sep 2026, 09:00 UTC"
in the site's time zone (TIME_ZONE), with the exact instant in its datetime attribute."""

from __future__ import annotations

from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()

STAFF_DATE = "D j M Y, H:i T"


@register.filter
def when(value: datetime | None, empty: str = "—") -> SafeString | str:
    if value is None:
        return empty
    local = timezone.localtime(value) if timezone.is_aware(value) else value
    return format_html('<time datetime="{}">{}</time>', local.isoformat(), date_format(local, STAFF_DATE))
