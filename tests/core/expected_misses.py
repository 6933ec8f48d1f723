"""Targets the estimator misses today, as strict expected failures that carry the measured figure.

Each accuracy target is a test parametrized over its groups; a group that misses is marked
``xfail(strict=True)`` with the figure measured when the mark was set, so the run fails the day the
target holds and the mark must come off."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pytest


def marked(items: Iterable[str], misses: Mapping[str, str]) -> list:
    """``items`` as parameters, those in ``misses`` marked as strict expected failures with their reason."""
    return [
        pytest.param(i, marks=pytest.mark.xfail(strict=True, reason=misses[i])) if i in misses else i
        for i in items
    ]
