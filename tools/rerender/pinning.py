"""``--pinning``: where conda-forge's pinning is, its text, and the gaps a truncated copy shows
before conda-build's defaults would fill them."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.foundation.errors import UserError
from tools.foundation.files import read_user_file


@dataclass(frozen=True)
class Pinning:
    cbc: Path
    migrations_dir: Path | None


# Where a newcomer without conda gets conda-forge's pinning
# (docs/matrix.md, "conda-forge's pinning").
GET_PINNING = (
    "without conda, `git clone --depth 1 "
    "https://github.com/conda-forge/conda-forge-pinning-feedstock` and pass "
    "--pinning conda-forge-pinning-feedstock/recipe; without internet, make that clone on a "
    "machine that has it and copy the folder here "
    '(docs/build-locally.md, "Air-gapped builds")'
)

# conda-forge's conda_build_config.yaml is about 60 kB; anything this large is another file.
_PINNING_MAX_BYTES = 16 * 1024 * 1024


def locate_pinning(value: str | None, environ: Mapping[str, str] | None = None) -> Pinning:
    """``--pinning``: a cbc file, a directory shaped like the installed conda-forge-pinning
    package (``conda_build_config.yaml`` + ``share/conda-forge/migrations``), or a clone of
    conda-forge-pinning-feedstock (its ``recipe/``, or the clone itself); else the installed
    conda-forge-pinning of the active conda environment."""
    env = os.environ if environ is None else environ
    if value:
        path = Path(value)
        if path.is_dir():
            inside = path / "conda_build_config.yaml"
            feedstock = path / "recipe" / "conda_build_config.yaml"
            path = feedstock if not inside.is_file() and feedstock.is_file() else inside
        if not path.is_file():
            raise UserError(
                f"{value}: no conda_build_config.yaml there; pass the pinning's file or "
                f"directory ({GET_PINNING})"
            )
    else:
        prefix = env.get("CONDA_PREFIX")
        path = Path(prefix) / "conda_build_config.yaml" if prefix else None
        if path is None or not path.is_file():
            raise UserError(
                "no conda-forge pinning found (no active conda environment with "
                "conda-forge-pinning installed); pass --pinning PATH; " + GET_PINNING
            )
    for migrations in (
        path.parent / "share" / "conda-forge" / "migrations",  # the installed package
        path.parent / "migrations",  # conda-forge-pinning-feedstock's recipe/
    ):
        if migrations.is_dir():
            return Pinning(path, migrations)
    return Pinning(path, None)


def read_pinning(pinning: Pinning) -> str:
    """The pinning's text; a binary or huge file (a wheel given by mistake) is refused from
    its first bytes or its size, never read whole."""
    return read_user_file(pinning.cbc, max_bytes=_PINNING_MAX_BYTES)


# A truncated pinning is named as such, before conda-build's defaults fill its gaps and a later
# step fails on a value it never set (``python: 3.11``, the running Python's).
_INCOMPLETE = "; the pinning looks incomplete (truncated?): use a complete copy; " + GET_PINNING


def check_pinning_zip_keys(source: str, pinning: Mapping[str, Any]) -> None:
    """A gap in a truncated pinning: a key its own ``zip_keys`` names but the file does not set."""
    for group in pinning.get("zip_keys") or []:
        for key in group if isinstance(group, list) else [group]:
            if key not in pinning:
                raise UserError(
                    f"{source}: zip_keys names {key!r}, which the file never sets" + _INCOMPLETE
                )


def check_pinning_has_migrated_keys(
    source: str,
    pinning: Mapping[str, Any],
    recipe: Mapping[str, Any],
    migrations: Sequence[tuple[str, Mapping[str, Any]]],
) -> None:
    """A gap in a truncated pinning: a key that an applied migration orders but neither the
    pinning nor the recipe sets."""
    for migration, spec in migrations:
        migrator = spec.get("__migrator") or {}
        ordering = migrator.get("ordering") if isinstance(migrator, Mapping) else None
        for key in ordering or {}:
            if key in spec and key not in pinning and key not in recipe:
                raise UserError(
                    f"{source}: no {key!r}, which the migration {migration} orders" + _INCOMPLETE
                )
