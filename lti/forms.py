"""The operators' form for a platform registration: the fields of `lti_register`, one value per line for lists."""

from __future__ import annotations

from typing import Any

from django import forms
from lti_tool.models import LtiRegistration

from lti.models import FrameOrigin, ServiceHost
from lti.registration import RegistrationError, RegistrationSpec

URL = {"maxlength": 200, "inputmode": "url", "autocomplete": "off", "spellcheck": "false"}
LINES = {"rows": 2, "spellcheck": "false"}
# RegistrationError.field (the command's option) → this form's field
FIELD_OF = {"frame_origin": "frame_origins", "service_host": "service_hosts", "context": "contexts",
            "deployment": "deployment_id"}


def _lines(text: str) -> tuple[str, ...]:
    return tuple(line.strip() for line in text.splitlines() if line.strip())


class PlatformForm(forms.Form):
    name = forms.CharField(max_length=255, help_text="What operators call it, e.g. “School Moodle”.")
    issuer = forms.CharField(max_length=255, label="Issuer (platform ID)", widget=forms.TextInput(attrs=URL),
                             help_text="Moodle: Platform ID. Canvas: https://canvas.instructure.com.")
    client_id = forms.CharField(max_length=255, label="Client ID")
    auth_url = forms.CharField(max_length=200, label="Authentication request URL", widget=forms.TextInput(attrs=URL))
    token_url = forms.CharField(max_length=200, label="Access token URL", widget=forms.TextInput(attrs=URL))
    keyset_url = forms.CharField(max_length=200, label="Public keyset URL (the platform's)",
                                 widget=forms.TextInput(attrs=URL))
    deployment_id = forms.CharField(max_length=255, required=False, label="Deployment ID",
                                    help_text="Added and activated; leave empty on an edit to add none.")
    frame_origins = forms.CharField(required=False, label="Frame origins", widget=forms.Textarea(attrs=LINES),
                                    help_text="One per line: where users' LMS pages come from, e.g. "
                                              "https://school.instructure.com.")
    service_hosts = forms.CharField(required=False, label="Extra service hosts", widget=forms.Textarea(attrs=LINES),
                                    help_text="One per line (host or host:port): other hosts of the grade and "
                                              "roster services.")
    course = forms.SlugField(required=False, label="Grader course for named LMS courses",
                             help_text="Optional: the slug of a grader course that the LMS courses below use.")
    contexts = forms.CharField(required=False, label="LMS course (context) ids", widget=forms.Textarea(attrs=LINES),
                               help_text="One per line; other LMS courses get a course of their own on first launch.")

    def __init__(self, *args: Any, new: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["deployment_id"].required = new

    @classmethod
    def initial_of(cls, registration: LtiRegistration) -> dict[str, str]:
        pk = registration.pk
        return {"name": registration.name, "issuer": registration.issuer, "client_id": registration.client_id,
                "auth_url": registration.auth_url, "token_url": registration.token_url,
                "keyset_url": registration.keyset_url,
                "frame_origins": "\n".join(FrameOrigin.objects.filter(registration_id=pk)
                                           .values_list("origin", flat=True)),
                "service_hosts": "\n".join(ServiceHost.objects.filter(registration_id=pk)
                                           .values_list("host", flat=True))}

    def spec(self) -> RegistrationSpec:
        data = self.cleaned_data
        return RegistrationSpec(
            name=data["name"].strip(), issuer=data["issuer"].strip(), client_id=data["client_id"].strip(),
            auth_url=data["auth_url"].strip(), token_url=data["token_url"].strip(),
            keyset_url=data["keyset_url"].strip(), deployment_id=data["deployment_id"].strip(),
            course_slug=data["course"], context_ids=_lines(data["contexts"]),
            frame_origins=_lines(data["frame_origins"]), service_hosts=_lines(data["service_hosts"]))

    def refuse(self, error: RegistrationError) -> None:
        """Show the service's refusal beside the field it is about."""
        self.add_error(FIELD_OF.get(error.field, error.field), error.message)

