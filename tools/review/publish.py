"""``python -m tools review publish DEST``: put a verified batch into a channel (docs/fork.md).

The batch is build_artifacts/ as a build or ``review merge`` left it; it is published only
when the ``review verify`` checks pass on it (sums, every config of the matrix, commits, logs,
``tools check``), so what a fork's users install is what a reviewer would accept.

DEST is read as ``conda install -c`` reads a channel: a path (``/...``, ``./...``,
``../...``, ``~/...``) or ``file://`` URL is a directory channel; ``OWNER`` or
``OWNER/label/LABEL`` is an anaconda.org channel.

A directory channel is written so that a reader (``-c file://DEST``, or DEST served over
HTTP) never sees half of it: the channel as it will be is assembled beside DEST (packages
hard-linked where the file system allows) and indexed there with py-rattler; then each new
package is renamed into DEST, and only after them the index files, each by one rename.
A package already in DEST is kept (the same bytes) or refused (different bytes), never
replaced; nothing in DEST is deleted. Each package's signature sidecar (``<package>.sigs``,
``review sign``) goes beside it, renamed in after the packages and before the index, by the
same rule; anaconda.org serves a channel's packages and repodata, not files beside them, so
there the sidecars stay in the batch (docs/cfep03.md).

anaconda.org is reached through anaconda-client's ``anaconda upload``; the token comes from
ANACONDA_API_TOKEN alone (conda-forge's BINSTAR_TOKEN uploads to conda-forge, never taken
here) and reaches the program only through its environment, never its command line, and is
never printed. The owners ``conda-forge`` and ``cf-staging`` are refused: CFEP-03 has a
delegate upload to their own channel and the core team copy (``review request``). A
directory publish holds a lock in DEST, so a second publisher is refused, not interleaved.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from tools.foundation.errors import ProblemsFound, ToolError, UserError
from tools.foundation.files import atomic_copy
from tools.foundation.proc import call
from tools.foundation.secrets import UPLOAD_TOKEN_VARS
from tools.localbuild.batch import lock
from tools.localbuild.engines.offline.airgap import local_folder
from tools.localbuild.records import artifacts as art
from tools.review import publishable
from tools.review.attest import sidecar_of
from tools.review.cfep3 import read_sums
from tools.review.verify import verify

_OWNER = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
_ANACONDA = re.compile(rf"^(?P<owner>{_OWNER})(?:/label/(?P<label>[A-Za-z0-9_.-]+))?$")
# anaconda.org owners a publish never uploads to: conda-forge itself and its staging channel,
# which only conda-forge's CI (and the admin bot's CFEP-03 copy) write to.
CONDA_FORGE_OWNERS = ("conda-forge", "cf-staging")


class Unverified(ToolError):
    """The batch failed the review verify checks: one ``error:`` line, exit 1 (checked, and found
    problems), the findings left to ``review verify`` to list."""

    exit_code = 1


@dataclass(frozen=True)
class Destination:
    directory: Path | None = None  # a directory channel
    owner: str | None = None  # an anaconda.org channel
    label: str = "main"

    def describe(self) -> str:
        if self.directory is not None:
            return f"{self.directory} (file://{self.directory})"
        where = self.owner if self.label == "main" else f"{self.owner}/label/{self.label}"
        return f"anaconda.org/{where}"


def destination(text: str, *, cwd: Path) -> Destination:
    """DEST as ``conda install -c`` would read it, and as ``--channel`` reads a folder
    (airgap.local_folder: ``file://`` percent-decoded, Windows drive paths)."""
    folder = local_folder(text)
    if folder is not None:
        return Destination(directory=(cwd / folder).resolve())
    match = _ANACONDA.match(text)
    if match is None:
        raise UserError(
            f"review publish {text}: not a channel; give a directory (an absolute path, ./DIR, "
            "C:/DIR or file://DIR) or an anaconda.org channel (OWNER or OWNER/label/LABEL)"
        )
    if match["owner"].lower() in CONDA_FORGE_OWNERS:
        raise UserError(
            f"review publish {text}: {match['owner']} is conda-forge's own channel; under "
            "CFEP-03 a delegate uploads to a channel of their own (review publish "
            "YOU/label/cfep03) and asks the core team to copy (review request)"
        )
    return Destination(owner=match["owner"], label=match["label"] or "main")


def publish(
    root: Path,
    text: str,
    env: Mapping[str, str],
    token: str | None,
    *,
    say: Callable[[str], None],
    verify_batch: Callable[[Path], None] | None = None,
    allow_other_engine: bool = False,
) -> int:
    target = destination(text, cwd=Path.cwd())
    artifacts = root / "build_artifacts"
    if not (artifacts / "summary.json").is_file():
        raise UserError(
            f"review publish: {artifacts} holds no batch (no summary.json); build or "
            "`review merge` first"
        )
    if target.owner is not None and not token:
        raise UserError(
            "review publish to anaconda.org needs an upload token in "
            f"{' or '.join(UPLOAD_TOKEN_VARS)} (anaconda.org -> Settings -> Access, "
            "scope api:write)"
        )
    program = _anaconda(env) if target.owner is not None else None
    refused = publishable.problems(root, artifacts)  # a fork's terms first, the review's next
    if refused:
        raise Unverified(f"review publish: refused, nothing published: {'; '.join(refused)}")
    (verify_batch or (lambda folder: _verified(root, folder, allow_other_engine)))(artifacts)
    packages = [artifacts / name for _, name in read_sums(artifacts / "SHA256SUMS")]
    signed = [s for p in packages if (s := p.with_name(sidecar_of(p.name))).is_file()]
    if target.directory is not None:
        if target.directory.exists() and not target.directory.is_dir():
            raise UserError(f"review publish {target.directory}: exists and is not a directory")
        with lock.exclusive(target.directory, name=PUBLISH_LOCK, what="published to"):
            added = to_directory(packages, artifacts, target.directory)
        beside = f", {len(signed)} with its signature beside it (.sigs)" if signed else ""
        say(
            f"published {len(added)} new of {len(packages)} package(s) to {target.describe()}"
            f"{beside}; install with: -c file://{target.directory}"
        )
    else:
        upload(program or "anaconda", packages, target, token or "", env)
        # --skip-existing leaves a file already on anaconda.org as it is, whatever its bytes, and
        # anaconda-client does not say which it skipped: so no count of what was published.
        say(
            f"uploaded to {target.describe()}: {len(packages)} package(s) handed to `anaconda "
            "upload --skip-existing`; any already there were skipped-not-compared (their bytes "
            "may differ from these): compare them with SHA256SUMS before you ask for a copy"
        )
        if signed:
            say(
                f"the {len(signed)} signature sidecar(s) (.sigs) stay in "
                f"{artifacts}: anaconda.org serves packages, not files beside them; the core "
                "member verifies them from the upload (docs/cfep03.md)"
            )
    return 0


# Beside the packages of a directory channel: held while one publish writes it.
PUBLISH_LOCK = ".publish.lock"


def _verified(root: Path, artifacts: Path, allow_other_engine: bool) -> None:
    """The review verify checks, quietly: the first finding makes the one line refusing."""
    try:
        verify(root, artifacts, None, say=lambda _: None, allow_other_engine=allow_other_engine)
    except ProblemsFound as problems:
        raise Unverified(
            f"review publish: refused, build_artifacts/ is {problems}; `python -m tools "
            "review verify build_artifacts` lists every finding"
        ) from None


# ---------------------------------------------------------------- a directory channel


def _index(channel: Path) -> None:
    try:
        from rattler.index import index_fs
    except ImportError:
        raise UserError(
            "review publish to a directory indexes it with py-rattler: `pip install py-rattler` "
            "(requirements.txt)"
        ) from None
    (channel / "noarch").mkdir(exist_ok=True)  # every channel has one; the indexer wants it
    asyncio.run(index_fs(channel, force=True))


def _link_or_copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:  # another file system, or one without hard links
        shutil.copy2(source, target)


def to_directory(packages: list[Path], artifacts: Path, channel: Path) -> list[str]:
    """Add ``packages`` to the directory channel ``channel``; the names it added."""
    if channel.exists() and not channel.is_dir():
        raise UserError(f"review publish {channel}: exists and is not a directory")
    new, sidecars = [], []
    for package in packages:
        name = package.relative_to(artifacts).as_posix()
        signature = sidecar_of(name)
        for file, wanted in ((name, new), (signature, sidecars)):
            present = channel / file
            if file == signature and not (artifacts / signature).is_file():
                continue
            if not present.exists():
                wanted.append(file)
            elif art.sha256_of(present) != art.sha256_of(artifacts / file):
                what = "its signature is" if file == signature else "a package is"
                raise UserError(
                    f"review publish: {present} is already in the channel with other contents; "
                    f"{what} published once: bump the build number and rebuild"
                )
    channel.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{channel.name}.publish-", dir=channel.parent))
    try:
        for existing in art.package_files(channel):
            _link_or_copy(existing, staging / existing.relative_to(channel))
        for name in new:
            _link_or_copy(artifacts / name, staging / name)
        _index(staging)
        for name in [*new, *sidecars]:  # a package before its signature
            atomic_copy(artifacts / name, channel / name)
        index_files = [
            p
            for p in sorted(staging.rglob("*"))
            if p.is_file() and not p.name.endswith(art.PACKAGE_SUFFIXES)
        ]
        # repodata.json last in each subdir: it is what names the files before it
        index_files.sort(key=lambda p: p.name.startswith("repodata"))
        for path in index_files:
            atomic_copy(path, channel / path.relative_to(staging))
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # only the links and index made above
    return new


# ---------------------------------------------------------------- anaconda.org


def _anaconda(env: Mapping[str, str]) -> str:
    found = shutil.which("anaconda", path=env.get("PATH"))
    if found is None:
        raise UserError(
            "review publish to anaconda.org runs anaconda-client, which is not installed: "
            "`pip install anaconda-client` (or `conda install anaconda-client`)"
        )
    return found


def upload(
    program: str, packages: list[Path], target: Destination, token: str, env: Mapping[str, str]
) -> None:
    """``anaconda upload`` of every package to OWNER's LABEL; the token reaches it only as
    ANACONDA_API_TOKEN in its environment (a command line is visible to every user)."""
    child = {k: v for k, v in env.items() if k not in UPLOAD_TOKEN_VARS}
    child["ANACONDA_API_TOKEN"] = token
    argv = [program, "upload", "--user", target.owner or "", "--label", target.label]
    result = call(
        *argv,
        "--skip-existing",
        *map(str, packages),
        env=child,
        capture=True,
        check=False,
        quiet=True,
    )
    if result.returncode != 0:
        tail = (result.stderr.strip() or result.stdout.strip()).splitlines() or [""]
        detail = tail[-1].replace(token, "***") if token else tail[-1]
        raise ToolError(
            f"review publish: `anaconda upload` to {target.describe()} failed "
            f"(exit {result.returncode}): {detail[:200]}"
        )
