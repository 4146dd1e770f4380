"""``python -m tools review sign [DIR] --channel CHANNEL``: a CEP 27 attestation for every
package of a batch, signed with sigstore-python where the packages were built.

For each package of the batch's SHA256SUMS, after its bytes are checked against its line, the
statement attest.statement builds (its file name, its sha256, the target channel's URL) is
signed as a DSSE envelope by sigstore-python: a short-lived certificate from Fulcio for the
signer's identity, an entry in Rekor's public log. Each bundle goes into ``<package>.sigs``
beside its package (a JSON list, as rattler-build writes it); each package's record in
summary.json lists its sidecar (path, sha256, size), and log_files.zip gets that
summary.json in place of its own, every other member kept. SHA256SUMS is left as it is: every
reader of it takes each line for a package (cfep3.read_sums).

The identity comes from the machine: an ambient OIDC credential where CI offers one (GitHub
Actions with ``id-token: write``: the workflow's URL at its ref); else, in a terminal, the
browser flow (the signer's e-mail address, which Rekor's log keeps in public for good), or with
``--oob`` the code flow for a machine without a browser. Without either, or offline, nothing
is written: one line saying no identity token can be had, exit 2. Nothing is written until
every package is signed.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tools.foundation.errors import ProblemsFound, ToolError, UserError
from tools.foundation.files import atomic_replace, atomic_write_text, sha256_of
from tools.localbuild.batch import lock
from tools.localbuild.batch.record import package_entries
from tools.localbuild.records import artifacts as art
from tools.review import attest
from tools.review.cfep3 import read_sums
from tools.review.signatures import condensed, quiet, signer_of

NO_TOKEN = "review sign: no identity token can be had"


@dataclass(frozen=True)
class Statement:
    package: str  # subdir/file, as SHA256SUMS names it
    sha256: str
    payload: bytes  # the in-toto statement, as it is signed


def batch_folder(root: Path, given: Path | None) -> Path:
    """The batch ``review sign`` writes into: DIR (or the build_artifacts/ it holds), with its
    summary.json and SHA256SUMS beside the packages, as a build or ``review merge`` left it."""
    folder = given if given is not None else root / "build_artifacts"
    if (folder / "build_artifacts").is_dir():
        folder = folder / "build_artifacts"
    for name in ("summary.json", "SHA256SUMS"):
        if not (folder / name).is_file():
            raise UserError(
                f"review sign {folder}: no {name} there; sign the build_artifacts/ folder a "
                "build or `review merge` left (the signatures go beside its packages)"
            )
    return folder


def statements(folder: Path, channel: str, say: Callable[[str], None]) -> list[Statement]:
    """Each package's statement, once its bytes are SHA256SUMS' and it is not signed yet."""
    found, wrong = [], []
    for digest, name in read_sums(folder / "SHA256SUMS"):
        path = folder / name
        if not path.is_file():
            wrong.append(f"FAIL {name}: listed in SHA256SUMS but missing")
        elif sha256_of(path) != digest:
            wrong.append(f"FAIL {name}: its sha256 is not its SHA256SUMS line's")
        elif (folder / attest.sidecar_of(name)).exists():
            raise UserError(
                f"{folder / attest.sidecar_of(name)}: exists; the package is signed already "
                "(move the file away to sign it again)"
            )
        else:
            found.append(Statement(name, digest, attest.statement(path.name, digest, channel)))
    for line in wrong:
        say(line)
    if wrong:
        raise ProblemsFound(
            f"review sign: nothing signed: {len(wrong)} package(s) of {folder} are not what "
            "SHA256SUMS lists; sign only what the review checks (build or merge again)"
        )
    return found


def ambient() -> str | None:
    """The CI's OIDC token for Sigstore, through sigstore-python (GitHub Actions, GitLab,
    Buildkite, CircleCI, Google Cloud), or None outside CI."""
    from sigstore.oidc import IdentityError, detect_credential

    try:
        return detect_credential()
    except IdentityError as exc:
        raise UserError(
            f"{NO_TOKEN}: the CI's credential was refused ({condensed(exc)}); on GitHub "
            "Actions the job needs `permissions: id-token: write`, which a pull request from a "
            "fork never gets"
        ) from None


def identity_token(credential: Callable[[], str | None], *, interactive: bool, oob: bool, note):
    """An identity token: the ambient one, else the browser (or, with ``oob``, code) flow
    at Sigstore's OIDC issuer when a person is at a terminal."""
    quiet()
    from sigstore.errors import Error, NetworkError
    from sigstore.models import ClientTrustConfig
    from sigstore.oidc import IdentityToken, Issuer

    raw, url = credential(), "Sigstore's OIDC issuer"
    try:
        if raw:
            return IdentityToken(raw)
        if not interactive:
            raise UserError(
                f"{NO_TOKEN}: no CI credential (GitHub Actions with `id-token: write`) and no "
                "terminal for the browser or code flow (run it in a terminal; --oob where "
                "there is no browser)"
            )
        # The issuer's URL as sigstore-python ships it; the sign-in itself is online.
        url = ClientTrustConfig.production(offline=True).signing_config.get_oidc_url()
        issuer = Issuer(url)
        note(
            f"signing in at {url}: the certificate, and Rekor's public log for good, will "
            "name the e-mail address you sign in with"
        )
        return issuer.identity_token(force_oob=oob)
    except NetworkError:
        raise UserError(f"{NO_TOKEN}: {url} cannot be reached (offline?)") from None
    except Error as exc:
        raise UserError(f"{NO_TOKEN}: {condensed(exc) or type(exc).__name__}") from None


def sign_all(found: list[Statement], token) -> list:
    """Each statement signed as a DSSE envelope: the Sigstore bundles, in order."""
    from sigstore.dsse import Statement as InToto
    from sigstore.errors import Error
    from sigstore.models import ClientTrustConfig
    from sigstore.sign import SigningContext

    try:
        context = SigningContext.from_trust_config(ClientTrustConfig.production())
        with context.signer(token) as signer:
            return [signer.sign_dsse(InToto(s.payload)) for s in found]
    except Error as exc:
        raise ToolError(f"review sign: signing failed, nothing written: {condensed(exc)}") from None


def record_sidecars(folder: Path, signed: list[str]) -> None:
    """Each signed package's record lists its sidecar; summary.json and log_files.zip are
    written again (SHA256SUMS is not: it lists packages alone)."""
    document = art.load_summary(
        folder / "summary.json", named=str(folder / "summary.json"), hint="build or merge again"
    )
    for record in document["configs"].values():
        for entry in package_entries(record) if isinstance(record, dict) else []:
            name = str(entry.get("path"))
            if name in signed:
                sidecar = folder / attest.sidecar_of(name)
                entry["signature"] = art.Package(  # type: ignore[index]
                    attest.sidecar_of(name), sha256_of(sidecar), sidecar.stat().st_size
                ).to_json()
    art.write_summary(folder, document)
    _rezip(folder)


def _rezip(folder: Path) -> None:
    """log_files.zip with the new summary.json and every other member as it was (a GPU test's
    log the folder lacks included); written whole where there is none."""
    archive = folder / "log_files.zip"
    if not archive.is_file():
        art.write_log_zip(folder)
        return
    with (
        zipfile.ZipFile(archive) as old,
        atomic_replace(archive) as tmp,
        zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as new,
    ):
        for info in old.infolist():
            if info.filename != "summary.json":
                new.writestr(info, old.read(info))
        new.write(folder / "summary.json", arcname="summary.json")


def sign(
    root: Path,
    given: Path | None,
    channel_text: str,
    *,
    say: Callable[[str], None],
    note: Callable[[str], None],
    credential: Callable[[], str | None] = ambient,
    interactive: bool = False,
    oob: bool = False,
    dry_run: bool = False,
) -> int:
    channel = attest.channel_url(channel_text)
    folder = batch_folder(root, given)
    found = statements(folder, channel, say)
    if dry_run:
        for statement in found:
            say(statement.payload.decode())
        note(f"{len(found)} statement(s) for {channel}; nothing signed (--dry-run)")
        return 0
    token = identity_token(credential, interactive=interactive, oob=oob, note=note)
    bundles = sign_all(found, token)
    with lock.exclusive(folder):  # a batch building there would rewrite summary.json
        for statement, bundle in zip(found, bundles):
            sidecar = folder / attest.sidecar_of(statement.package)
            atomic_write_text(sidecar, f"[{bundle.to_json()}]\n")  # a list, as rattler-build's
        record_sidecars(folder, [s.package for s in found])
    # The signer as the certificate names it, which `review verify --identity/--issuer` reads
    # (the token's own subject and issuer differ: a GitHub job's `sub`, Sigstore's sign-in).
    who = signer_of(bundles[0].signing_certificate) if bundles else "nobody (no package)"
    note(
        f"signed {len(found)} package(s) for {channel} as {who}: <package>.sigs beside each, "
        "listed in summary.json and log_files.zip; name that identity and issuer in the PR"
    )
    return 0
