"""Where a batch's packages came from, recorded once per config (summary.json, the log's
head, report.md, review request) so a CFEP-03 reviewer can tie each package to a commit.

The git facts are asked once per batch; a tree with uncommitted changes is ``dirty``, and
the digest of those changes (the diff against HEAD plus every untracked, unignored file)
tells two dirty trees apart.  The toolkit is named by a digest of tools/, which covers
edits a commit does not.  Nothing here fails a build: a fact that cannot be learnt is
recorded as ``None``.
"""

from __future__ import annotations

import hashlib
import re
import socket
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from tools.foundation.errors import CommandError, UserError
from tools.foundation.proc import call

DIRTY_WARNING = "WARNING: built from a dirty tree (uncommitted changes)"
# The embedded engine's limit, in the words its records carry and review verify reads back.
NO_PACKAGE_COMMIT = (
    "packages carry no commit: py-rattler-build records no --extra-meta, so their "
    "info/about.json has no extra.sha"
)


@dataclass(frozen=True)
class Provenance:
    commit: str | None  # the feedstock's HEAD; None outside a git checkout
    dirty: bool
    diff_sha256: str | None  # of the uncommitted changes; None when clean
    recipe_version: str | None
    # The recipe's own build number ({% set build = N %}, context: build: N): what every config
    # of one release shares.  build_number is this config's rendered one, variant offsets
    # (+200 CUDA, +100 MKL, +50 magma in this recipe) included, so it differs across configs.
    recipe_build_number: int | None
    build_number: int | None
    ci_support_sha256: str | None  # the .ci_support/<config>.yaml the build read
    toolkit: str  # "tools <digest of tools/*.py>"
    engine: str | None  # "docker 27.3.1", "native conda-build"
    image: str | None
    machine: str
    # The recipe file the engine built ("recipe/meta.yaml"), and whether the engine is the one
    # conda-forge's CI builds this feedstock with (tools/localbuild/records/ci_engine.py); None in a
    # record written before they were recorded.
    recipe_file: str | None = None
    ci_engine: bool | None = None
    # The channels the build solved from (the config's channel_sources, or --channel), and
    # whether the engine's test phase ran ("run", or "skipped: " and why); None in a record
    # written before they were recorded.
    channels: tuple[str, ...] | None = None
    tests: str | None = None

    def to_json(self) -> dict[str, object]:
        found = asdict(self)
        found["channels"] = list(self.channels) if self.channels is not None else None
        return found

    @classmethod
    def from_json(cls, data: object) -> Provenance | None:
        """A record's provenance, or None for one written before provenance existed."""
        if not isinstance(data, Mapping) or not isinstance(data.get("machine"), str):
            return None
        # A file someone handed over (the review commands): text fields are text.
        fields = {
            k: v if isinstance(v := data.get(k), str) else None for k in cls.__dataclass_fields__
        }
        fields["dirty"] = data.get("dirty") is True
        fields["ci_engine"] = ci if type(ci := data.get("ci_engine")) is bool else None
        fields["toolkit"] = fields["toolkit"] or ""
        listed = data.get("channels")
        fields["channels"] = (
            tuple(listed)
            if isinstance(listed, list) and all(isinstance(c, str) for c in listed)
            else None
        )
        for key in ("build_number", "recipe_build_number"):
            number = data.get(key)
            fields[key] = number if type(number) is int else None
        return cls(**fields)

    @property
    def packages_carry_no_commit(self) -> bool:
        """The engine could not write the commit into the packages (and the record says so)."""
        return NO_PACKAGE_COMMIT in (self.engine or "")

    def describe(self) -> str:
        """One line for a log's head or a report: what a reviewer compares."""
        commit = self.commit[:12] if self.commit else "no git commit"
        state = f"dirty, diff sha256 {(self.diff_sha256 or '')[:12]}" if self.dirty else "clean"
        recipe = f"{self.recipe_version or '?'} build {self.build_number}"
        if self.recipe_build_number not in (None, self.build_number):
            recipe += f" (recipe build {self.recipe_build_number})"
        built = self.engine or "engine unknown"
        if self.recipe_file:
            built += f" from {self.recipe_file}"
        if self.ci_engine is False:
            built += " (not conda-forge's CI engine)"
        return (
            f"commit {commit} ({state}); recipe {recipe}; {self.toolkit}; "
            f"{built}; machine {self.machine}"
        )


@dataclass(frozen=True)
class Checkout:
    commit: str | None
    dirty: bool
    diff_sha256: str | None


# What build-locally itself writes into the checkout (conda-smithy's .gitignore lists them,
# a feedstock may not): never a change to the sources.
_SOURCES = (
    "--",
    ".",
    ":(exclude)build_artifacts",
    ":(exclude)miniforge3",
    ":(exclude)recipe/recipe-scripts-license.txt",
)


def _git(root: Path, *args: str) -> str | None:
    try:
        result = call("git", "-C", str(root), *args, capture=True, check=False, quiet=True)
    except CommandError:  # no git at all
        return None
    return result.stdout if result.returncode == 0 else None


def checkout(root: Path) -> Checkout:
    """HEAD, and whether (and how) the working tree differs from it."""
    head = _git(root, "rev-parse", "--verify", "HEAD")
    if head is None:
        return Checkout(None, False, None)
    status = _git(root, "status", "--porcelain", "--untracked-files=all", *_SOURCES) or ""
    if not status.strip():
        return Checkout(head.strip(), False, None)
    digest = hashlib.sha256((_git(root, "diff", "HEAD", "--binary", *_SOURCES) or "").encode())
    untracked = _git(root, "ls-files", "--others", "--exclude-standard", "-z", *_SOURCES) or ""
    for name in sorted(n for n in untracked.split("\0") if n):
        digest.update(b"\0untracked " + name.encode())
        path = root / name
        if path.is_file() and not path.is_symlink():
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return Checkout(head.strip(), True, digest.hexdigest())


def package_time(root: Path, env: Mapping[str, str]) -> int:
    """The time the embedded engine's packages carry (engines/repack.py): HEAD's commit time,
    the same for every build of one commit; outside a checkout SOURCE_DATE_EPOCH, else now."""
    stamp = _git(root, "log", "-1", "--format=%ct", "HEAD")
    if stamp and stamp.strip().isdigit():
        return int(stamp.strip())
    given = env.get("SOURCE_DATE_EPOCH", "")
    return int(given) if given.isdigit() else int(time.time())


def toolkit_version(package: Path | None = None) -> str:
    """A digest of the toolkit that is running (tools/*.py), edits included."""
    package = package or Path(__file__).resolve().parents[2]  # tools/
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return f"tools {digest.hexdigest()[:12]}"


def file_sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


_VERSION_LINE = re.compile(r"^\s*(?:Server )?Version:\s*(\S+)", re.MULTILINE)


def engine_version(info_output: str) -> str | None:
    """The server version `docker info` / `podman info` prints."""
    match = _VERSION_LINE.search(info_output)
    return match.group(1) if match else None


def machine(env: Mapping[str, str]) -> str:
    return env.get("BUILD_MACHINE") or socket.gethostname()


def recipe_build_number(root: Path) -> int | None:
    """The build number the recipe sets before any variant offset, read as conda-forge's bots
    read it (tools.foundation.version); None where the recipe does not set it that way."""
    from tools.foundation.version import release_fields

    path, read = release_fields(root)
    try:
        _, build = read(path.read_text(encoding="utf-8"), str(path))
    except (OSError, UnicodeDecodeError, UserError):
        return None
    return int(build) if build is not None and build.isdigit() else None


def for_config(
    base: Provenance,
    *,
    ci_support: Path,
    image: str | None,
    recipe: tuple[str, int] | None,
    recipe_file: str | None = None,
    ci_engine: bool | None = None,
) -> Provenance:
    """The batch's facts with this config's own: its variant file, image, recipe render, the
    recipe file built and whether its engine is conda-forge's CI one."""
    version, number = recipe if recipe is not None else (None, None)
    return replace(
        base,
        ci_support_sha256=file_sha256(ci_support),
        image=image,
        recipe_version=version,
        build_number=number,
        recipe_file=recipe_file,
        ci_engine=ci_engine,
    )


def channel_sources(ci_support: Path) -> tuple[str, ...] | None:
    """A variant file's channel_sources, one channel each (conda-smithy joins them with
    commas); None when the file cannot be read or names none."""
    from tools.recipe.variant_config import parse_variant_file

    try:
        data = parse_variant_file(ci_support.read_text(encoding="utf-8"), str(ci_support))
    except (OSError, UnicodeDecodeError, UserError):
        return None
    listed = data.get("channel_sources")
    entries = listed if isinstance(listed, list) else [listed] if listed else []
    found = tuple(c.strip() for e in entries for c in str(e).split(",") if c.strip())
    return found or None


def tests_of(env: Mapping[str, str]) -> str:
    """Whether the engine's test phase runs: build_steps.sh hands EXTRA_CB_OPTIONS to
    conda-build, and the embedded engine reads ``--no-test`` there as ``--test skip``."""
    if "--no-test" in env.get("EXTRA_CB_OPTIONS", "").split():
        return "skipped: --no-test in EXTRA_CB_OPTIONS"
    return "run"


def dirty_warning(records: Mapping[str, Mapping[str, object]]) -> str | None:
    """The warning for a batch whose records name a dirty tree, or None."""
    dirty = sorted(
        name
        for name, record in records.items()
        if (p := Provenance.from_json(record.get("provenance"))) is not None and p.dirty
    )
    if not dirty:
        return None
    return f"{DIRTY_WARNING} in {len(dirty)} config(s): a reviewer cannot tie them to a commit"
