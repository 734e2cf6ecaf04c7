"""The database out of reach mid-request (PostgreSQL restarting: bench/chaos.py --postgres saw 28
HTTP 500s) is a 503 with Retry-After, on pages and on the API; other errors stay 500s."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.sessions.backends.db import SessionStore
from django.db import OperationalError
from django.test import Client

pytestmark = pytest.mark.django_db


def _database_down(*args: Any, **kwargs: Any) -> Any:
    raise OperationalError("connection to server at 127.0.0.1:5432 failed: Connection refused")


@pytest.mark.parametrize(("path", "headers", "content"), [
    ("/", {}, "Briefly unavailable"),
    ("/api/v1/assignments/", {"HTTP_ACCEPT": "application/json"}, '"detail"'),
])
def test_a_request_that_meets_a_stopped_database_is_told_to_retry(
        monkeypatch: pytest.MonkeyPatch, path: str, headers: dict[str, str], content: str) -> None:
    client = Client(raise_request_exception=False)
    client.cookies["sessionid"] = "s" * 32  # the first query is the session's
    monkeypatch.setattr(SessionStore, "load", _database_down)
    response = client.get(path, **headers)
    assert response.status_code == 503
    assert response["Retry-After"].isdigit()
    assert content in response.content.decode()
    assert "5432" not in response.content.decode()  # no connection details leak


def test_any_other_uncaught_error_is_still_a_500(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    client = Client(raise_request_exception=False)
    client.cookies["sessionid"] = "s" * 32
    monkeypatch.setattr(SessionStore, "load", broken)
    assert client.get("/").status_code == 500
