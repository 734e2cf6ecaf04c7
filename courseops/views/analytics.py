"""Misconception analytics of an assignment: per part tables, SVG charts, CSV."""

from __future__ import annotations

import csv
import io
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_safe

from assignments.access import assignment_for_staff_or_404
from courseops.analytics import analytics_csv_rows, analytics_read
from courseops.charts import bar_chart, trend_chart
from courseops.misconceptions import kind_words, stuck_after_from
from courseops.views.gradebook import csv_response

MAX_BARS = 8


def _charts(key: str, part: dict[str, Any]) -> dict[str, Any]:
    kinds = [(kind_words(kind), n, part["kind_shares"][kind]) for kind, n in list(part["kinds"].items())[:MAX_BARS]]
    paths = [(" → ".join(p["path"]), p["count"], p["share"]) for p in part["paths"][:MAX_BARS]]
    days = [(d["day"], d["attempts"], d["wrong"]) for d in part["by_day"]]
    # The chart functions escape every label they draw.
    return {
        "kinds_svg": mark_safe(bar_chart(title=f"{key}: wrong answers by diagnosis", bars=kinds)),
        "paths_svg": mark_safe(bar_chart(title=f"{key}: wrong answers by path", bars=paths)),
        "trend_svg": mark_safe(trend_chart(title=f"{key}: attempts and wrong answers by day", days=days)),
    }


@login_required
@require_safe
def analytics_page(request: HttpRequest, slug: str) -> HttpResponse:
    assignment = assignment_for_staff_or_404(user=request.user, slug=slug)
    data = analytics_read(assignment=assignment, stuck_after=stuck_after_from(request.GET))
    if request.GET.get("format") == "csv":
        out = io.StringIO()
        csv.writer(out).writerows(analytics_csv_rows(data))
        return csv_response(out.getvalue(), f"{assignment.slug}-analytics.csv")
    parts = [{"key": key, **part, **_charts(key, part)} for key, part in data["parts"].items()]
    for part in parts:
        part["kind_rows"] = [(kind, kind_words(kind), n) for kind, n in part["kinds"].items()]
    return render(request, "staff/courseops/analytics.html", {
        "course": assignment.course, "assignment": assignment, "parts": parts,
        "stuck_after": stuck_after_from(request.GET)})
