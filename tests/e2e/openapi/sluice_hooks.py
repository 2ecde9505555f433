"""Schemathesis hooks for tests/e2e/openapi.rs (loaded with SCHEMATHESIS_HOOKS).

A component upload's body is a Wasm component the sandbox validates: no schema can say
which bytes those are, so positive data for `application/wasm` and
`application/octet-stream` bodies is a real sample component (the path in
SLUICE_OPENAPI_COMPONENT) instead of random bytes. Negative data stays random.
"""

import os

import schemathesis
from hypothesis import strategies as st

with open(os.environ["SLUICE_OPENAPI_COMPONENT"], "rb") as component:
    _COMPONENT = component.read()

for _media_type in ("application/wasm", "application/octet-stream"):
    schemathesis.openapi.media_type(_media_type, st.just(_COMPONENT))
