"""The API docs page, /api/docs/: Swagger UI (vendored, no CDN) drawn from the OpenAPI schema, within the
site's CSP (no inline script), linked from the token page; in Chromium, every endpoint listed and no error
in the console."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.clients import logged_in
from tests.test_browser import OUTPUT, log_in
from tests.test_browser import page as page  # the fixture

STATIC = Path(__file__).resolve().parent.parent / "static"


@pytest.mark.django_db
def test_the_docs_page_loads_vendored_scripts_only_and_the_token_page_links_to_it(student: Any) -> None:
    response = logged_in(student).get("/api/docs/")
    page = response.content.decode()
    assert response.status_code == 200 and "script-src 'self'" in response["Content-Security-Policy"]
    scripts = re.findall(r"<script([^>]*)>", page)
    assert scripts and all('src="/static/' in attrs for attrs in scripts)  # nothing inline, nothing off-site
    assert "/static/vendor/swagger-ui/swagger-ui-bundle.js" in page and 'data-schema-url="/api/v1/schema/' in page
    for name in ("swagger-ui-bundle.js", "swagger-ui.css", "LICENSE.txt"):
        assert (STATIC / "vendor" / "swagger-ui" / name).stat().st_size > 1000
    assert 'href="/api/docs/"' in logged_in(student).get("/accounts/tokens/").content.decode()


@pytest.mark.browser
def test_swagger_ui_draws_every_endpoint_without_a_console_error(live_db: None, web_server: str, student: Any,
                                                                  page: Any) -> None:
    problems: list[str] = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.set_viewport_size({"width": 1280, "height": 900})
    log_in(page, web_server, student)
    page.goto(f"{web_server}/api/docs/")
    page.wait_for_selector(".swagger-ui .opblock", timeout=30_000)
    listed = page.locator(".swagger-ui .opblock-summary-path").all_inner_texts()
    assert any("/api/v1/courses/{course}/copy/" in p.replace("\u200b", "") for p in listed), listed[:5]
    schema = page.request.get(f"{web_server}/api/v1/schema/?format=json").json()
    operations = sum(len([m for m in ops if m in ("get", "post", "put", "patch", "delete")])
                     for ops in schema["paths"].values())
    assert len(listed) == operations  # every operation of the schema, drawn
    page.screenshot(path=str(OUTPUT / "api-docs.png"))
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(OUTPUT / "api-docs-phone.png"))
    assert not problems, problems
