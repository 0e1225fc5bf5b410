"""Test configuration: Hypothesis profiles.

``ci`` (selected when the CI environment variable is set, or with
``HYPOTHESIS_PROFILE=ci``) is derandomised, so a CI run is reproducible;
``dev`` explores new examples on every run.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=60,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=60, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
