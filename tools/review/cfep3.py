"""The conda-forge/admin-requests entry that asks to copy CFEP-03 builds to conda-forge.

A request file names every package by its anaconda.org location and sha256;
the admin bot compares that digest with anaconda.org's before copying.  The
digests come from build_artifacts/SHA256SUMS, so what reviewers saw in the
logs is exactly what gets copied.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from ruamel.yaml import YAML

from tools.foundation.errors import UserError
from tools.foundation.files import read_user_file
from tools.localbuild.records.provenance import Provenance, dirty_warning
from tools.recipe.variant_config import parse_variant_file

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


def check_channel(channel: str) -> None:
    if not _CHANNEL.match(channel):
        raise UserError(
            f"review request {channel!r}: expected an anaconda.org channel such as "
            "'jdoe/label/cfep03'"
        )


def target_label(
    root: Path, sums: list[tuple[str, str]], summary: Mapping[str, Mapping[str, object]]
) -> str:
    """The conda-forge label the packages go to: their configs' ``channel_targets``.

    CI uploads each config's packages to the label its ``channel_targets`` names (``conda-forge
    pytorch_rc`` for release candidates); a copy request must do the same.  The config of
    each package comes from the batch's summary.json.  One request has one label, so
    packages for different labels are refused.
    """
    config_of = {
        str(package.get("path")): config
        for config, record in summary.items()
        for package in (record.get("packages") or [])
        if isinstance(package, dict)
    }
    labels: dict[str, list[str]] = {}
    for _, name in sums:
        config = config_of.get(name)
        if config is None:
            raise UserError(
                f"{name}: not in the batch's summary.json, so the config (and conda-forge "
                "label) it was built for is unknown; rebuild it with build-locally.py"
            )
        labels.setdefault(_label_of(root, config), []).append(name)
    if len(labels) > 1:
        parts = "; ".join(f"{label}: {names[0]} ..." for label, names in sorted(labels.items()))
        raise UserError(
            f"the packages go to different conda-forge labels ({parts}); one request copies "
            "to one label, so request them separately"
        )
    return next(iter(labels), "main")


def _label_of(root: Path, config: str) -> str:
    path = root / ".ci_support" / f"{config}.yaml"
    data = parse_variant_file(read_user_file(path), str(path))
    targets = data.get("channel_targets")
    target = targets[0] if isinstance(targets, list) and targets else targets
    if not target:
        return "main"  # conda-forge's default target: conda-forge main
    words = str(target).split()
    if len(words) != 2 or words[0] != "conda-forge":
        raise UserError(f"{path}: channel_targets {target!r} is not 'conda-forge <label>'")
    return words[1]


def provenance_comment(summary: Mapping[str, Mapping[str, object]]) -> list[str]:
    """Where the packages came from, per summary.json, as comment lines for the request:
    the core member approving it compares them with the PR (the admin bot ignores them)."""
    built = [r for r in summary.values() if r.get("status") == "done"]
    facts = [Provenance.from_json(r.get("provenance")) for r in built]
    known = [p for p in facts if p is not None]
    if not known:
        return ["# provenance: not recorded (built before build-locally recorded it)"]

    def values(pick) -> str:
        return ", ".join(sorted({str(pick(p)) for p in known if pick(p) is not None})) or "?"

    numbers = sorted({p.build_number for p in known if p.build_number is not None})
    lines = [
        f"# built from commit {values(lambda p: p.commit or 'none (not a git checkout)')} "
        f"({'DIRTY' if any(p.dirty for p in known) else 'clean'} tree)",
        f"# recipe version {values(lambda p: p.recipe_version)}, build number "
        f"{values(lambda p: p.recipe_build_number)} (per config: "
        f"{', '.join(str(n) for n in numbers) or '?'}); {values(lambda p: p.toolkit)}",
        f"# engine {values(lambda p: p.engine)}; machines {values(lambda p: p.machine)}",
    ]
    if len(known) < len(facts):
        lines.append(f"# {len(facts) - len(known)} config(s) have no provenance recorded")
    warning = dirty_warning(summary)
    return ([f"# {warning}"] if warning else []) + lines


def request_yaml(
    channel: str,
    sums: list[tuple[str, str]],
    *,
    label: str = "main",
    comment: Sequence[str] = (),
) -> str:
    """YAML for ``requests/<name>.yml`` in conda-forge/admin-requests (action cfep3_copy)."""
    check_channel(channel)
    document: dict[str, object] = {
        "action": "cfep3_copy",
        "anaconda_org_packages": [
            {"package": f"{channel}/{name}", "sha256": digest} for digest, name in sums
        ],
    }
    if label != "main":  # the admin bot copies to main unless told otherwise
        document["to_anaconda_org_label"] = label
    stream = io.StringIO()
    yaml = YAML()
    yaml.default_flow_style = False
    yaml.width = 4096  # one package per line, however long conda-smithy's config names get
    yaml.dump(document, stream)
    return "".join(f"{line}\n" for line in comment) + stream.getvalue()
