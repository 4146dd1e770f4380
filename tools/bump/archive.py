"""The release archive, fetched (a path, ``file://`` or ``https://``), hashed, and the
few files the later stages read extracted (a PyTorch archive is hundreds of MB: only the
patches' targets and the build-system files come out, so a bump stays quick)."""

from __future__ import annotations

import re
import shlex
import shutil
import tarfile
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tools.foundation.errors import UserError
from tools.foundation.files import sha256_of

FETCH_TIMEOUT_S = 60
_JINJA_VERSION = re.compile(r"\$?\{\{\s*version\s*\}\}")


@dataclass(frozen=True)
class Archive:
    path: Path
    origin: str  # what it was fetched from, for the report
    sha256: str


def release_url(template: str, version: str, where: str) -> str:
    """The recipe's source url with ``{{ version }}`` / ``${{ version }}`` filled in."""
    url = _JINJA_VERSION.sub(version, template)
    if "{{" in url or "{%" in url:
        raise UserError(
            f"{where}: source url {template!r} uses more than {{{{ version }}}}; "
            "pass the archive with --source PATH_OR_URL"
        )
    return url


def fetch(source: str, scratch: Path, version: str, other_args: str = "") -> Archive:
    """``source``: an archive path, or a URL to download into ``scratch``; ``other_args``:
    the bump's other options, repeated in the command a refusal suggests."""
    if "://" not in source:
        path = Path(source).expanduser()
        if not path.is_file():
            what = "not a file" if path.exists() else "no such file"
            raise UserError(f"--source {source}: {what}; pass the release archive or its URL")
        return Archive(path, str(path), sha256_of(path))
    name = source.rstrip("/").rsplit("/", 1)[-1] or f"pytorch-v{version}.tar.gz"
    target = scratch / name
    try:
        with (
            urllib.request.urlopen(source, timeout=FETCH_TIMEOUT_S) as response,
            target.open("wb") as out,
        ):
            shutil.copyfileobj(response, out, 1 << 20)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        local = f"pytorch-v{version}.tar.gz"
        raise UserError(
            f"cannot fetch {source} ({reason}); with no archive and no network the sha256 "
            f"cannot be computed: fetch it where there is one (curl -fL -o {local} "
            f"{shlex.quote(source)}), then run python -m tools bump {version} --source {local}"
            f"{other_args}"
        ) from None
    return Archive(target, source, sha256_of(target))


def extract(archive: Archive, dest: Path, wanted: Callable[[str], bool]) -> set[str]:
    """Extract the files ``wanted`` accepts (paths inside the source tree, the archive's one
    top-level directory stripped, as conda-build strips it) into ``dest``; returns every
    path the archive holds, so a later stage can tell a missing file from an unread one."""
    try:
        with tarfile.open(archive.path) as tar:
            members = [m for m in tar.getmembers() if m.name not in (".", "")]
            tops = {m.name.split("/", 1)[0] for m in members}
            strip = len(tops) == 1 and any("/" in m.name for m in members)
            present: set[str] = set()
            for member in members:
                inside = (
                    member.name.split("/", 1)[1] if strip and "/" in member.name else member.name
                )
                if strip and "/" not in member.name:
                    continue
                present.add(inside)
                if member.isfile() and wanted(inside):
                    member.name = inside
                    tar.extract(member, dest, filter="data")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise UserError(f"{archive.origin}: not a readable tar archive ({exc})") from None
    return present
