"""Test-wide settings. Tests never download anything, default to the `hash` embedder and extract with no
time budget."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LOCI_EMBEDDER", "hash")
# no wall-clock budget for extraction: a turn that a loaded machine stalls past it would lose its
# facts and a test its result (the budget's own tests give theirs, with a clock of their own)
os.environ.setdefault("LOCI_EXTRACT_BUDGET_MS", "0")

settings.register_profile(
    "default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("ci", max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
