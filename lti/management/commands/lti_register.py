"""Create or update a platform registration and its deployment, activate it, print the tool's URLs."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from lti.registration import RegistrationSpec, registration_upsert


class Command(BaseCommand):
    help = "Register an LMS platform (LTI 1.3): create or update, activate the deployment, print the tool URLs."

    def add_arguments(self, parser: CommandParser) -> None:
        for flag in ("name", "issuer", "client-id", "auth-url", "token-url", "keyset-url", "deployment"):
            parser.add_argument(f"--{flag}", required=True)
        parser.add_argument("--course", default="", help="slug of the grader course the LMS courses named by "
                                                          "--context use (other LMS courses get their own)")
        parser.add_argument("--context", action="append", default=[],
                            help="an LMS course's context id that uses --course; repeatable")
        parser.add_argument("--service-host", action="append", default=[],
                            help="an extra host (host or host:port) the tool may call for this platform's "
                                 "grade and roster services, e.g. a Canvas tenant; repeatable")
        parser.add_argument("--frame-origin", action="append", default=[],
                            help="an extra origin allowed to frame the tool (e.g. a Canvas tenant); repeatable")
        parser.add_argument("--base-url", default="http://127.0.0.1:8000",
                            help="the tool's public base URL, for the printed URLs")

    def handle(self, *args: Any, **options: Any) -> None:
        spec = RegistrationSpec(
            name=options["name"], issuer=options["issuer"], client_id=options["client_id"],
            auth_url=options["auth_url"], token_url=options["token_url"], keyset_url=options["keyset_url"],
            deployment_id=options["deployment"], course_slug=options["course"],
            context_ids=tuple(options["context"]), frame_origins=tuple(options["frame_origin"]),
            service_hosts=tuple(options["service_host"]),
        )
        try:
            registration, created = registration_upsert(spec=spec)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        verb = "created" if created else "updated"
        self.stdout.write(f"Registration {registration.name!r} {verb}; deployment {spec.deployment_id!r} active.")
        base = options["base_url"].rstrip("/")
        for label, path in (("OIDC login URL", "/lti/login/"), ("Launch URL", "/lti/launch/"),
                            ("JWKS URL", "/lti/jwks/"), ("Setup page", "/lti/setup/")):
            self.stdout.write(f"{label}: {base}{path}")
