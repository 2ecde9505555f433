"""The job's tenant's secrets from a Sluice task (contract 0.2 and later; docs/secrets.md).

    from sluice_task import SecretError, get_secret   # or: from sluice_secrets import ...

    key = get_secret("STRIPE_KEY")   # str
    http.post(url, json={...}, headers={"authorization": f"Bearer {key}"})

Every value read is masked as `[secret NAME]` in the log, the error and the output the
host keeps. A name the job type is not granted, or one the tenant has not set, raises
`SecretError` (a `Fatal`), whose `code` is `not-granted` or `not-found`.
"""

from componentize_py_types import Err as _Err

from sluice_task import Fatal

try:
    from wit_world.imports import secrets as _secrets
except ImportError:  # built against sluice:task@0.1.0
    _secrets = None

__all__ = ["SecretError", "get_secret"]


class SecretError(Fatal):
    """A secret this attempt cannot read. `code` is `not-granted` (the job type is not
    granted the name: `sluice types set TYPE --secret NAME`) or `not-found` (granted, but
    the tenant has not set it: `sluice secrets set NAME`); `secret` is the name. Uncaught,
    it fails the attempt permanently: the next attempt would get the same answer."""

    def __init__(self, code: str, secret: str):
        hint = (
            f"grant it with `sluice types set TYPE --secret {secret}`"
            if code == "not-granted"
            else f"granted, but not set: `sluice secrets set {secret}`"
        )
        super().__init__(f"secret {secret}: {code} ({hint})")
        self.code = code
        self.secret = secret


_SECRET_ERRORS = {
    "SecretError_NotGranted": "not-granted",
    "SecretError_NotFound": "not-found",
}


def get_secret(name: str) -> str:
    """The value of the job's tenant's secret `name` (granted to the job type).

    Raises `SecretError` (`code` `not-granted` or `not-found`). The value is masked as
    `[secret NAME]` in everything the host keeps of this attempt, but only as it is:
    log and return the value itself, never a transformed form (base64, hex, a hash).
    """
    if _secrets is None:
        raise Fatal("secrets need contract 0.2: build against wit/v0.2 (docs/guests/python.md)")
    try:
        return _secrets.get(name)
    except _Err as e:
        code = _SECRET_ERRORS.get(type(e.value).__name__, type(e.value).__name__)
        raise SecretError(code, name) from None
