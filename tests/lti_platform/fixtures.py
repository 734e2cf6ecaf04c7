"""Fixtures for the LTI tests: a test platform registered with the tool under the real web server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.core.management import call_command

from tests.lti_platform.server import DEPLOYMENT, LmsPlatform


def platform_register(platform: LmsPlatform, *, course: str = "", contexts: tuple[str, ...] = ("course-1",)) -> None:
    """Register the platform; with `course`, the LMS courses `contexts` use that grader course."""
    args = ["--name", "Test LMS", "--issuer", platform.base, "--client-id", platform.client_id,
            "--auth-url", platform.url("/auth"), "--token-url", platform.url("/token"),
            "--keyset-url", platform.url("/jwks"), "--deployment", DEPLOYMENT]
    binding = ["--course", course, *(arg for cid in contexts for arg in ("--context", cid))] if course else []
    call_command("lti_register", *args, *binding, verbosity=0)


def platform_running(*, web_server: str, django_db_blocker: Any) -> Iterator[LmsPlatform]:
    """A platform registered with the tool, its LMS course `course-1` bound to the demo course (which holds
    the seed catalog).

    Each LTI test module wraps this in its own `lti_platform` fixture.
    """
    from assignments.services import course_demo

    platform = LmsPlatform(tool_base=web_server).start()
    with django_db_blocker.unblock():
        platform_register(platform, course=course_demo().slug)
    yield platform
    platform.stop()
