"""The channels a rebuild solves against: exactly the packages the upload's builds resolved.

The embedded engine stages each folder channel at a fixed place and the repack records each
package resolved from it (build, host, staging cache and, when it ran, test environments) in
info/recipe/rendered_recipe.yaml as ``url: local-channel-N/SUBDIR/FILE`` with its sha256
(rattler_build/workroot.py's CHANNEL_LABEL). A rebuild days later copies exactly those files, each
checked against its sha256, from the ``--channel`` folders it is given into fresh channels,
one per recorded channel in the recorded order (their number and order are in the package
hash), indexes them, and builds against them alone: a package published since cannot enter.
The packages of the build itself (libtorch in pytorch's host environment) are not recorded
from a channel: the engine builds them into its output folder, which it solves against too.
rattler-build records no test environment: packages of other names than those recorded come
from the given folders as they are today (a test cannot change the packages' bytes).

An upload that solved against a URL channel (conda-forge) records that URL; its rebuild
solves against the channels given, as they are today (:func:`pinned_channels` says so).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import os
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from tools.foundation.errors import UserError
from tools.rattler_build.repack import RENDERED
from tools.rattler_build.workroot import CHANNEL_LABEL
from tools.review.crosscheck import Finding


@dataclass(frozen=True)
class Resolved:
    """One package a build's environment held, as rendered_recipe.yaml records it."""

    channel: str  # local-channel-N
    subdir: str
    fn: str
    sha256: str
    name: str


def _rendered(package: Path) -> dict:
    from conda_package_streaming.package_streaming import CondaComponent, stream_conda_component
    from ruamel.yaml import YAML

    with package.open("rb") as stream:
        for tar, member in stream_conda_component(package.name, stream, CondaComponent.info):
            if member.name == RENDERED:
                document = YAML(typ="safe").load(tar.extractfile(member).read().decode())
                return document if isinstance(document, dict) else {}
    return {}


def _records(node: object) -> Iterator[dict]:
    if isinstance(node, list):
        for item in node:
            yield from _records(item)
    elif isinstance(node, dict):
        if isinstance(node.get("url"), str) and node.get("sha256"):
            yield node
        for value in node.values():
            yield from _records(value)


def recorded(packages: Sequence[Path]) -> tuple[list[str], list[Resolved]]:
    """The channels the packages' builds solved against, in order, and every package their
    environments resolved from a staged folder channel."""
    channels: list[str] = []
    resolved: dict[tuple[str, str, str], Resolved] = {}
    for package in packages:
        document = _rendered(package)
        for channel in (document.get("build_configuration") or {}).get("channels") or []:
            if str(channel).rstrip("/") not in channels:
                channels.append(str(channel).rstrip("/"))
        for record in _records(document):
            channel, _, rest = record["url"].partition("/")
            subdir, _, fn = rest.partition("/")
            if channel.startswith(CHANNEL_LABEL) and fn:
                resolved[(channel, subdir, fn)] = Resolved(
                    channel, subdir, fn, record["sha256"], str(record.get("name", ""))
                )
    return channels, [resolved[k] for k in sorted(resolved)]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _found(package: Resolved, folders: Sequence[Path]) -> tuple[Path | None, list[str]]:
    """The given folders' copy of ``package`` with its sha256, and the other copies seen."""
    others = []
    for folder in folders:
        candidate = folder / package.subdir / package.fn
        if candidate.is_file():
            if _sha256(candidate) == package.sha256:
                return candidate, others
            others.append(str(candidate))
    return None, others


def _add_unrecorded(folders: Sequence[Path], made: Sequence[Path], names: set[str]) -> None:
    """The given folders' packages of names no environment recorded, linked in as well (the
    i-th folder's into the i-th channel, the rest into the last): rattler-build does not
    record the test environment, which solves when the packages are made, so what it needs
    beyond them comes from the channels as they are today."""
    for place, folder in enumerate(folders):
        channel = made[min(place, len(made) - 1)]
        for package in sorted(folder.glob("*/*")):
            target = channel / package.parent.name / package.name
            if not package.name.endswith((".conda", ".tar.bz2")) or target.exists():
                continue
            if _name_of(package) in names:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(package, target)
            except OSError:  # another file system
                shutil.copy2(package, target)


def _name_of(package: Path) -> str:
    """The package's name, from its subdir's repodata.json where that lists it (reading every
    archive of a mirror would take long), else from the archive."""
    index = package.parent / "repodata.json"
    if index.is_file():
        listed = _listed(index)
        if package.name in listed:
            return listed[package.name]
    from rattler.package import IndexJson

    return IndexJson.from_package_archive(package).name.normalized


@functools.cache
def _listed(index: Path) -> dict[str, str]:
    document = json.loads(index.read_text(encoding="utf-8"))
    return {
        fn: str(record.get("name", ""))
        for key in ("packages", "packages.conda")
        for fn, record in (document.get(key) or {}).items()
    }


def pinned_channels(
    packages: Sequence[Path], given: Sequence[str], into: Path
) -> tuple[list[Path] | None, list[Finding], str | None]:
    """Fresh channels in ``into`` holding exactly the packages the upload's builds resolved,
    copied from the ``given`` channel folders; a finding for each recorded package they lack.
    None (and a note) where the upload solved against a channel that is not a staged folder."""
    channels, resolved = recorded(packages)
    if not channels:
        return None, [], "note: the upload records no channels; the rebuild solves as given"
    unpinned = [c for c in channels if not c.startswith(CHANNEL_LABEL)]
    if unpinned:
        note = (
            f"note: the upload solved against {', '.join(unpinned)} (not a local folder), so "
            "the rebuild solves against the channels given, as they are today"
        )
        return None, [], note
    folders = [Path(c).expanduser() for c in given if Path(c).expanduser().is_dir()]
    findings = []
    subdirs = {"noarch"} | {p.subdir for p in resolved}
    made = [into / channel for channel in channels]
    for folder in made:
        for subdir in subdirs:
            (folder / subdir).mkdir(parents=True, exist_ok=True)
    for package in resolved:
        found, others = _found(package, folders)
        if found is None:
            where = ", ".join(str(f) for f in folders) or "none given"
            wrong = f"; {', '.join(others)} has another sha256" if others else ""
            findings.append(Finding(
                f"{package.subdir}/{package.fn}",
                f"resolved by the upload's build (sha256 {package.sha256[:12]}…), not in the "
                f"--channel folders ({where}){wrong}; give the channel that holds it",
            ))  # fmt: skip
            continue
        target = into / package.channel / package.subdir / package.fn
        try:
            os.link(found, target)
        except OSError:  # another file system
            shutil.copy2(found, target)
    if findings:
        return None, findings, None
    _add_unrecorded(folders, made, {p.name for p in resolved})
    from rattler.index import index_fs

    for folder in made:
        try:
            asyncio.run(index_fs(folder))
        except Exception as exc:  # py-rattler's own errors have no common base class
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise UserError(f"{folder}: py-rattler could not index it ({reason})") from None
    return made, [], None
