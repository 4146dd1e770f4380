"""Renders kept on disk between commands, so that a maintainer's ``explain`` or ``render``
between two edits costs what reading the inputs costs.

A result is stored under the sha256 of everything it was computed from (a *key*): the callers
hash their input files' contents (the recipe folder, the variant file, conda-forge.yml, the
pinning and migrations), and every key also holds the toolkit's own fingerprint (the source
of ``tools/`` and the versions of the libraries and the engine that render). An edit to any
of them is a new key, so nothing is ever invalidated in place and a stale entry is never
read; only successful results are stored, so an error is always reported afresh.

Where: ``$PYTORCH_FEEDSTOCK_CACHE``, else ``$XDG_CACHE_HOME/pytorch-feedstock`` (default
``~/.cache/pytorch-feedstock``), a folder under it per kind of result;
``PYTORCH_FEEDSTOCK_CACHE=off`` turns the cache off. Entries are written to a unique
temporary file and renamed into place, so a concurrent reader sees a whole entry or none, and
two processes storing the same key store the same bytes. An entry that does not load
(another Python, a damaged file, one cut short by a crash) is a miss, so entries are not
fsynced: losing one costs a render, and a loaded disk would otherwise stall the command.
The folder is the user's own (0700): entries are pickles, which only its owner can plant.
Each kind keeps its :data:`KEEP` most recently used entries.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import tempfile
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

ENV = "PYTORCH_FEEDSTOCK_CACHE"
KEEP = 400  # entries per kind: 15 configs x a few recipe states x both recipe front-ends
# the libraries whose behaviour is part of a render (the engine of a v1 recipe among them)
LIBRARIES = ("jinja2", "PyYAML", "ruamel.yaml", "py-rattler-build", "jsonschema")
TOOLKIT = Path(__file__).resolve().parents[1]  # tools/, this file is in tools/foundation/


def cache_root(env: Mapping[str, str] | None = None) -> Path | None:
    """The cache folder, or None when ``PYTORCH_FEEDSTOCK_CACHE=off``."""
    env = os.environ if env is None else env
    chosen = env.get(ENV)
    if chosen is not None and chosen.strip().lower() in ("off", "0", "no", "false", ""):
        return None
    if chosen:
        return Path(chosen)
    base = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "pytorch-feedstock"


class Key:
    """A sha256 over named parts, fed in order; the toolkit's fingerprint always first."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._hash = hashlib.sha256()
        self.add("toolkit", toolkit_fingerprint())

    def add(self, name: str, value: str | bytes | None) -> Key:
        data = b"\0none" if value is None else value.encode() if isinstance(value, str) else value
        for part in (name.encode(), data):
            self._hash.update(len(part).to_bytes(8, "little"))
            self._hash.update(part)
        return self

    def add_files(self, name: str, paths: Iterable[Path]) -> Key:
        """Each file's path and contents (a missing file counts as absent)."""
        for path in paths:
            self.add(f"{name}:{path}", file_digest(path))
        return self

    def add_tree(self, name: str, folder: Path) -> Key:
        """Every file under ``folder``, by relative path and contents."""
        files = sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []
        self.add(f"{name}:root", str(folder))
        for path in files:
            self.add(f"{name}:{path.relative_to(folder).as_posix()}", file_digest(path))
        return self

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


def file_digest(path: Path) -> bytes | None:
    """sha256 of ``path``'s bytes, memoised on its size and modification time in this
    process (explain hashes the recipe folder once, not once per config)."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return _digest(str(path), stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=1024)
def _digest(path: str, size: int, mtime_ns: int) -> bytes | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).digest()
    except OSError:
        return None


@lru_cache(maxsize=1)
def toolkit_fingerprint() -> str:
    """The source of ``tools/`` (every file, data included), the Python and the installed
    versions of :data:`LIBRARIES`: what a render depends on besides its inputs."""
    import sys

    digest = hashlib.sha256(sys.version.encode())
    for name in installed_versions(LIBRARIES):
        digest.update(name.encode() + b"\0")
    for path in sorted(TOOLKIT.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(path.relative_to(TOOLKIT).as_posix().encode() + b"\0")
            digest.update(file_digest(path) or b"")
    return digest.hexdigest()


def installed_versions(names: Iterable[str]) -> list[str]:
    """The ``NAME-VERSION.dist-info`` folders of ``names`` on ``sys.path``: their installed
    versions, read from the folder names (importlib.metadata would cost more to import than
    a cached render costs to load)."""
    import re
    import sys

    def normal(name: str) -> str:
        return re.sub(r"[-_.]+", "_", name).lower()

    wanted = {normal(name) for name in names}
    found = []
    for entry in sys.path:
        try:
            listing = os.listdir(entry or ".")
        except OSError:
            continue
        for item in listing:
            if item.endswith(".dist-info") and normal(item.split("-", 1)[0]) in wanted:
                found.append(item)
    return sorted(found)


def load(key: Key, env: Mapping[str, str] | None = None) -> Any | None:
    """The value stored under ``key``, or None (absent, damaged, or the cache is off)."""
    path = _entry(key, env)
    if path is None:
        return None
    try:
        with path.open("rb") as stream:
            value = pickle.load(stream)
    except FileNotFoundError:
        return None
    except Exception:  # written by another Python or toolkit, or damaged: compute afresh
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # most recently used, for the pruning
    return value


def store(key: Key, value: Any, env: Mapping[str, str] | None = None) -> None:
    """Keep ``value`` under ``key``; a cache that cannot be written is no error."""
    path = _entry(key, env)
    if path is None:
        return
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, name = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=path.parent)  # mode 0600
        try:
            with os.fdopen(fd, "wb") as stream:
                stream.write(data)
            os.replace(name, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(name)
            raise
        _prune(path.parent)
    except OSError:
        pass


def _entry(key: Key, env: Mapping[str, str] | None) -> Path | None:
    root = cache_root(env)
    return None if root is None else root / key.kind / f"{key.hexdigest()}.pickle"


def _prune(folder: Path) -> None:
    """Remove the least recently used entries beyond :data:`KEEP` (another process may
    remove the same ones: a file already gone is fine)."""
    entries = list(os.scandir(folder))
    if len(entries) <= KEEP + KEEP // 4:  # prune in batches, not on every store
        return
    by_age = []
    for entry in entries:
        if entry.name.endswith(".pickle"):
            try:
                by_age.append((entry.stat().st_mtime_ns, entry.path))
            except OSError:
                continue
    for _, path in sorted(by_age)[: max(0, len(by_age) - KEEP)]:
        with contextlib.suppress(OSError):
            os.unlink(path)
