"""The conda-forge/admin-requests entry that asks to copy CFEP-03 builds to conda-forge.

A request file names every package by its anaconda.org location and sha256;
the admin bot compares that digest with anaconda.org's before copying.  The
digests come from build_artifacts/SHA256SUMS, so what reviewers saw in the
logs is exactly what gets copied.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

from tools.errors import UserError

_LINE = re.compile(
    r"^([0-9a-f]{64})  ((?:noarch|linux-[a-z0-9]+|osx-[a-z0-9]+|win-[a-z0-9]+)/[^/\s]+)$"
)
_CHANNEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(?:/label/[A-Za-z0-9_.-]+)?$")


def read_sums(path: Path) -> list[tuple[str, str]]:
    """(sha256, subdir/file) pairs; any other line is an error naming the file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        raise UserError(
            f"{path}: not found; build something first (it is written after every run)"
        ) from None
    pairs = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = _LINE.match(line)
        if not match:
            raise UserError(f"{path}:{number}: not a `<sha256>  <subdir>/<file>` line")
        pairs.append((match.group(1), match.group(2)))
    if not pairs:
        raise UserError(f"{path}: lists no packages")
    return pairs


def request_yaml(channel: str, sums: list[tuple[str, str]]) -> str:
    """YAML for ``requests/<name>.yml`` in conda-forge/admin-requests (action cfep3_copy)."""
    if not _CHANNEL.match(channel):
        raise UserError(
            f"--cfep3-request {channel!r}: expected an anaconda.org channel such as "
            "'jdoe/label/cfep03'"
        )
    from ruamel.yaml import YAML

    document = {
        "action": "cfep3_copy",
        "anaconda_org_packages": [
            {"package": f"{channel}/{name}", "sha256": digest} for digest, name in sums
        ],
    }
    stream = io.StringIO()
    yaml = YAML()
    yaml.default_flow_style = False
    yaml.width = 4096  # one package per line, however long conda-smithy's config names get
    yaml.dump(document, stream)
    return stream.getvalue()
