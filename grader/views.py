"""Student-facing pages. Thin: each view reads with a selector or calls one service."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from assignments.models import Assignment


def home(request: HttpRequest) -> HttpResponse:
    assignments = Assignment.objects.filter(published=True).prefetch_related("parts")
    return render(request, "grader/home.html", {"assignments": assignments})
