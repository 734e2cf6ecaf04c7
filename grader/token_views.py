"""API tokens in the web UI: every logged-in user lists their own tokens, creates one (its key is shown
once, on the page that answers the creation, never again) and revokes any of them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from grader.tokens import ApiToken, token_create, token_revoke

MAX_ACTIVE = 20  # unrevoked, unexpired tokens a user may hold at once; revoke one to make another
SHOWN = 100  # the newest tokens listed, revoked and expired ones included


class TokenForm(forms.Form):
    days = forms.IntegerField(label="Expires after (days)", min_value=1)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        most = settings.GRADER_TOKEN_DAYS
        self.fields["days"].initial = most
        self.fields["days"].help_text = f"At most {most}."
        self.fields["days"].widget.attrs.update(min=1, max=most)

    def clean_days(self) -> int:
        days: int = self.cleaned_data["days"]
        if days > settings.GRADER_TOKEN_DAYS:
            raise forms.ValidationError(f"A token lasts at most {settings.GRADER_TOKEN_DAYS} days.")
        return days


def _active(user: Any) -> int:
    return sum(1 for token in ApiToken.objects.filter(user=user, revoked_at=None) if token.is_active)


@login_required
@never_cache  # the answer to a creation holds the key
@require_http_methods(["GET", "HEAD", "POST"])
def token_list(request: HttpRequest) -> HttpResponse:
    """GET: my tokens. POST: a new token, its key shown in the answer once."""
    form = TokenForm(request.POST if request.method == "POST" else None)
    key = None
    status = 200
    if request.method == "POST":
        if form.is_valid() and _active(request.user) >= MAX_ACTIVE:
            form.add_error(None, f"You hold {MAX_ACTIVE} active tokens: revoke one you no longer use first.")
        if form.is_valid():
            key = token_create(user=request.user, lifetime=timedelta(days=form.cleaned_data["days"]))
            form = TokenForm()
        else:
            status = 400
    tokens = ApiToken.objects.filter(user=request.user).order_by("-created_at", "-id")[:SHOWN]
    return render(request, "grader/tokens.html", {"form": form, "key": key, "tokens": tokens,
                                                  "max_active": MAX_ACTIVE}, status=status)


@login_required
@require_POST
def token_revoke_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Revoke one of my tokens; another user's token (or none) is a 404, as if it did not exist."""
    token = ApiToken.objects.filter(id=pk, user=request.user).first()
    if token is None:
        raise Http404("No such token.")
    if token_revoke(user=request.user, token_id=token.id):
        messages.success(request, f"Token {token.prefix}… revoked: scripts using it now get 401.")
    else:
        messages.info(request, f"Token {token.prefix}… was already revoked.")
    return redirect("tokens")
