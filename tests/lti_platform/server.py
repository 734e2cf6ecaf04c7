"""The test platform's HTTP server: OIDC initiation and auth, signed launches, JWKS, services.

Started by the tests on a free loopback port, in a thread; `LmsPlatform` exposes what it received.
"""

from __future__ import annotations

import html
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from jwcrypto.jwk import JWK
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request, TRequest

from tests.lti_platform.launches import LaunchSpec, Member, resign, stranger_key
from tests.lti_platform.registration import (
    CANVAS_CONFIGURATION,
    CANVAS_ISSUER,
    DynamicRegistrations,
    admin_page,
    openid_configuration,
)
from tests.lti_platform.services import (
    LINEITEM_SCOPE,
    NRPS_SCOPE,
    SCORE_SCOPE,
    PlatformConfig,
    PlatformState,
    Refused,
    access_token,
    authorize,
    deep_link_accept,
    line_item_create,
    members_page,
    score_accept,
)

DEPLOYMENT = "deployment-1"
AUTH_CHECKS = {"scope": "openid", "response_type": "id_token", "response_mode": "form_post", "prompt": "none"}


class DictRequest(Request):  # type: ignore[misc]
    def build_metadata(self, request: dict[str, Any]) -> TRequest:
        return {"method": "GET", "form_data": {}, "get_data": request, "headers": {}, "content_type": None,
                "path": "/auth", "json": None}


class Initiation(OIDCLoginAbstract):  # type: ignore[misc]
    def set_lti_message_hint(self, **kwargs: Any) -> None:
        self._lti_message_hint = kwargs["hint"]

    def get_redirect(self, url: str) -> str:
        return url


class Launch(LTIAdvantageMessageLaunchAbstract):  # type: ignore[misc]
    def render_launch_form(self, launch_data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return launch_data


class LmsPlatform:
    def __init__(self, *, tool_base: str) -> None:
        self.tool_base = tool_base.rstrip("/")
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.platform = self  # type: ignore[attr-defined]
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.client_id = f"client-{uuid.uuid4().hex[:8]}"
        key = JWK.generate(kty="RSA", size=2048)
        self.private_pem = key.export_to_pem(private_key=True, password=None).decode()
        self.stranger_pem = stranger_key().export_to_pem(private_key=True, password=None).decode()
        self.registration = (
            Registration().set_iss(self.base).set_client_id(self.client_id).set_deployment_id(DEPLOYMENT)
            .set_oidc_login_url(f"{self.tool_base}/lti/login/").set_launch_url(f"{self.tool_base}/lti/launch/")
            .set_deeplink_launch_url(f"{self.tool_base}/lti/launch/")
            .set_platform_private_key(self.private_pem).set_platform_public_key(key.export_to_pem().decode())
            .set_tool_key_set_url(f"{self.tool_base}/lti/jwks/"))
        self.config = PlatformConfig(registration=self.registration)
        self.state = PlatformState(token_url=self.url("/token"), issuer=self.base, client_id=self.client_id)
        self.launches: dict[str, LaunchSpec] = {}
        self.dynamic = DynamicRegistrations(base=self.base, client_id=self.client_id, deployment_id=DEPLOYMENT)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return self.base + path

    def start(self) -> LmsPlatform:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def enroll(self, member: Member, context_id: str = "course-1") -> Member:
        """The member joins an LMS course (its roster lists them); scores are accepted for any member."""
        with self.state.lock:
            self.state.members[member.user_id] = member
            self.state.course_members.setdefault(context_id, set()).add(member.user_id)
        return member

    def initiation_url(self, spec: LaunchSpec, **login_overrides: str) -> str:
        """The URL an LMS page sends the browser to: the tool's OIDC login with this launch's hint."""
        self.enroll(spec.user, spec.context_id)
        self.launches[spec.hint] = spec
        initiation = Initiation(DictRequest({}), self.config)
        initiation.set_lti_message_hint(hint=spec.hint)
        url = str(initiation.prepare_preflight_url(spec.user.user_id))
        if login_overrides:
            parts = urlsplit(url)
            query = dict(parse_qsl(parts.query)) | login_overrides
            url = parts._replace(query="&".join(f"{k}={v}" for k, v in query.items())).geturl()
        return url

    def signed_launch(self, params: dict[str, str]) -> dict[str, str]:
        """The auth endpoint: check the tool's request, sign the launch. Returns action, id_token, state."""
        for name, value in AUTH_CHECKS.items():
            if params.get(name) != value:
                raise Refused(400, f"{name} must be {value}")
        spec = self.launches.get(params.get("lti_message_hint", ""))
        if spec is None or params.get("login_hint") != spec.user.user_id:
            raise Refused(400, "unknown lti_message_hint or login_hint")
        if params.get("redirect_uri") != self.registration.get_launch_url():
            raise Refused(400, "redirect_uri is not registered")
        launch = Launch(DictRequest(params), self.config)
        self._claims(launch, spec)
        data = launch.lti_launch()
        token = resign(data["id_token"], spec=spec, private_pem=self.private_pem, kid=self.registration.get_kid(),
                       stranger_pem=self.stranger_pem)
        return {"action": data["launch_url"], "id_token": token, "state": data["state"]}

    def _claims(self, launch: Launch, spec: LaunchSpec) -> None:
        launch.set_user_data(spec.user.user_id, spec.user.roles, full_name=spec.user.name)
        launch.set_launch_context_claim(spec.context_id, context_title=spec.context_title, context_label="AG101")
        launch.set_custom_parameters_claim(spec.custom)
        launch.set_launch_presentation_claim(document_target="iframe")
        contexts = f"{self.base}/contexts/{spec.context_id}"
        launch.set_nrps(f"{contexts}/memberships")
        if spec.deep_linking:
            launch.set_dl(self.url("/deep_link_return"), title="Add content", accept_types={"ltiResourceLink"})
            return
        launch.set_resource_link_claim(spec.resource_link_id, title="Graded link")
        column = next((i["id"] for i in self.state.line_items.values()
                       if i.get("resourceLinkId") == spec.resource_link_id), None)
        launch.set_ags(f"{contexts}/lineitems", column)


class _Handler(BaseHTTPRequestHandler):
    server: ThreadingHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    @property
    def platform(self) -> LmsPlatform:
        return self.server.platform  # type: ignore[attr-defined, no-any-return]

    def _reply(self, status: int, body: str | dict[str, Any] | list[Any], *, content_type: str = "",
               headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode() if not isinstance(body, str) else body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type or ("text/html" if isinstance(body, str) else
                                                          "application/json"))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_GET(self) -> None:
        self._dispatch("GET", dict(parse_qsl(urlsplit(self.path).query)))

    def do_POST(self) -> None:
        body = self._body()
        form = dict(parse_qsl(body.decode())) if "form" in (self.headers.get("Content-Type") or "") else {}
        self._dispatch("POST", form, body)

    def _dispatch(self, method: str, params: dict[str, str], raw: bytes = b"") -> None:
        path = urlsplit(self.path).path
        try:
            self._route(method, path, params, raw)
        except Refused as exc:
            self._reply(exc.status, {"error": str(exc)})

    def _route(self, method: str, path: str, params: dict[str, str], raw: bytes) -> None:
        platform, state = self.platform, self.platform.state
        if path == "/.well-known/openid-configuration":
            return self._reply(200, openid_configuration(platform.base))
        if path == CANVAS_CONFIGURATION:  # as Canvas serves it: the shared issuer, the school's endpoints
            return self._reply(200, openid_configuration(platform.base, issuer=CANVAS_ISSUER))
        if path == "/register" and method == "POST":
            try:
                body = json.loads(raw or b"null")
            except ValueError as exc:
                raise Refused(400, "the tool's configuration is not JSON") from exc
            return self._reply(200, platform.dynamic.accept(authorization=self.headers.get("Authorization") or "",
                                                            body=body))
        if path == "/register-tool":  # the LMS administrator's page framing the tool's registration URL
            return self._reply(200, admin_page(platform.dynamic.start_url(params.get("url", ""))))
        if path == "/jwks":
            return self._reply(200, platform.config.get_jwks())
        if path == "/course":  # an LMS page framing the tool
            src = html.escape(params.get("start", ""))
            return self._reply(200, f'<!doctype html><title>LMS course</title><h1>Test LMS</h1>'
                                    f'<iframe id="tool" src="{src}" width="1000" height="700"></iframe>')
        if path == "/auth":
            launch = platform.signed_launch(params)
            fields = "".join(f'<input type="hidden" name="{k}" value="{html.escape(v)}">'
                             for k, v in launch.items() if k != "action")
            return self._reply(200, f'<!doctype html><form id="f" method="post" action="{launch["action"]}">{fields}'
                                    '</form><script>document.getElementById("f").submit()</script>')
        if path == "/token" and method == "POST":
            return self._reply(200, access_token(config=platform.config, state=state, form=params))
        if path == "/deep_link_return" and method == "POST":
            items = deep_link_accept(config=platform.config, state=state, form=params, deployment_id=DEPLOYMENT)
            return self._reply(200, f"<!doctype html><p>Added {len(items)} items.</p>")
        parts = path.strip("/").split("/")
        if len(parts) >= 3 and parts[0] == "contexts":
            return self._service(method, parts, params, raw)
        raise Refused(404, "not found")

    def _service(self, method: str, parts: list[str], params: dict[str, str], raw: bytes) -> None:
        platform, state = self.platform, self.platform.state
        auth = self.headers.get("Authorization") or ""
        base = platform.url("/" + "/".join(parts[:3]))
        if parts[2] == "memberships":
            authorize(config=platform.config, state=state, header=auth, scope=NRPS_SCOPE)
            offset, limit = int(params.get("offset", 0)), 2
            body, more = members_page(state=state, context_id=parts[1], offset=offset, limit=limit)
            link = {"Link": f'<{base}?offset={offset + limit}>; rel="next"'} if more else {}
            return self._reply(200, body, content_type="application/vnd.ims.lti-nrps.v2.membershipcontainer+json",
                               headers=link)
        if parts[2] == "lineitems" and len(parts) == 3:
            authorize(config=platform.config, state=state, header=auth, scope=LINEITEM_SCOPE)
            if method == "POST":
                return self._reply(200, line_item_create(state=state, base=base, body=json.loads(raw or b"null")))
            wanted = params.get("resource_link_id")
            items = [i for i in state.line_items.values() if not wanted or i.get("resourceLinkId") == wanted]
            return self._reply(200, items)
        if parts[2] == "lineitems" and len(parts) == 5 and parts[4] == "scores" and method == "POST":
            line_item = "/".join([base, parts[3]])
            authorize(config=platform.config, state=state, header=auth, scope=SCORE_SCOPE, line_item=line_item)
            try:
                body = json.loads(raw)
            except ValueError as exc:
                raise Refused(400, "the score is not JSON") from exc
            score_accept(state=state, line_item_id=line_item,
                         content_type=self.headers.get("Content-Type") or "", body=body)
            return self._reply(200, {})
        raise Refused(404, "no such service")
