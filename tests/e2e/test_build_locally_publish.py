"""``build-locally.py --publish DEST``: a verified batch into a channel (docs/fork.md).

The batch is built by the fake container engine (tests/fixtures/fake_docker) in a git
checkout, as tests/e2e/test_build_locally_verify.py builds one: real .conda packages, here each
holding an importable module (FAKE_BUILD_MODULE), which `tools check` and `--verify` accept.
A directory channel is served over HTTP on 127.0.0.1, and py-rattler solves and installs
from it; anaconda.org is stood in for by a fake `anaconda` program that records its call.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from helpers.fake_engine_feedstock import ARM, CPU, Feedstock, delegate_feedstock, git_in

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="drives bash scripts (POSIX)")

TOKEN = "pub-7c1e55d09a3b"
# The fake conda-build's build string for the CPU config: its name's last word and length.
CPU_BUILD = f"{CPU.rsplit('_', 1)[-1]}_{len(CPU)}"
FAKE_ANACONDA = """\
#!{python}
# anaconda-client's `anaconda upload` as seen from build-locally: records its command line and
# whether the token reached it through the environment; fails if the token is on the line.
import hashlib, json, os, sys
token = os.environ.get("ANACONDA_API_TOKEN", "")
call = {{
    "argv": sys.argv[1:],
    "token_sha256": hashlib.sha256(token.encode()).hexdigest(),
    "env_names": sorted(os.environ),
}}
with open({record!r}, "a") as out:
    out.write(json.dumps(call) + "\\n")
sys.exit(3 if any(token and token in a for a in sys.argv) else 0)
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Feedstock:
    fs = delegate_feedstock(tmp_path_factory.mktemp("lab"), name="lab")
    fs.env.update(FAKE_BUILD_MODULE="1")
    run = fs.run("--all")
    assert run.returncode == 0, run.stderr
    return fs


def _packages(fs: Feedstock) -> list[str]:
    return sorted(p.relative_to(fs.artifacts).as_posix() for p in fs.artifacts.glob("*/*.conda"))


@pytest.fixture(scope="module")
def published(built: Feedstock, tmp_path_factory) -> tuple[Feedstock, Path, object]:
    channel = tmp_path_factory.mktemp("www") / "lab-channel"
    run = built.review("publish", str(channel))
    return built, channel, run


@pytest.fixture
def served(published):
    """The published channel over HTTP on 127.0.0.1 (a thread, stopped after the test)."""
    _, channel, _ = published
    handler = partial(QuietHandler, directory=str(channel))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.timeout = 5
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join(timeout=10)
        server.server_close()


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # the requests stay off stderr
        pass


# ---------------------------------------------------------------- a directory channel


def test_publish_to_a_directory_says_what_it_added_and_how_to_install(published) -> None:
    _, channel, run = published
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        f"published 3 new of 3 package(s) to {channel} (file://{channel}); "
        f"install with: -c file://{channel}"
    ]


def test_the_directory_channel_holds_every_package_and_its_index(published) -> None:
    fs, channel, _ = published
    for name in _packages(fs):
        assert (channel / name).read_bytes() == (fs.artifacts / name).read_bytes()
    for subdir in ("linux-64", "linux-aarch64", "noarch"):
        assert (channel / subdir / "repodata.json").is_file()
    listed = json.loads((channel / "linux-64" / "repodata.json").read_text())
    assert sorted(listed["packages.conda"]) == sorted(
        Path(n).name for n in _packages(fs) if n.startswith("linux-64/")
    )
    assert not [p for p in channel.parent.iterdir() if p.name.startswith(".")]  # no staging


def test_a_package_from_the_channel_served_over_http_installs_and_imports(
    served, tmp_path: Path
) -> None:
    import rattler

    records = asyncio.run(
        rattler.solve(
            [served],
            [f"libfoo * {CPU_BUILD}"],
            platforms=["linux-64", "noarch"],
            virtual_packages=[],
        )
    )
    assert [str(r.name.normalized) for r in records] == ["libfoo"]
    assert records[0].url.startswith(served + "/linux-64/")
    prefix = tmp_path / "env"
    asyncio.run(rattler.install(records, prefix, cache_dir=tmp_path / "cache", show_progress=False))
    probe = subprocess.run(
        [sys.executable, "-c", "import libfoo; print(libfoo.BUILT_FOR)"],
        env={**os.environ, "PYTHONPATH": str(prefix / "site-packages")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == CPU


def test_publishing_again_adds_nothing_and_keeps_the_channel(published) -> None:
    fs, channel, _ = published
    before = {p: p.read_bytes() for p in channel.rglob("*.conda")}
    again = fs.review("publish", f"file://{channel}")
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("published 0 new of 3 package(s)")
    assert {p: p.read_bytes() for p in channel.rglob("*.conda")} == before


def test_a_package_already_published_with_other_bytes_is_refused(built, tmp_path: Path) -> None:
    channel = tmp_path / "channel"
    [first, *_] = _packages(built)
    (channel / first).parent.mkdir(parents=True)
    (channel / first).write_bytes(b"another build of the same name\n")
    run = built.review("publish", str(channel))
    assert run.returncode == 2
    [line] = run.stderr.splitlines()
    assert line == (
        f"error: review publish: {channel / first} is already in the channel with other contents; "
        "a package is published once: bump the build number and rebuild"
    )
    assert (channel / first).read_bytes() == b"another build of the same name\n"
    assert not (channel / "linux-64" / "repodata.json").exists()


def test_an_unverified_batch_is_refused_in_one_line_and_publishes_nothing(
    tmp_path: Path,
) -> None:
    fs = delegate_feedstock(tmp_path / "lab", name="lab")
    assert fs.run("--all", FAKE_BUILD_FAIL="*aarch64*").returncode == 1
    channel = tmp_path / "channel"
    run = fs.review("publish", str(channel))
    assert run.returncode == 1
    [line] = run.stderr.splitlines()
    # Before: "... against no commit (no single commit in the records; pass --commit with
    # the PR's head)", a review's words in a fork that has no pull request (issue 43, item 10).
    assert line.startswith(
        "error: review publish: refused, nothing published: 1 config(s) of your matrix did not "
        "build: linux-aarch64 cpu (failed: "
    )
    assert "`python -m tools review why 'linux-aarch64 cpu'` shows the error" in line
    assert "drop the config from your matrix" in line and "--commit" not in line
    assert not channel.exists()
    assert ARM in fs.summary()["configs"]


def test_a_package_no_config_of_the_batch_built_is_named_and_nothing_is_published(
    built: Feedstock, tmp_path: Path
) -> None:
    """Before: a stray package in build_artifacts/ was not named."""
    first = sorted(built.artifacts.glob("linux-64/*.conda"))[0]
    stray = first.parent / "stray-1.0-0.conda"
    stray.write_bytes(first.read_bytes())
    try:
        channel = tmp_path / "channel"
        run = built.review("publish", str(channel))
    finally:
        stray.unlink()
    assert run.returncode == 1, run.stderr
    [line] = run.stderr.splitlines()
    assert (
        "build_artifacts/ holds 1 package(s) that no config of this batch built: "
        "build_artifacts/linux-64/stray-1.0-0.conda; move it out of build_artifacts/"
    ) in line
    assert not channel.exists()


def test_configs_built_from_different_commits_are_named_with_their_commits(
    tmp_path: Path,
) -> None:
    fs = delegate_feedstock(tmp_path / "lab", name="lab")
    assert fs.run("--all").returncode == 0
    first = git_in(fs, "rev-parse", "HEAD")
    git_in(fs, "commit", "-q", "--allow-empty", "-m", "a later commit")
    assert fs.run(CPU, "--force").returncode == 0
    run = fs.review("publish", str(tmp_path / "channel"))
    assert run.returncode == 1, run.stderr
    [line] = run.stderr.splitlines()
    assert "the configs were built from different commits (" in line
    assert f" at {first[:12]}" in line and f" at {git_in(fs, 'rev-parse', 'HEAD')[:12]}" in line
    assert "--commit" not in line


# ---------------------------------------------------------------- anaconda.org


def _fake_anaconda(fs: Feedstock, tmp_path: Path) -> Path:
    record = tmp_path / "anaconda-calls.jsonl"
    program = fs.bin / "anaconda"
    program.write_text(FAKE_ANACONDA.format(python=sys.executable, record=str(record)))
    program.chmod(0o755)
    return record


def test_publish_to_anaconda_org_hands_the_token_only_through_the_environment(
    built, tmp_path: Path
) -> None:
    record = _fake_anaconda(built, tmp_path)
    try:
        run = built.review("publish", "jlab/label/h100", ANACONDA_API_TOKEN=TOKEN)
    finally:
        (built.bin / "anaconda").unlink()
    assert run.returncode == 0, run.stderr
    assert TOKEN not in run.stdout + run.stderr
    [said] = run.stdout.splitlines()
    # --skip-existing skips a file already there whatever its bytes, and does not say which:
    # the line never claims a count of packages published.
    assert said.startswith("uploaded to anaconda.org/jlab/label/h100: 3 package(s) handed to ")
    assert "skipped-not-compared" in said and "published" not in said
    [call] = [json.loads(line) for line in record.read_text().splitlines()]
    packages = [str(built.artifacts / name) for name in _packages(built)]
    assert call["argv"] == [
        "upload",
        "--user",
        "jlab",
        "--label",
        "h100",
        "--skip-existing",
        *sorted(packages),
    ]
    assert call["token_sha256"] == hashlib.sha256(TOKEN.encode()).hexdigest()
    assert "BINSTAR_TOKEN" not in call["env_names"]


def test_a_failing_upload_is_one_line_without_the_token(built, tmp_path: Path) -> None:
    record = _fake_anaconda(built, tmp_path)
    program = built.bin / "anaconda"
    program.write_text(
        f"#!{sys.executable}\nimport os, sys\n"
        "print('401 unauthorized for token', os.environ['ANACONDA_API_TOKEN'], file=sys.stderr)\n"
        "sys.exit(1)\n"
    )
    try:
        run = built.review("publish", "jlab", ANACONDA_API_TOKEN=TOKEN)
    finally:
        program.unlink()
    assert run.returncode == 2
    [line] = run.stderr.splitlines()
    assert line == (
        "error: review publish: `anaconda upload` to anaconda.org/jlab failed (exit 1): "
        "401 unauthorized for token ***"
    )
    assert not record.exists()


def test_publish_to_anaconda_org_without_a_token_says_where_to_put_one(built) -> None:
    run = built.review("publish", "jlab/label/h100")
    assert run.returncode == 2
    assert run.stderr == (
        "error: review publish to anaconda.org needs an upload token in ANACONDA_API_TOKEN "
        "(anaconda.org -> Settings -> Access, scope api:write)\n"
    )


def test_publish_never_takes_conda_forges_binstar_token(built, tmp_path: Path) -> None:
    # BINSTAR_TOKEN is the secret conda-forge's CI uploads to conda-forge with; the docs name
    # ANACONDA_API_TOKEN alone. Before: taken as the token, and the upload ran.
    record = _fake_anaconda(built, tmp_path)
    try:
        run = built.review("publish", "jlab/label/h100", BINSTAR_TOKEN=TOKEN)
    finally:
        (built.bin / "anaconda").unlink()
    assert run.returncode == 2
    assert "needs an upload token in ANACONDA_API_TOKEN " in run.stderr
    assert not record.exists()


@pytest.mark.parametrize("dest", ["conda-forge", "conda-forge/label/main", "cf-staging",
                                  "Conda-Forge/label/pytorch_rc"])  # fmt: skip
def test_publish_refuses_conda_forges_own_channels(built, tmp_path: Path, dest: str) -> None:
    # Before: accepted, and `anaconda upload --user conda-forge` ran with the token.
    record = _fake_anaconda(built, tmp_path)
    try:
        run = built.review("publish", dest, ANACONDA_API_TOKEN=TOKEN)
    finally:
        (built.bin / "anaconda").unlink()
    assert run.returncode == 2
    [line] = run.stderr.splitlines()
    assert line.startswith(f"error: review publish {dest}: ") and "review request" in line
    assert not record.exists()


def test_publish_to_anaconda_org_without_anaconda_client_says_how_to_install_it(built) -> None:
    path = os.pathsep.join(
        p for p in built.env["PATH"].split(os.pathsep) if not (Path(p) / "anaconda").exists()
    )
    run = built.review("publish", "jlab", ANACONDA_API_TOKEN=TOKEN, PATH=path)
    assert run.returncode == 2
    assert run.stderr == (
        "error: review publish to anaconda.org runs anaconda-client, which is not installed: "
        "`pip install anaconda-client` (or `conda install anaconda-client`)\n"
    )


def test_a_destination_that_is_neither_a_path_nor_a_channel_is_one_line(built) -> None:
    run = built.review("publish", "lab channel")
    assert run.returncode == 2
    assert run.stderr.startswith("error: review publish lab channel: not a channel; give a")


def test_publish_goes_with_nothing_that_builds(built) -> None:
    run = built.review("publish", "./channel", "--dry-run")
    assert run.returncode == 2
    assert run.stderr.startswith("error: unrecognized arguments: --dry-run")


# ---------------------------------------------------------------- a directory, read and held


def test_a_second_publisher_to_the_same_directory_is_refused(built, tmp_path: Path) -> None:
    from tools.localbuild.batch import lock
    from tools.review.publish import PUBLISH_LOCK

    channel = tmp_path / "channel"
    # Before: nothing held; two publishers interleaved their renames and index files.
    with lock.exclusive(channel, name=PUBLISH_LOCK, what="published to"):
        run = built.review("publish", str(channel))
    assert run.returncode == 2
    [line] = run.stderr.splitlines()
    assert line.startswith(f"error: {channel} is being published to by another build-locally run")
    assert not list(channel.rglob("*.conda"))
    assert built.review("publish", str(channel)).returncode == 0  # once the first one is done


def test_a_file_url_is_percent_decoded_as_channel_reads_it(built, tmp_path: Path) -> None:
    channel = tmp_path / "lab channel"
    # Before: published into a folder literally named "lab%20channel".
    run = built.review("publish", (channel).as_uri())
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in channel.rglob("*.conda")) == sorted(
        Path(n).name for n in _packages(built)
    )
    assert not (tmp_path / "lab%20channel").exists()
