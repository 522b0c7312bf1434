"""Shared settings of the reliability suite.

CI size by default; ``CODESYNAPSE_SOAK=1`` switches every test to its long local size
(more hypothesis examples, more kill points, bigger trees, more concurrent clients).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

SOAK = os.environ.get("CODESYNAPSE_SOAK", "") not in ("", "0", "false", "no")


def scale(ci: int, soak: int) -> int:
    """A count for CI, or for the long local mode."""
    return soak if SOAK else ci


settings.register_profile(
    "reliability-ci", max_examples=40, deadline=None, derandomize=False, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
settings.register_profile(
    "reliability-soak", max_examples=1500, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
