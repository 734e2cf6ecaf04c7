"""A scripted browser (requests) walking the LTI flow: initiation → cookie check → auth → launch."""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import urlencode, urljoin

import requests

from tests.lti_platform.launches import LaunchSpec
from tests.lti_platform.server import LmsPlatform


class _Forms(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, object]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append({"action": values.get("action", ""), "method": values.get("method", "get"),
                               "fields": []})
        elif tag == "input" and self.forms and values.get("name"):
            fields = self.forms[-1]["fields"]
            assert isinstance(fields, list)
            fields.append((values["name"], values.get("value", "")))


def forms_of(page: str) -> list[dict[str, object]]:
    parser = _Forms()
    parser.feed(page)
    return parser.forms


@dataclass
class Launched:
    response: requests.Response
    id_token: str
    state: str
    action: str


class LmsBrowser:
    def __init__(self, platform: LmsPlatform) -> None:
        self.platform = platform
        self.session = requests.Session()

    def signed(self, spec: LaunchSpec, **login_overrides: str) -> tuple[str, str, str] | requests.Response:
        """Walk to the platform's signed launch form; a refusal on the way is returned as the response."""
        reply = self.session.get(self.platform.initiation_url(spec, **login_overrides), timeout=10)
        if reply.status_code != 200 or "data-lti-cookie-check" not in reply.text:
            return reply
        form = forms_of(reply.text)[0]
        query = urlencode(form["fields"])  # type: ignore[arg-type]
        base = reply.url.split("?")[0]
        target = urljoin(base, str(form["action"])) if form["action"] else base
        reply = self.session.get(f"{target}?{query}", timeout=10)
        if reply.status_code != 200 or "id_token" not in reply.text:
            return reply
        fields = dict(forms_of(reply.text)[0]["fields"])  # type: ignore[arg-type]
        return str(forms_of(reply.text)[0]["action"]), fields["id_token"], fields["state"]

    def launch(self, spec: LaunchSpec, **login_overrides: str) -> Launched:
        signed = self.signed(spec, **login_overrides)
        if isinstance(signed, requests.Response):
            return Launched(response=signed, id_token="", state="", action="")
        action, id_token, state = signed
        return Launched(response=self.post_launch(action, id_token=id_token, state=state), id_token=id_token,
                        state=state, action=action)

    def post_launch(self, action: str, *, id_token: str, state: str) -> requests.Response:
        return self.session.post(action, data={"id_token": id_token, "state": state}, allow_redirects=False,
                                 timeout=20)
