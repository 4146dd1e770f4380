"""CEP 27's publish attestation: the in-toto statement ``review sign`` signs for a package and
``review verify`` checks, and the channel URL it names.

CEP 27 (conda/ceps, cep-0027.md, Accepted): an in-toto Statement v1 whose ``predicateType`` is
:data:`PREDICATE_TYPE`, with exactly one subject (the package's file name and its sha256) and
an optional predicate ``{"targetChannel": "<URL without a trailing slash>"}``, carried in a
DSSE envelope of :data:`PAYLOAD_TYPE` inside a Sigstore bundle. rattler-build and
conda-sigstore write the bundles, as a JSON list, into ``<package>.sigs`` beside the package
(:data:`SIDECAR_SUFFIX`); CEP 27 itself leaves that naming open (conda/ceps #142).

Nothing here signs, verifies a signature or reads the network (sign.py, signatures.py).
"""

from __future__ import annotations

import json
import re
from urllib.parse import urlsplit

from tools.foundation.errors import UserError

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://schemas.conda.org/attestations-publish-1.schema.json"
PAYLOAD_TYPE = "application/vnd.in-toto+json"  # the DSSE envelope's, as in-toto defines it
SIDECAR_SUFFIX = ".sigs"
# Where conda reads an anaconda.org channel: `-c jdoe/label/cfep03` is this URL + the name.
ANACONDA_CHANNELS = "https://conda.anaconda.org"
_ANACONDA_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(?:/label/[A-Za-z0-9_.-]+)?$")


def sidecar_of(package: str) -> str:
    """``linux-64/x.conda`` -> ``linux-64/x.conda.sigs``: where the package's bundles lie."""
    return package + SIDECAR_SUFFIX


def channel_url(text: str, *, flag: str = "--channel") -> str:
    """The target channel as CEP 27 names it: a URL without a trailing slash.

    An anaconda.org channel as ``review request`` takes it (``jdoe``, ``jdoe/label/cfep03``)
    is the URL conda reads it from, ``https://conda.anaconda.org/jdoe/label/cfep03``; a URL
    (prefix.dev's ``https://prefix.dev/NAME``, a channel served over HTTP) is taken as given,
    once it is one."""
    if _ANACONDA_NAME.match(text):
        return f"{ANACONDA_CHANNELS}/{text}"
    problem = url_problem(text)
    if problem:
        raise UserError(
            f"{flag} {text!r}: {problem}; give an anaconda.org channel (jdoe/label/cfep03, "
            f"which is {ANACONDA_CHANNELS}/jdoe/label/cfep03) or a channel's URL "
            "(https://prefix.dev/NAME)"
        )
    return text


def url_problem(text: str) -> str | None:
    """Why ``text`` is not a target channel CEP 27 allows, or None."""
    parts = urlsplit(text)
    if parts.scheme not in ("https", "http") or not parts.netloc or any(c.isspace() for c in text):
        return "not an http(s) URL"
    if parts.query or parts.fragment:
        return "a channel URL has no query or fragment"
    if text.endswith("/"):
        return "CEP 27 wants the channel's URL without a trailing slash"
    return None


def statement(name: str, sha256: str, channel: str) -> bytes:
    """The statement for the package file ``name`` (no subdir: the name the channel serves it
    under) with ``sha256``, published to ``channel`` (a URL, :func:`channel_url`)."""
    document = {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": name, "digest": {"sha256": sha256}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": {"targetChannel": channel},
    }
    return json.dumps(document, separators=(",", ":")).encode()


def statement_problem(
    payload_type: str, payload: bytes, name: str, sha256: str, channel: str | None
) -> tuple[str | None, str | None]:
    """What is wrong with a verified envelope's statement for the file ``name`` with
    ``sha256`` (``"<kind>: <why>"``, the kind one of type, subject, channel), or None; and the
    target channel it names. ``channel``: the one it must name, or None for any."""
    if payload_type != PAYLOAD_TYPE:
        return f"type: the envelope's payload type is {payload_type!r}, not {PAYLOAD_TYPE}", None
    try:
        document = json.loads(payload)
    except ValueError:
        return "type: the payload is not JSON", None
    if not isinstance(document, dict):
        return "type: the statement is not a JSON object", None
    for key, wanted in (("_type", STATEMENT_TYPE), ("predicateType", PREDICATE_TYPE)):
        if document.get(key) != wanted:
            return f"type: the statement's {key} is {document.get(key)!r}, not {wanted}", None
    found = _channel(document.get("predicate"))
    subjects = document.get("subject")
    if not isinstance(subjects, list) or len(subjects) != 1 or not isinstance(subjects[0], dict):
        count = len(subjects) if isinstance(subjects, list) else "no list of"
        return f"subject: the statement names {count} subjects; CEP 27 names exactly one", found
    subject = subjects[0]
    if subject.get("name") != name:
        return f"subject: the statement is for {subject.get('name')!r}, not {name}", found
    digest = subject.get("digest")
    if not isinstance(digest, dict) or list(digest) != ["sha256"]:
        return f"subject: its digest is {digest!r}; CEP 27 wants one sha256", found
    if digest["sha256"] != sha256:
        return (
            f"subject: the statement's sha256 is {str(digest['sha256'])[:12]}…, the file's "
            f"{sha256[:12]}…",
            found,
        )
    return _channel_problem(document.get("predicate"), found, channel), found


def _channel(predicate: object) -> str | None:
    target = predicate.get("targetChannel") if isinstance(predicate, dict) else None
    return target if isinstance(target, str) else None


def _channel_problem(predicate: object, found: str | None, channel: str | None) -> str | None:
    if predicate is not None and found is None:
        return f"channel: the predicate {predicate!r} names no targetChannel"
    if found is not None and url_problem(found):
        return f"channel: the target channel {found!r}: {url_problem(found)}"
    if channel is not None and found != channel:
        return f"channel: signed for {found or 'no channel'}, not {channel}"
    return None
