"""conda-forge's versions: from repodata.json / channeldata.json files, or the live channel."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from tools.drift.compare import newest
from tools.drift.model import ChannelPackage
from tools.foundation.errors import UserError
from tools.foundation.files import load_json_text, read_user_file

Versions = Mapping[str, tuple[str, ...]]  # conda name -> versions


def versions_from_json(document: object, where: str) -> dict[str, list[str]]:
    """Versions per package name from a repodata.json or channeldata.json document."""
    if not isinstance(document, dict):
        raise UserError(f"{where}: expected a JSON object (repodata.json or channeldata.json)")
    found: dict[str, list[str]] = {}
    if "packages.conda" in document or "info" in document or _looks_like_repodata(document):
        for key in ("packages", "packages.conda"):
            records = document.get(key) or {}
            if not isinstance(records, dict):
                raise UserError(f"{where}: {key!r} must map file names to package records")
            for filename, record in records.items():
                if not isinstance(record, dict) or "name" not in record or "version" not in record:
                    raise UserError(f"{where}: record {filename!r} lacks name or version")
                found.setdefault(str(record["name"]), []).append(str(record["version"]))
        return found
    packages = document.get("packages")
    if not isinstance(packages, dict):
        raise UserError(
            f"{where}: neither repodata.json (packages, packages.conda) "
            "nor channeldata.json (packages)"
        )
    for name, record in packages.items():
        if not isinstance(record, dict):
            raise UserError(f"{where}: package {name!r} must be an object")
        if record.get("version") is not None:
            found.setdefault(str(name), []).append(str(record["version"]))
    return found


def _looks_like_repodata(document: dict) -> bool:
    packages = document.get("packages")
    if not isinstance(packages, dict) or not packages:
        return False
    first = next(iter(packages))
    return first.endswith((".tar.bz2", ".conda"))


def read_channel_files(paths: Sequence[Path]) -> dict[str, ChannelPackage]:
    merged: dict[str, list[str]] = {}
    sources: dict[str, list[str]] = {}
    for path in paths:
        if not path.is_file():
            raise UserError(
                f"{path}: no such file; pass --channel-data a repodata.json or channeldata.json"
            )
        document = load_json_text(read_user_file(path), str(path))
        for name, versions in versions_from_json(document, str(path)).items():
            merged.setdefault(name, []).extend(versions)
            sources.setdefault(name, []).append(path.name)
    return {
        name: ChannelPackage(name, newest(versions), ", ".join(dict.fromkeys(sources[name])))
        for name, versions in merged.items()
    }


def query_channel(
    names: Iterable[str],
    platforms: Sequence[str],
    channel: str = "conda-forge",
    timeout: float = 60.0,
    cache_dir: Path | None = None,
) -> dict[str, ChannelPackage]:
    """Versions from a channel (name, URL or local directory) through py-rattler's gateway; with
    sharded repodata only the packages asked for are downloaded.  Raises when the channel
    cannot be reached; the caller turns that into "unknown"."""
    import asyncio

    from rattler import Channel, Gateway

    wanted = sorted(set(names))

    async def fetch():
        gateway = Gateway(cache_dir=cache_dir, show_progress=False)
        return await gateway.query(
            [Channel(channel)],
            [*platforms, "noarch"],  # subdir names; py-rattler parses them
            wanted,
            recursive=False,
        )

    merged: dict[str, list[str]] = {}
    for item in asyncio.run(asyncio.wait_for(fetch(), timeout)):
        # One list of records per channel queried (older py-rattler) or the records themselves.
        for record in item if isinstance(item, list) else [item]:
            merged.setdefault(record.name.normalized, []).append(str(record.version))
    return {
        name: ChannelPackage(name, newest(versions), channel) for name, versions in merged.items()
    }
