"""``review sign`` (tools/review/sign.py) up to the signing call, which needs Fulcio and Rekor
(docs/testing.md says what a GitHub Actions run proves instead): the statement it builds, the
channel URL it names, its refusals, the records it writes around a bundle (Sigstore's own
for the fixture's statement stands in for the signing call); and where the sidecars go
after, ``review publish`` and ``review report``. The package is the public fixture's
(tests/fixtures/sigstore/), whose statement rattler-build signed on GitHub Actions."""

from __future__ import annotations

import base64
import hashlib
import json
import zipfile
from pathlib import Path

import jsonschema
import pytest
from helpers.sigstore_fixture import (
    CHANNEL,
    IDENTITY,
    ISSUER,
    PACKAGE,
    SCHEMA,
    SHA256,
    SIDECAR,
    placed,
    sigstore_cache,
)

from tools.foundation.errors import ProblemsFound, UserError
from tools.localbuild.records import artifacts as art
from tools.review import attest
from tools.review import sign as sign_module
from tools.review.publish import to_directory
from tools.review.report import _signature_lines
from tools.review.sign import record_sidecars, sign
from tools.review.signatures import Claim, read_sidecar, review, signed_by

NAME = f"noarch/{PACKAGE}"
SIGNED = "https://conda.anaconda.org/jdoe/label/cfep03"


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    sigstore_cache(monkeypatch, tmp_path / "xdg")


@pytest.fixture
def batch(tmp_path: Path) -> Path:
    """A batch as a build leaves it: the package, SHA256SUMS, summary.json, log_files.zip."""
    folder = tmp_path / "build_artifacts"
    placed(folder, sidecar=False)
    entry = {"path": NAME, "sha256": SHA256, "size": (folder / NAME).stat().st_size}
    document = {"version": 1, "configs": {"noarch_c": {"status": "done", "packages": [entry]}}}
    art.write_batch_files(folder, document)
    return folder


def _tree(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _sign(batch: Path, said: list[str], **options):
    return sign(batch.parent, batch, "jdoe/label/cfep03", say=said.append, note=said.append,
                **options)  # fmt: skip


# ---------------------------------------------------------------- the statement


@pytest.mark.parametrize(
    ("given", "url"),
    [
        ("jdoe/label/cfep03", "https://conda.anaconda.org/jdoe/label/cfep03"),
        ("jdoe", "https://conda.anaconda.org/jdoe"),
        ("https://prefix.dev/skill-forge", "https://prefix.dev/skill-forge"),
    ],
)
def test_a_channel_as_review_request_takes_it_is_the_url_conda_reads_it_from(given, url) -> None:
    assert attest.channel_url(given) == url


@pytest.mark.parametrize(
    ("given", "why"),
    [
        ("https://prefix.dev/skill-forge/", "without a trailing slash"),
        ("ftp://mirror.lab/conda-forge", "not an http(s) URL"),
        ("file:///srv/channel", "not an http(s) URL"),
        ("https://prefix.dev/x?token=1", "no query or fragment"),
    ],
)
def test_a_channel_that_is_no_cep27_url_is_refused_in_one_line(given, why) -> None:
    with pytest.raises(UserError) as raised:
        attest.channel_url(given)
    assert str(raised.value).startswith(f"--channel {given!r}: ") and why in str(raised.value)


def test_the_statement_is_byte_for_byte_the_one_rattler_build_signed() -> None:
    [bundle] = json.loads(SIDECAR.read_text())
    signed = base64.b64decode(bundle["dsseEnvelope"]["payload"])
    assert attest.statement(PACKAGE, SHA256, CHANNEL) == signed


def test_the_statement_is_valid_against_cep_27s_schema_and_two_subjects_are_not() -> None:
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
    statement = json.loads(attest.statement(PACKAGE, SHA256, SIGNED))
    validator.validate(statement)
    statement["subject"] *= 2
    assert not validator.is_valid(statement)


# ---------------------------------------------------------------- review sign, offline


def test_offline_sign_stops_in_one_line_having_written_nothing(batch: Path) -> None:
    before, said = _tree(batch), []
    with pytest.raises(UserError) as raised:
        _sign(batch, said, credential=lambda: None, interactive=False)
    assert str(raised.value).startswith("review sign: no identity token can be had: no CI ")
    assert raised.value.exit_code == 2 and said == []
    assert _tree(batch) == before


def test_a_credential_that_is_no_identity_token_is_refused_in_one_line(batch: Path) -> None:
    before = _tree(batch)
    with pytest.raises(UserError, match=r"^review sign: no identity token can be had: "):
        _sign(batch, [], credential=lambda: "not-a-jwt")
    assert _tree(batch) == before


def test_dry_run_prints_each_statement_it_would_sign(batch: Path) -> None:
    said: list[str] = []
    assert _sign(batch, said, dry_run=True) == 0
    assert said == [
        attest.statement(PACKAGE, SHA256, SIGNED).decode(),
        f"1 statement(s) for {SIGNED}; nothing signed (--dry-run)",
    ]


def test_a_package_that_is_not_what_sha256sums_lists_is_not_signed(batch: Path) -> None:
    (batch / NAME).write_bytes(b"another build's bytes")
    before, said = _tree(batch), []
    with pytest.raises(ProblemsFound, match="nothing signed: 1 package"):
        _sign(batch, said, credential=lambda: None)
    assert said == [f"FAIL {NAME}: its sha256 is not its SHA256SUMS line's"]
    assert _tree(batch) == before


def test_a_package_signed_already_is_refused_naming_its_sidecar(batch: Path) -> None:
    (batch / f"{NAME}.sigs").write_bytes(SIDECAR.read_bytes())
    with pytest.raises(UserError, match=rf"^{batch / NAME}\.sigs: exists; .* signed already"):
        _sign(batch, [], credential=lambda: None)


def test_a_folder_without_the_batch_files_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"review sign .*: no summary.json there"):
        sign(tmp_path, tmp_path, "jdoe", say=print, note=print)


# ---------------------------------------------------------------- what signing leaves


def test_the_records_and_log_files_zip_list_each_sidecar_and_verify_reads_them(batch) -> None:
    # The sidecar is the fixture's real bundle, placed as `review sign` places its own.
    (batch / f"{NAME}.sigs").write_bytes(SIDECAR.read_bytes())
    with zipfile.ZipFile(batch / "log_files.zip", "a") as archive:  # collect's, on Actions
        archive.writestr("linux_64_c-gpu-test-log.txt", "tested on a GPU\n")
    record_sidecars(batch, [NAME])
    records = json.loads((batch / "summary.json").read_text())["configs"]
    [entry] = records["noarch_c"]["packages"]
    assert entry["signature"] == {
        "path": f"{NAME}.sigs",
        "sha256": hashlib.sha256(SIDECAR.read_bytes()).hexdigest(),
        "size": SIDECAR.stat().st_size,
    }
    with zipfile.ZipFile(batch / "log_files.zip") as archive:
        assert archive.read("summary.json") == (batch / "summary.json").read_bytes()
        assert f"{NAME}.sigs" not in archive.read("SHA256SUMS").decode()
        assert archive.read("linux_64_c-gpu-test-log.txt") == b"tested on a GPU\n"
    assert review(batch, [NAME], records, Claim(identity=IDENTITY)).findings == []
    (batch / f"{NAME}.sigs").write_text(SIDECAR.read_text() + "\n")  # the same bundle, re-saved
    [finding] = review(batch, [NAME], records, Claim(identity=IDENTITY)).findings
    assert finding.problem == (
        f"signature: {PACKAGE}.sigs is not the one its record in summary.json lists"
    )


def test_what_sign_writes_around_the_bundle_sigstore_issued_verifies(batch, monkeypatch) -> None:
    # The signing call (an OIDC token, Fulcio, Rekor) cannot run here. In its place: the bundle
    # Sigstore issued for this very statement, rattler-build's on GitHub Actions (the statement
    # sign builds for the fixture's package and channel is the one it signed, byte for byte).
    def issued(found, token):
        assert [s.payload for s in found] == [attest.statement(PACKAGE, SHA256, CHANNEL)]
        return read_sidecar(SIDECAR)

    monkeypatch.setattr(sign_module, "identity_token", lambda *args, **kwargs: None)
    monkeypatch.setattr(sign_module, "sign_all", issued)
    said: list[str] = []
    sign(batch.parent, batch, CHANNEL, say=said.append, note=said.append)
    assert said == [
        f"signed 1 package(s) for {CHANNEL} as {IDENTITY} ({ISSUER}): <package>.sigs beside "
        "each, listed in summary.json and log_files.zip; name that identity and issuer in the PR"
    ]
    records = json.loads((batch / "summary.json").read_text())["configs"]
    claim = Claim(identity=IDENTITY, issuer=ISSUER, channel=CHANNEL)
    result = review(batch, [NAME], records, claim)
    assert result.findings == [] and result.verdict.startswith("1 of 1 packages signed by ")


def test_publish_puts_each_sidecar_beside_its_package_in_a_directory_channel(
    batch: Path, tmp_path: Path
) -> None:
    (batch / f"{NAME}.sigs").write_bytes(SIDECAR.read_bytes())
    channel = tmp_path / "channel"
    assert to_directory([batch / NAME], batch, channel) == [NAME]
    assert (channel / f"{NAME}.sigs").read_bytes() == SIDECAR.read_bytes()
    repodata = json.loads((channel / "noarch" / "repodata.json").read_text())
    assert list(repodata["packages.conda"]) == [PACKAGE]
    (batch / f"{NAME}.sigs").write_text("[]")  # another signature for a published package
    with pytest.raises(UserError, match=r"\.sigs is already in the channel with other contents"):
        to_directory([batch / NAME], batch, channel)


def test_the_report_shows_each_packages_signer(batch: Path) -> None:
    assert signed_by([batch], [NAME]) == {}
    assert _signature_lines({}, [f"{SHA256}  {NAME}"])[0].startswith(
        "**Signatures:** none of the 1 packages is signed"
    )
    (batch / f"{NAME}.sigs").write_bytes(SIDECAR.read_bytes())
    signers = signed_by([batch], [NAME])
    assert signers == {NAME: f"✅ {IDENTITY} ({ISSUER})"}
    assert f"| {NAME} | ✅ {IDENTITY} ({ISSUER}) |" in _signature_lines(signers, [NAME])
