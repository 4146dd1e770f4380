"""``review verify``'s signature checks (tools/review/signatures.py) on a real, public CEP 27
attestation (tests/fixtures/sigstore/: a package prefix.dev serves and the bundle rattler-build
signed for it on GitHub Actions), verified offline by sigstore-python: it verifies with its
recorded identity and issuer, and each tampering fails in one finding naming the package and
why. sigstore's caches go to a temporary folder; the unit guard fails any test that reaches
the network (tests/helpers/no_network.py)."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest
from helpers.sigstore_fixture import (
    CHANNEL,
    IDENTITY,
    ISSUER,
    PACKAGE,
    SHA256,
    SIDECAR,
    TRUSTED_ROOT,
    placed,
    sigstore_cache,
)

from tools.foundation.errors import UserError
from tools.review import attest
from tools.review.signatures import Claim, review

NAME = f"noarch/{PACKAGE}"
WHERE = f"({PACKAGE}.sigs, bundle 1 of 1)"
SIGNER = f"{IDENTITY} ({ISSUER})"
RECORDED = Claim(identity=IDENTITY, issuer=ISSUER, trusted_root=TRUSTED_ROOT, channel=CHANNEL)


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    sigstore_cache(monkeypatch, tmp_path / "xdg")


@pytest.fixture
def upload(tmp_path: Path) -> Path:
    placed(tmp_path / "upload")
    return tmp_path / "upload"


def _fails(upload: Path, claim: Claim = RECORDED, name: str = NAME) -> list[str]:
    return [finding.line() for finding in review(upload, [name], {}, claim).findings]


def _bundle(upload: Path) -> dict:
    [bundle] = json.loads((upload / f"{NAME}.sigs").read_text())
    return bundle


def _write_bundle(upload: Path, bundle: dict) -> None:
    (upload / f"{NAME}.sigs").write_text(json.dumps([bundle]))


def test_the_public_attestation_verifies_with_its_recorded_identity_and_issuer(upload) -> None:
    result = review(upload, [NAME], {}, RECORDED)
    assert result.findings == [] and result.notes == []
    assert result.verdict == f"1 of 1 packages signed by {SIGNER} (--trusted-root {TRUSTED_ROOT})"


def test_sigstores_own_root_verifies_it_offline_with_its_cache_in_the_xdg_folder(
    upload, tmp_path: Path
) -> None:
    result = review(upload, [NAME], {}, Claim(identity=IDENTITY, issuer=ISSUER))
    assert result.findings == []
    assert result.verdict == f"1 of 1 packages signed by {SIGNER}"
    cached = [p.name for p in (tmp_path / "xdg").rglob("*") if p.is_file()]
    assert "trusted_root.json" in cached, cached


def test_without_a_claim_the_signer_is_named_and_the_reviewer_told_to_claim_one(upload) -> None:
    result = review(upload, [NAME], {}, Claim(trusted_root=TRUSTED_ROOT))
    assert result.findings == []
    assert result.notes == [
        f"NOTE signed by {SIGNER}, held to no claim: pass --identity (and --issuer) with the "
        "PR's, the delegate's e-mail or the workflow's URL"
    ]


def _flip_a_byte(upload: Path) -> None:
    package = upload / NAME
    data = bytearray(package.read_bytes())
    data[len(data) // 2] ^= 0x01
    package.write_bytes(bytes(data))


def test_one_flipped_byte_of_the_package_fails_at_the_subject(upload) -> None:
    _flip_a_byte(upload)
    [line] = _fails(upload)
    assert line.startswith(f"FAIL {NAME}: subject: the statement's sha256 is {SHA256[:12]}…")
    assert line.endswith(WHERE)


def test_the_package_renamed_fails_at_the_subject(upload) -> None:
    renamed = "noarch/agent-skill-conda-forge-0.0.22-h4616a5c_0.conda"
    os.replace(upload / NAME, upload / renamed)
    os.replace(upload / f"{NAME}.sigs", upload / f"{renamed}.sigs")
    assert _fails(upload, name=renamed) == [
        f"FAIL {renamed}: subject: the statement is for '{PACKAGE}', not "
        f"agent-skill-conda-forge-0.0.22-h4616a5c_0.conda ({Path(renamed).name}.sigs, bundle "
        "1 of 1)"
    ]


def test_a_bundle_for_another_package_fails_at_the_subject(upload) -> None:
    other = "noarch/libfoo-1.0-h0123456_0.conda"
    (upload / other).write_bytes(b"another package's bytes")
    (upload / f"{other}.sigs").write_bytes(SIDECAR.read_bytes())
    [line] = _fails(upload, name=other)
    assert line.startswith(f"FAIL {other}: subject: the statement is for '{PACKAGE}', not ")


def test_another_identity_fails_naming_who_signed(upload) -> None:
    claim = Claim(identity="jdoe@example.org", issuer=ISSUER, trusted_root=TRUSTED_ROOT)
    assert _fails(upload, claim) == [
        f"FAIL {NAME}: identity: signed by {SIGNER}, not jdoe@example.org from {ISSUER} {WHERE}"
    ]


def test_another_issuer_fails_naming_the_certificates(upload) -> None:
    google = "https://accounts.google.com"
    claim = Claim(identity=IDENTITY, issuer=google, trusted_root=TRUSTED_ROOT)
    assert _fails(upload, claim) == [
        f"FAIL {NAME}: identity: signed by {SIGNER}, not {IDENTITY} from {google} {WHERE}"
    ]


def test_another_target_channel_fails_at_the_channel(upload) -> None:
    ours = attest.channel_url("jdoe/label/cfep03")
    claim = Claim(identity=IDENTITY, issuer=ISSUER, trusted_root=TRUSTED_ROOT, channel=ours)
    assert _fails(upload, claim) == [
        f"FAIL {NAME}: channel: signed for {CHANNEL}, not "
        f"https://conda.anaconda.org/jdoe/label/cfep03 {WHERE}"
    ]


def test_a_bundle_whose_signature_is_cut_fails_at_the_signature(upload) -> None:
    bundle = _bundle(upload)
    signature = bundle["dsseEnvelope"]["signatures"][0]
    signature["sig"] = signature["sig"][:40]
    _write_bundle(upload, bundle)
    assert _fails(upload) == [f"FAIL {NAME}: signature: DSSE: invalid signature {WHERE}"]


def _two_subjects(payload: bytes) -> bytes:
    statement = json.loads(payload)
    statement["subject"].append({"name": "other-1.0-0.conda", "digest": {"sha256": "0" * 64}})
    return json.dumps(statement).encode()


def test_a_statement_with_two_subjects_fails_at_the_statement_check() -> None:
    payload = _two_subjects(attest.statement(PACKAGE, SHA256, CHANNEL))
    problem, channel = attest.statement_problem(
        attest.PAYLOAD_TYPE, payload, PACKAGE, SHA256, CHANNEL
    )
    assert problem == "subject: the statement names 2 subjects; CEP 27 names exactly one"
    assert channel == CHANNEL


def test_the_same_change_inside_a_signed_bundle_fails_at_the_signature_first(upload) -> None:
    # Why the two-subject statement above is built in memory: the envelope's signature
    # covers the statement, so a bundle carrying a changed one never reaches its check.
    bundle = _bundle(upload)
    envelope = bundle["dsseEnvelope"]
    changed = _two_subjects(base64.b64decode(envelope["payload"]))
    envelope["payload"] = base64.b64encode(changed).decode()
    _write_bundle(upload, bundle)
    assert _fails(upload) == [f"FAIL {NAME}: signature: DSSE: invalid signature {WHERE}"]


@pytest.mark.parametrize(
    ("payload_type", "edit", "problem"),
    [
        ("application/json", {}, "type: the envelope's payload type is 'application/json'"),
        (attest.PAYLOAD_TYPE, {"_type": "https://in-toto.io/Statement/v0.1"}, "type: the "),
        (attest.PAYLOAD_TYPE, {"predicateType": "https://slsa.dev/provenance/v1"}, "type: "),
        (attest.PAYLOAD_TYPE, {"predicate": {"targetChannel": CHANNEL + "/"}}, "channel: "),
    ],
)
def test_a_statement_of_another_type_or_a_bad_channel_fails_its_check(
    payload_type: str, edit: dict, problem: str
) -> None:
    statement = {**json.loads(attest.statement(PACKAGE, SHA256, CHANNEL)), **edit}
    found, _ = attest.statement_problem(
        payload_type, json.dumps(statement).encode(), PACKAGE, SHA256, None
    )
    assert found is not None and found.startswith(problem), found


# ---------------------------------------------------------------- a package without one


def test_an_unsigned_package_is_a_note_or_with_require_signature_a_finding(upload) -> None:
    (upload / f"{NAME}.sigs").unlink()
    result = review(upload, [NAME], {}, Claim())
    assert result.findings == [] and result.verdict == "no package signed"
    [note] = result.notes
    assert note.startswith("NOTE unsigned: 1 of 1 packages have no <package>.sigs beside them")
    assert _fails(upload, Claim(required=True)) == [
        f"FAIL {NAME}: signature: none (--require-signature)"
    ]


def test_a_sidecar_the_records_list_but_the_upload_lacks_fails(upload) -> None:
    (upload / f"{NAME}.sigs").unlink()
    records = {"c": {"packages": [{"path": NAME, "signature": {"path": f"{NAME}.sigs"}}]}}
    [finding] = review(upload, [NAME], records, Claim()).findings
    assert finding.line() == (
        f"FAIL {NAME}: signature: summary.json lists {PACKAGE}.sigs, the upload lacks it"
    )


# ---------------------------------------------------------------- bad input: one line, exit 2


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b'[{"mediaType": ', "not valid JSON"),
        (b"[]", "an empty list, no bundle"),
        (b'{"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json"}', "holds a JSON dict"),
        (b"\xff\xfe", "not UTF-8 text"),
    ],
)
def test_a_malformed_sidecar_is_one_line_naming_the_file(upload, content, says) -> None:
    (upload / f"{NAME}.sigs").write_bytes(content)
    with pytest.raises(UserError, match=rf"^{upload / NAME}\.sigs(:1)?: .*{says}") as raised:
        review(upload, [NAME], {}, RECORDED)
    assert raised.value.exit_code == 2 and "\n" not in str(raised.value)


def test_a_bundle_of_another_media_type_is_one_line_naming_the_file_and_type(upload) -> None:
    bundle = _bundle(upload)
    bundle["mediaType"] = "application/vnd.dev.sigstore.bundle.v0.9+json"
    _write_bundle(upload, bundle)
    with pytest.raises(UserError) as raised:
        review(upload, [NAME], {}, RECORDED)
    message = str(raised.value)
    assert message.startswith(
        f"{upload / NAME}.sigs: bundle 1: media type "
        "'application/vnd.dev.sigstore.bundle.v0.9+json', not a Sigstore bundle sigstore-python "
        "reads (mediaType: Input should be "
    ), message
    assert "\n" not in message


@pytest.mark.parametrize("content", [b"not json", b'{"mediaType": "x"}'])
def test_a_trusted_root_that_does_not_parse_is_one_line_naming_it(
    upload, tmp_path: Path, content: bytes
) -> None:
    root = tmp_path / "trusted_root.json"
    root.write_bytes(content)
    with pytest.raises(UserError, match=rf"^{root}: not a Sigstore trusted root \(") as raised:
        review(upload, [NAME], {}, Claim(trusted_root=root))
    assert "\n" not in str(raised.value)
