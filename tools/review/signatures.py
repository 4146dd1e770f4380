"""``review verify``'s signature checks: each package's CEP 27 bundles (``<package>.sigs``,
attest.py) verified offline with sigstore-python.

For each bundle of a package's sidecar, in this order, each failure one ``FAIL`` naming the
package and the kind of failure:

- ``signature``: sigstore-python's ``Verifier.verify_dsse`` against a trusted root (its own
  production root, read offline from the copy it ships and caches, or ``--trusted-root``):
  the certificate chain to Fulcio at the time the transparency log recorded, its SCT, the
  Rekor entry and its inclusion proof, the envelope's signature;
- ``identity``: the certificate's identity (its SAN: an e-mail address, or a CI workflow's
  URL) and OIDC issuer against ``--identity`` / ``--issuer``, through sigstore's own policy;
- ``type``, ``subject``, ``channel``: the statement (attest.statement_problem), which
  ``verify_dsse`` hands back unread.

A package without a sidecar is a ``NOTE`` (signing is new), or a ``FAIL`` with
``--require-signature``; one whose record in summary.json lists a sidecar (``review sign``
writes it there) that the upload lacks, or another one, is a ``FAIL``. A sidecar that cannot be
read (not JSON, not a list, an empty list, a bundle sigstore-python cannot load, one of
another media type) and a trusted root that does not parse are bad input: one line, exit 2.
Nothing here reaches the network.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tools.foundation.errors import ToolError, UserError
from tools.foundation.files import load_json_text, sha256_of
from tools.localbuild.batch.record import package_entries
from tools.review import attest
from tools.review.crosscheck import Finding

# The OIDC issuer in a Fulcio certificate: v2 (a DER UTF8String), else the deprecated v1
# (the raw bytes), which sigstore's own issuer policy reads.
_ISSUER_V2 = "1.3.6.1.4.1.57264.1.8"
_ISSUER_V1 = "1.3.6.1.4.1.57264.1.1"


@dataclass(frozen=True)
class Claim:
    """What ``review verify`` holds each signature to (its options)."""

    identity: str | None = None  # the certificate's SAN: the delegate's e-mail, a workflow URL
    issuer: str | None = None  # the OIDC issuer that vouched for it
    trusted_root: Path | None = None  # None: sigstore-python's production root, offline
    channel: str | None = None  # the target channel's URL the statement must name
    required: bool = False  # --require-signature

    def wanted(self) -> str:
        who = self.identity or "an identity"
        return f"{who} from {self.issuer}" if self.issuer else who


@dataclass(frozen=True)
class Signer:
    identity: str
    issuer: str

    def __str__(self) -> str:
        return f"{self.identity} ({self.issuer})"


@dataclass(frozen=True)
class Checked:
    """One package's sidecar, checked: its signers, or why it fails."""

    package: str
    signers: tuple[Signer, ...] = ()
    channels: tuple[str, ...] = ()
    problem: str | None = None


@dataclass
class Review:
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    verdict: str = ""


def quiet() -> None:
    """sigstore-python logs through `logging` (the offline TUF cache, its no-op policy) and
    Python prints a warning with no handler set up; what matters here it raises."""
    logger = logging.getLogger("sigstore")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    logger.propagate = False


def condensed(exc: BaseException) -> str:
    """One line from an exception of sigstore-python or of the pydantic models under it."""
    lines = [line for line in str(exc).splitlines() if line.strip()]
    if len(lines) >= 2 and "validation error" in lines[0]:
        if lines[1].startswith(" "):  # a message with no field: the document as a whole
            return lines[1].strip().split(" [type=")[0]
        message = lines[2].strip().split(" [type=")[0] if len(lines) > 2 else "invalid"
        return f"{lines[1].strip()}: {message}"
    return lines[0][:300] if lines else type(exc).__name__


def load_verifier(trusted_root: Path | None):
    """sigstore-python's Verifier over ``trusted_root``, or over its production root as it
    ships and caches it (offline: no TUF refresh, no network)."""
    quiet()
    from sigstore.errors import Error
    from sigstore.models import TrustedRoot
    from sigstore.verify import Verifier

    if trusted_root is None:
        try:
            return Verifier.production(offline=True)
        except (Error, OSError, ValueError) as exc:
            raise ToolError(
                f"sigstore-python's production trusted root cannot be read offline "
                f"({condensed(exc)}); give one with --trusted-root FILE"
            ) from None
    try:
        return Verifier(trusted_root=TrustedRoot.from_file(str(trusted_root)))
    except OSError as exc:
        raise UserError(f"{trusted_root}: cannot read ({exc.strerror})") from None
    except (Error, ValueError) as exc:
        raise UserError(
            f"{trusted_root}: not a Sigstore trusted root ({condensed(exc)}); give Sigstore's "
            "trusted_root.json (sigstore/root-signing, targets/)"
        ) from None


def read_sidecar(path: Path) -> list:
    """The Sigstore bundles of a ``<package>.sigs`` (a JSON list of bundles); bad input is
    one line naming the file."""
    quiet()
    from sigstore.errors import Error
    from sigstore.models import Bundle

    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text (byte {exc.start}); not a .sigs file") from None
    hint = "a .sigs file is a JSON list of Sigstore bundles"
    items = load_json_text(text, str(path), hint=hint)
    if not isinstance(items, list):
        raise UserError(f"{path}: holds a JSON {type(items).__name__}; {hint}")
    if not items:
        raise UserError(f"{path}: an empty list, no bundle; sign again or remove the file")
    bundles = []
    for number, item in enumerate(items, start=1):
        media = item.get("mediaType") if isinstance(item, dict) else None
        try:
            bundles.append(Bundle.from_json(json.dumps(item)))
        except (Error, ValueError, TypeError) as exc:
            what = f"media type {media!r}, " if media is not None else ""
            raise UserError(
                f"{path}: bundle {number}: {what}not a Sigstore bundle sigstore-python reads "
                f"({condensed(exc)})"
            ) from None
    return bundles


def signer_of(certificate) -> Signer:
    """The identity (the SAN's e-mail, URI or Sigstore other name) and OIDC issuer a Fulcio
    certificate names: what the verdict reports, whether or not a claim was given."""
    from cryptography import x509
    from cryptography.hazmat import asn1

    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        found = [*names.get_values_for_type(x509.RFC822Name)]
        found += names.get_values_for_type(x509.UniformResourceIdentifier)
        found += [o.value.decode() for o in names.get_values_for_type(x509.OtherName)]
    except x509.ExtensionNotFound:
        found = []
    issuer = "unknown issuer"
    for oid, read in (
        (_ISSUER_V2, lambda raw: asn1.decode_der(str, raw)),
        (_ISSUER_V1, lambda raw: raw.decode()),
    ):
        try:
            raw = certificate.extensions.get_extension_for_oid(x509.ObjectIdentifier(oid))
            issuer = read(raw.value.value)
            break
        except (x509.ExtensionNotFound, ValueError):
            continue
    return Signer(", ".join(found) or "no identity", issuer)


class _Watched:
    """sigstore's policy for the claim, noting whether it is what refused the certificate."""

    def __init__(self, claim: Claim) -> None:
        from sigstore.verify import policy

        if claim.identity:
            self.inner = policy.Identity(identity=claim.identity, issuer=claim.issuer)
        elif claim.issuer:
            self.inner = policy.OIDCIssuer(claim.issuer)
        else:
            # No claim to hold the certificate to: the chain, log entry and signature are
            # verified all the same, and the verdict names the identity it found.
            self.inner = policy.UnsafeNoOp()
        self.refused = False

    def verify(self, certificate) -> None:
        try:
            self.inner.verify(certificate)
        except Exception:
            self.refused = True
            raise


def check(verifier, package: Path, name: str, sidecar: Path, claim: Claim) -> Checked:
    """Every bundle of ``sidecar`` for the package ``name`` (``subdir/file``) at ``package``."""
    from sigstore.errors import Error

    bundles = read_sidecar(sidecar)
    digest = sha256_of(package)
    signers: list[Signer] = []
    channels: list[str] = []
    for number, bundle in enumerate(bundles, start=1):
        where = f" ({sidecar.name}, bundle {number} of {len(bundles)})"
        signer = signer_of(bundle.signing_certificate)
        watched = _Watched(claim)
        try:
            payload_type, payload = verifier.verify_dsse(bundle, watched)
        except Error as exc:
            if watched.refused:
                why = f"identity: signed by {signer}, not {claim.wanted()}"
            else:
                why = f"signature: {condensed(exc)}"
            return Checked(name, problem=why + where)
        problem, channel = attest.statement_problem(
            payload_type, payload, package.name, digest, claim.channel
        )
        if problem:
            return Checked(name, problem=problem + where)
        signers.append(signer)
        channels += [channel] if channel else []
    return Checked(name, tuple(dict.fromkeys(signers)), tuple(dict.fromkeys(channels)))


def recorded(records: Mapping[str, Mapping[str, object]]) -> dict[str, Mapping[str, object]]:
    """package path -> the ``signature`` entry its record holds (``review sign`` writes it)."""
    found = {}
    for record in records.values():
        for entry in package_entries(record):
            signature = entry.get("signature")
            if isinstance(signature, dict):
                found[str(entry.get("path"))] = signature
    return found


def review(
    packages_dir: Path,
    names: Sequence[str],
    records: Mapping[str, Mapping[str, object]],
    claim: Claim,
) -> Review:
    """The findings, notes and verdict words for the packages ``names`` (SHA256SUMS')."""
    listed = recorded(records)
    present = [n for n in names if (packages_dir / attest.sidecar_of(n)).is_file()]
    verifier = load_verifier(claim.trusted_root) if present or claim.trusted_root else None
    result, checked, unsigned = Review(), [], []
    for name in names:
        sidecar = packages_dir / attest.sidecar_of(name)
        entry = listed.get(name)
        if name not in present:
            if entry is not None:
                why = f"signature: summary.json lists {sidecar.name}, the upload lacks it"
                result.findings.append(Finding(name, why))
            elif claim.required:
                result.findings.append(Finding(name, "signature: none (--require-signature)"))
            unsigned.append(name)
            continue
        if entry is not None and entry.get("sha256") != sha256_of(sidecar):
            why = f"signature: {sidecar.name} is not the one its record in summary.json lists"
            result.findings.append(Finding(name, why))
        if (packages_dir / name).is_file():
            outcome = check(verifier, packages_dir / name, name, sidecar, claim)
            checked.append(outcome)
            if outcome.problem:
                result.findings.append(Finding(name, outcome.problem))
    _summarize(result, names, checked, unsigned, claim)
    return result


def _summarize(
    result: Review, names: Sequence[str], checked: Iterable[Checked], unsigned: list, claim: Claim
) -> None:
    good = [c for c in checked if c.problem is None]
    signers = ", ".join(dict.fromkeys(str(s) for c in good for s in c.signers))
    root = f" (--trusted-root {claim.trusted_root})" if claim.trusted_root else ""
    result.verdict = (
        f"{len(good)} of {len(names)} packages signed by {signers}{root}"
        if good
        else "no package signed"
    )
    if unsigned and not claim.required:
        shown = ", ".join(unsigned[:3]) + (", …" if len(unsigned) > 3 else "")
        result.notes.append(
            f"NOTE unsigned: {len(unsigned)} of {len(names)} packages have no "
            f"<package>{attest.SIDECAR_SUFFIX} beside them ({shown}); signing is new "
            "(docs/cfep03.md, `review sign`): --require-signature makes each a finding"
        )
    if good and not claim.identity:
        result.notes.append(
            f"NOTE signed by {signers}, held to no claim: pass --identity (and --issuer) with "
            "the PR's, the delegate's e-mail or the workflow's URL"
        )


def signed_by(folders: Sequence[Path], names: Sequence[str]) -> dict[str, str]:
    """package -> who signed it, as ``review report`` shows it: each sidecar of the packages
    ``names`` found in ``folders`` verified against sigstore-python's production root, held
    to no claim (``review verify --identity`` holds it to one); {} when none is signed."""
    found = {
        name: folder
        for name in names
        for folder in reversed(folders)
        if (folder / attest.sidecar_of(name)).is_file() and (folder / name).is_file()
    }
    if not found:
        return {}
    verifier = load_verifier(None)
    cells = {}
    for name in names:
        folder = found.get(name)
        if folder is None:
            cells[name] = "none"
            continue
        try:
            sidecar = folder / attest.sidecar_of(name)
            outcome = check(verifier, folder / name, name, sidecar, Claim())
        except UserError as exc:
            cells[name] = f"❌ {exc}"
            continue
        signers = ", ".join(map(str, outcome.signers))
        cells[name] = f"❌ {outcome.problem}" if outcome.problem else f"✅ {signers}"
    return cells
