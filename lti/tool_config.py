"""Registrations keyed on (issuer, client id), deployments that must already exist, our signing key."""

from __future__ import annotations

from typing import Any

from lti_tool.models import LtiDeployment, LtiRegistration
from lti_tool.utils import DjangoToolConfig
from pylti1p3.deployment import Deployment
from pylti1p3.exception import LtiException
from pylti1p3.registration import Registration

from lti.keys import signing_key


class ToolConfig(DjangoToolConfig):
    def find_registration_by_params(self, iss: str, client_id: str | None, *args: Any,
                                    **kwargs: Any) -> Registration | None:
        rows = LtiRegistration.objects.active().filter(issuer=iss)
        if client_id is not None:
            rows = rows.filter(client_id=client_id)
        elif rows.count() != 1:  # Canvas shares one issuer between tenants: the client id decides
            return None
        self.registration = rows.first()
        if self.registration is None:
            _refuse_if_inactive(iss=iss, client_id=client_id)
            return None
        return registration_for_signing(self.registration)

    def find_deployment_by_params(self, iss: str, deployment_id: str, client_id: str, *args: Any,
                                  **kwargs: Any) -> Deployment | None:
        """A deployment an operator has not seen yet is stored inactive (the launch is then refused), so it
        waits on the LMS platforms page for them to activate it; at most NEW_DEPLOYMENTS_KEPT per platform."""
        self.deployment = LtiDeployment.objects.filter(
            registration__issuer=iss, registration__client_id=client_id, registration__is_active=True,
            deployment_id=deployment_id,
        ).select_related("registration").first()
        if self.deployment is None:
            self.deployment = _deployment_to_review(iss=iss, client_id=client_id, deployment_id=deployment_id)
        if self.deployment is None:
            return None
        return Deployment().set_deployment_id(deployment_id)


def _deployment_to_review(*, iss: str, client_id: str, deployment_id: str) -> LtiDeployment | None:
    """Called after the launch's signature was checked: the platform itself names this deployment."""
    registration = LtiRegistration.objects.active().filter(issuer=iss, client_id=client_id).first()
    if registration is None or not 0 < len(deployment_id) <= 255 or LtiDeployment.objects.filter(
            registration=registration, is_active=False).count() >= NEW_DEPLOYMENTS_KEPT:
        return None
    deployment, _ = LtiDeployment.objects.get_or_create(registration=registration, deployment_id=deployment_id,
                                                        defaults={"is_active": False})
    return deployment


NEW_DEPLOYMENTS_KEPT = 20
INACTIVE = ("This LMS is registered with the tool but not activated yet: the tool's operator activates it on "
            "the LMS platforms page (after dynamic registration, or after deactivating it).")


def _refuse_if_inactive(*, iss: str, client_id: str | None) -> None:
    """A readable refusal for a known platform that is switched off, rather than "registration not found"."""
    rows = LtiRegistration.objects.filter(issuer=iss, is_active=False)
    if (rows.filter(client_id=client_id) if client_id is not None else rows).exists():
        raise LtiException(INACTIVE)


def registration_for_signing(row: LtiRegistration) -> Registration:
    key = None if row.has_key else signing_key()  # before to_registration, which needs an active key
    registration = row.to_registration()
    if key is not None:
        registration.set_tool_private_key(key.private_key)
        registration.set_tool_public_key(key.public_key)
    return registration
