"""Builds without internet: ``--channel`` (a mirror, or a folder of packages indexed here)
replaces the channels a config names, ``--source-cache`` holds the source archive the recipe
names, and ``--fetch-sources`` fills such a folder on a machine with internet.

Every check runs before the build starts: a wrong archive or an empty channel is refused in
one line, and build_artifacts/ stays as it was.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shutil
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from tools.foundation.errors import UserError
from tools.foundation.files import atomic_replace, sha256_of
from tools.localbuild.engines.embedded import v1_recipe
from tools.recipe import release

FETCH_TIMEOUT_S = 60
#: Where a channel name (conda-forge) is served from, as conda and rattler-build resolve it.
CHANNEL_ALIAS = "https://conda.anaconda.org"
#: The page that says what a build without internet needs.
AIRGAP_DOC = 'docs/build-locally.md, "Air-gapped builds"'
PACKAGE_SUFFIXES = (".conda", ".tar.bz2")
_VERSION = re.compile(r"\$?\{\{\s*version\s*\}\}")  # v1 ${{ }}, meta.yaml {{ }}


@dataclass(frozen=True)
class Source:
    url: str  # with the version filled in
    sha256: str
    recipe: Path
    line: int  # of the sha256, for messages

    @property
    def name(self) -> str:
        return self.url.rstrip("/").rsplit("/", 1)[-1]


def recipe_source(root: Path) -> Source:
    """The source archive the v1 recipe names: its URL, sha256 and where it says so."""
    return source_of(v1_recipe(root))


def source_of(path: Path) -> Source:
    """The source archive the recipe at ``path`` names (v1, or meta.yaml)."""
    recipe = release.parse(path, path.read_text(encoding="utf-8"))
    facts = release.release_of(recipe)
    url = _VERSION.sub(facts.version, facts.url)
    if "{{" in url:
        raise UserError(
            f"{path}:{recipe.line_of('url')}: source url {facts.url!r} uses more than "
            "the version; the source cache cannot name its archive"
        )
    return Source(url, facts.sha256, path, recipe.line_of("sha256"))


def cached_archive(root: Path, cache: Path | None) -> Path | None:
    """Where ``--source-cache`` holds the recipe's archive (checked by :func:`check_source`)."""
    return None if cache is None else cache / recipe_source(root).name


def check_source(root: Path, cache: Path) -> Path:
    """The archive in ``cache``, refused unless its sha256 is the recipe's."""
    source = recipe_source(root)
    archive = cache / source.name
    if not archive.is_file():
        raise UserError(
            f"--source-cache {cache}: no {source.name} there (the archive {source.recipe.name} "
            f"names); fill it on a machine with internet: python build-locally.py "
            f"--fetch-sources {cache}"
        )
    found = sha256_of(archive)
    if found != source.sha256:
        raise UserError(
            f"--source-cache {archive}: sha256 {found}, but {source.recipe}:{source.line} says "
            f"{source.sha256}; replace the archive (python build-locally.py --fetch-sources "
            f"{cache}) or fix the recipe"
        )
    return archive


def fetch_sources(root: Path, cache: Path, say) -> Path:
    """Download the recipe's source archive into ``cache`` (checked, then renamed into place);
    an archive already there with the right sha256 is kept."""
    source = recipe_source(root)
    target = cache / source.name
    if target.is_file() and sha256_of(target) == source.sha256:
        say(f"{target}: already there, sha256 {source.sha256}")
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with atomic_replace(target) as partial:
        try:
            with (
                urllib.request.urlopen(source.url, timeout=FETCH_TIMEOUT_S) as response,
                partial.open("wb") as out,
            ):
                shutil.copyfileobj(response, out, 1 << 20)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise UserError(
                f"cannot fetch {source.url} ({reason}); run this where there is internet"
            ) from None
        found = sha256_of(partial)
        if found != source.sha256:
            raise UserError(
                f"{source.url}: sha256 {found}, but {source.recipe}:{source.line} says "
                f"{source.sha256}; nothing was written"
            )
    say(f"{target}: fetched, sha256 {source.sha256}")
    return target


_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
# Where a folder channel without a current index is indexed: a linked copy in build_artifacts/,
# since the user's mirror is theirs (it may be read-only, shared, or another tool's).
INDEXED_COPIES = ".channel-index"


def local_folder(text: str) -> Path | None:
    """The folder a channel or destination names, as ``conda install -c`` reads one: a
    ``file://`` URL (percent-decoded; ``file:///C:/x`` is ``C:/x``), an absolute or relative
    path, ``~/...``, or a Windows drive path (``C:/x``, ``C:\\x``); None for a URL of another
    scheme or a channel name (``conda-forge``, ``OWNER/label/LABEL``)."""
    if text.startswith("file://"):
        path = unquote(urlparse(text).path)
        if re.match(r"^/[A-Za-z]:/", path):  # file:///C:/x
            path = path[1:]
        return Path(path)
    if "://" in text:
        return None
    if _WINDOWS_DRIVE.match(text) or text.startswith(("/", "./", "../", "~", ".\\", "..\\")):
        return Path(text).expanduser()
    if text in (".", ".."):
        return Path(text)
    return None


def _folder(channel: str) -> Path | None:
    """A --channel's folder: as :func:`local_folder` reads it, or an existing folder named bare."""
    folder = local_folder(channel)
    bare_path = "/" in channel or "\\" in channel or Path(channel).is_dir()
    if folder is None and "://" not in channel and bare_path:
        folder = Path(channel).expanduser()
    return folder


def indexed_copy(folder: Path, artifacts: Path) -> Path:
    """Where ``folder``'s packages are indexed when its own index is missing or stale."""
    digest = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:12]
    return artifacts / INDEXED_COPIES / f"{folder.resolve().name}-{digest}"


def channel_url(channel: str, artifacts: Path | None = None) -> str:
    """A channel as rattler-build takes it: a URL or name as given, a folder as a file URL (its
    indexed copy in ``artifacts`` when its own index is missing or stale)."""
    folder = _folder(channel)
    if folder is None:
        return channel  # a URL, or a channel name (conda-forge), resolved by rattler-build
    if artifacts is not None and folder.is_dir() and stale_subdirs(folder):
        return indexed_copy(folder, artifacts).resolve().as_uri()
    return folder.resolve().as_uri()


def _packages(folder: Path) -> list[Path]:
    return [p for p in folder.glob("*/*") if p.name.endswith(PACKAGE_SUFFIXES)]


def check_channel(channel: str, *, index: bool, artifacts: Path | None = None) -> None:
    """A folder channel holds packages and is indexed: as it is when every subdir's
    repodata.json is newer than its packages, else (with ``index``) a copy of it, hard-linked
    into ``artifacts``, indexed there by py-rattler; the user's folder is never written to.
    A URL is taken as given.  Every package the index would read is read first, with or
    without ``index`` (a dry run checks what the run will), so a damaged one is refused in
    one line naming it instead of py-rattler's panic."""
    path = _folder(channel)
    if path is None:
        return
    if not path.is_dir():
        raise UserError(
            f"--channel {channel}: no such folder; give a mirror's URL or a folder of packages"
        )
    packages = _packages(path)
    if not packages:
        raise UserError(
            f"--channel {channel}: no packages in it (expected {channel}/<subdir>/*.conda); "
            f"mirror what the config needs into it ({AIRGAP_DOC})"
        )
    if not stale_subdirs(path):
        return
    for package in packages:
        _check_package(channel, path, package)
    if index and artifacts is not None:
        _index_copy(channel, packages, indexed_copy(path, artifacts))


def _index_copy(channel: str, packages: list[Path], copy: Path) -> None:
    """The channel's packages linked into ``copy`` (made anew) and indexed there."""
    from rattler.index import index_fs

    shutil.rmtree(copy, ignore_errors=True)  # our own earlier copy, never the user's folder
    for package in packages:
        target = copy / package.parent.name / package.name
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(package, target)
        except OSError:  # another file system
            shutil.copy2(package, target)
    (copy / "noarch").mkdir(parents=True, exist_ok=True)
    try:
        asyncio.run(index_fs(copy))
    except Exception as exc:  # py-rattler's own errors have no common base class
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise UserError(
            f"--channel {channel}: py-rattler could not index a copy of it ({reason}); "
            "index it yourself (conda index, rattler-index) so its repodata.json is current"
        ) from None


def stale_subdirs(path: Path) -> list[str]:
    """The subdirs of a folder channel whose repodata.json is missing or older than one of
    their packages: what the run indexes before it builds."""
    stale = {
        p.parent.name
        for p in _packages(path)
        if not (p.parent / "repodata.json").is_file()
        or p.stat().st_mtime > (p.parent / "repodata.json").stat().st_mtime
    }
    return sorted(stale)


def _check_package(channel: str, folder: Path, package: Path) -> None:
    """``package`` has the metadata an index reads (info/index.json), else one line naming
    it: py-rattler's indexer panics on an archive it cannot open."""
    from rattler.package import IndexJson

    try:
        IndexJson.from_package_archive(package)
    except Exception as exc:  # ExtractError, IOError... no common base class
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise UserError(
            f"--channel {channel}: {package.relative_to(folder)} is not a readable conda "
            f"package ({reason}); replace it with a good copy or delete it"
        ) from None
