"""Clients acting as a given user, shared by the web, API and security tests."""

from __future__ import annotations

from typing import Any

from django.test import Client
from rest_framework.test import APIClient


def logged_in(person: Any, **kwargs: Any) -> Client:
    client = Client(**kwargs)
    client.force_login(person.user)
    return client


def api(person: Any) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {person.token}")
    return client


def keys_anywhere(data: Any) -> set[str]:
    """Every key of every nested object: to prove a field appears nowhere in a response."""
    if isinstance(data, dict):
        return set(data) | {key for value in data.values() for key in keys_anywhere(value)}
    if isinstance(data, list):
        return {key for item in data for key in keys_anywhere(item)}
    return set()
