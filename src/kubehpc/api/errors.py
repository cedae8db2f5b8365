"""API errors, shaped like Kubernetes ``Status`` objects.

Every layer raises these; the HTTP server turns them into a ``Status`` body with the matching
HTTP code, and the REST client turns such a body back into the same exception, so callers
handle one family of errors whether they talk to the embedded store or a real API server.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass(frozen=True)
class Cause:
    """One thing wrong with a request, pointing at a field path (``spec.template...``)."""

    field: str
    message: str
    reason: str = "FieldValueInvalid"

    def to_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "field": self.field}


@dataclass(frozen=True)
class UnknownField(Cause):
    """A field the schema does not know, under Strict field validation. The API server refuses
    such a request while decoding it, before any validation: see :func:`strict_decoding_error`."""


def unknown_field(path: str) -> UnknownField:
    return UnknownField(path, f'unknown field "{path}"')


@dataclass(eq=False)
class ApiError(Exception):
    """Base of all API errors. ``code`` is the HTTP status, ``reason`` the Status reason."""

    message: str
    name: str = ""
    kind: str = ""
    group: str = ""
    causes: list[Cause] = field(default_factory=list)
    retry_after_seconds: int | None = None

    code: ClassVar[int] = 500
    reason: ClassVar[str] = "InternalError"

    def __str__(self) -> str:
        return self.message

    def to_status(self) -> dict[str, Any]:
        details: dict[str, Any] = {}
        if self.name:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind:
            details["kind"] = self.kind
        if self.causes:
            details["causes"] = [c.to_dict() for c in self.causes]
        if self.retry_after_seconds is not None:
            details["retryAfterSeconds"] = self.retry_after_seconds
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if details:
            status["details"] = details
        return status

    @staticmethod
    def from_status(status: dict[str, Any]) -> ApiError:
        """Rebuild the typed error from a ``Status`` body (used by the REST client)."""
        code = int(status.get("code") or 500)
        reason = str(status.get("reason") or "")
        details = status.get("details") or {}
        causes = [
            Cause(
                field=str(c.get("field", "")),
                message=str(c.get("message", "")),
                reason=str(c.get("reason", "")),
            )
            for c in details.get("causes") or []
        ]
        cls = _BY_REASON.get(reason) or _BY_CODE.get(code) or ApiError
        err = cls(
            message=str(status.get("message") or reason or f"HTTP {code}"),
            name=str(details.get("name", "")),
            kind=str(details.get("kind", "")),
            group=str(details.get("group", "")),
            causes=causes,
            retry_after_seconds=details.get("retryAfterSeconds"),
        )
        return err


class BadRequest(ApiError):
    code = 400
    reason = "BadRequest"


class Unauthorized(ApiError):
    code = 401
    reason = "Unauthorized"


class Forbidden(ApiError):
    code = 403
    reason = "Forbidden"


class NotFound(ApiError):
    code = 404
    reason = "NotFound"


class MethodNotAllowed(ApiError):
    code = 405
    reason = "MethodNotAllowed"


class NotAcceptable(ApiError):
    code = 406
    reason = "NotAcceptable"


class AlreadyExists(ApiError):
    code = 409
    reason = "AlreadyExists"


class Conflict(ApiError):
    code = 409
    reason = "Conflict"


class Gone(ApiError):
    """The requested resourceVersion is older than the watch history we keep."""

    code = 410
    reason = "Expired"


class UnsupportedMediaType(ApiError):
    code = 415
    reason = "UnsupportedMediaType"


class Invalid(ApiError):
    """Validation failed; ``causes`` name each bad field."""

    code = 422
    reason = "Invalid"


class TooManyRequests(ApiError):
    code = 429
    reason = "TooManyRequests"


class InternalError(ApiError):
    code = 500
    reason = "InternalError"


class ServiceUnavailable(ApiError):
    code = 503
    reason = "ServiceUnavailable"


_BY_REASON: dict[str, type[ApiError]] = {
    cls.reason: cls
    for cls in (
        BadRequest,
        Unauthorized,
        Forbidden,
        NotFound,
        MethodNotAllowed,
        NotAcceptable,
        AlreadyExists,
        Conflict,
        Gone,
        UnsupportedMediaType,
        Invalid,
        TooManyRequests,
        InternalError,
        ServiceUnavailable,
    )
}
_BY_REASON["Gone"] = Gone
_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    406: NotAcceptable,
    409: Conflict,
    410: Gone,
    415: UnsupportedMediaType,
    422: Invalid,
    429: TooManyRequests,
    500: InternalError,
    503: ServiceUnavailable,
}


def invalid(kind: str, name: str, causes: list[Cause], group: str = "") -> Invalid:
    """An ``Invalid`` error whose message reads like the API server's."""
    detail = "; ".join(f"{c.field}: {c.message}" if c.field else c.message for c in causes)
    return Invalid(
        message=f'{kind} "{name}" is invalid: {detail}',
        name=name,
        kind=kind,
        group=group,
        causes=causes,
    )


def strict_decoding_error(kind: str, version: str, err: ApiError) -> ApiError:
    """``err`` as the API server reports it when the object has fields its schema does not know
    (under Strict): 400 BadRequest, "strict decoding error", naming only those fields, whatever
    else is wrong. Any other error is returned as it is."""
    unknown = [c for c in err.causes if isinstance(c, UnknownField)]
    if not unknown:
        return err
    fields = ", ".join(c.message for c in unknown)
    handled = f'{kind} in version "{version}" cannot be handled as a {kind}'
    return BadRequest(f"{handled}: strict decoding error: {fields}")
