"""Credentials: which variables hold them, and removing their values from text we show.

Kept free of other toolkit imports so that the error types themselves can scrub their
messages (tools/foundation/errors.py), whichever command raises them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

# Variables that hold credentials on conda-forge CI; never printed, never
# forwarded to local builds (see build-locally.py).
SECRET_ENV_VARS = (
    "BINSTAR_TOKEN",
    "STAGING_BINSTAR_TOKEN",
    "FEEDSTOCK_TOKEN",
    "ANACONDA_API_TOKEN",
    "GITHUB_TOKEN",
)

# Where review publish takes an anaconda.org upload token: anaconda-client's own
# variable, the one docs/fork.md names. Not BINSTAR_TOKEN: on conda-forge's CI that is the
# token that uploads to conda-forge itself, which a publish must never reach.
UPLOAD_TOKEN_VARS = ("ANACONDA_API_TOKEN",)

# Tokens recognisable by shape even when their variable was never set here.
TOKEN_SHAPES = re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b")


def secret_values(*envs: Mapping[str, str]) -> list[str]:
    """The non-trivial secret values present in any of ``envs``, longest first."""
    values = {env[name] for env in envs for name in SECRET_ENV_VARS if len(env.get(name, "")) >= 4}
    return sorted(values, key=len, reverse=True)


def redact(text: str, secrets: Sequence[str]) -> str:
    for value in secrets:
        text = text.replace(value, "***")
    return text


def scrub(text: str, secrets: Sequence[str]) -> str:
    """``redact``, and token shapes too: for text a command printed, which may hold any token."""
    return TOKEN_SHAPES.sub("***", redact(text, secrets))
