"""Example counts for Hypothesis properties: bounded in ``make test``, scaled up under ``make fuzz``."""

from __future__ import annotations

from hypothesis import settings

FUZZ_FACTOR = 25
"""How many times more examples each property runs under the ``fuzz`` profile."""


def examples(bounded: int) -> int:
    """``bounded`` in the default profile; ``FUZZ_FACTOR`` times as many under ``HYPOTHESIS_PROFILE=fuzz``."""
    if settings.get_current_profile_name() == "fuzz":
        return bounded * FUZZ_FACTOR
    return bounded
