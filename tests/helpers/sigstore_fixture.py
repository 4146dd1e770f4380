"""The public CEP 27 attestation of tests/fixtures/sigstore/ (its README.md says where each file
comes from), and what it was recorded to say: for the signature tests of the unit and e2e
suites."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sigstore"
PACKAGE = "agent-skill-conda-forge-0.0.21-h4616a5c_0.conda"
SHA256 = "0024f57c1e6aa280b52c1475a792be2e56a89de71792b3ccbf2962fec92becc4"
SIDECAR = FIXTURE / f"{PACKAGE}.sigs"
TRUSTED_ROOT = FIXTURE / "trusted_root.json"
SCHEMA = FIXTURE / "cep-0027.schema.json"
IDENTITY = "https://github.com/pavelzw/skill-forge/.github/workflows/package.yml@refs/heads/main"
ISSUER = "https://token.actions.githubusercontent.com"
CHANNEL = "https://prefix.dev/skill-forge"


def sigstore_cache(monkeypatch: pytest.MonkeyPatch, tmp: Path) -> Path:
    """sigstore-python's TUF cache and data (platformdirs: the XDG folders) under ``tmp``, so
    a test neither reads nor writes the user's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp / "data"))
    return tmp


def placed(folder: Path, subdir: str = "noarch", *, sidecar: bool = True) -> Path:
    """The fixture's package (and its sidecar) in ``folder/subdir``, as a channel serves them:
    the package's path."""
    (folder / subdir).mkdir(parents=True, exist_ok=True)
    package = Path(shutil.copy2(FIXTURE / PACKAGE, folder / subdir / PACKAGE))
    if sidecar:
        shutil.copy2(SIDECAR, folder / subdir / SIDECAR.name)
    return package


def posted(artifacts: Path, target: Path) -> Path:
    """What a delegate uploads from ``artifacts``: the subdir folders and log_files.zip."""
    from tools.localbuild.records.artifacts import SUBDIR

    for folder in artifacts.iterdir():
        if folder.is_dir() and SUBDIR.match(folder.name):
            shutil.copytree(folder, target / folder.name)
    shutil.copy2(artifacts / "log_files.zip", target / "log_files.zip")
    return target


def stat_tree(folder: Path) -> dict[str, tuple[int, int]]:
    """Each file's size and modification time under ``folder``: whether anything was written."""
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }
