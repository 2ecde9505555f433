"""Every schema of the API as a Python type (re-exported from the generated layer).

``from sluice_client.models import JobView, EnqueueRequest``: dataclasses with
``from_json``/``to_json``, and aliases for the schemas that are not objects.
"""

from ._generated.models import *  # noqa: F401,F403
from ._generated.models import __all__ as __all__  # noqa: F401
