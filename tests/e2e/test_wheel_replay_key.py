"""The key the wheel replay's packages are cached under (tests/e2e/test_e2e_real_torch.py): a
change to what decides them is a new key, so a rebuild; the same content is the same key."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.e2e_feedstock import REPO
from helpers.wheel_replay.support import BUILD_INPUTS, replay_key

CHANNEL = Path("standin-channel/channels/0123456789abcdef")
WHEEL = "torch-replayed-cp311-cp311-manylinux_2_28_x86_64.whl"


@pytest.fixture
def wheel(tmp_path: Path) -> Path:
    path = tmp_path / WHEEL
    path.write_bytes(b"PK stands in for the wheel's bytes")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A copy of the build inputs, as a checkout elsewhere has them."""
    root = tmp_path / "checkout"
    for name in BUILD_INPUTS:
        source, dest = REPO / name, root / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, dest)
    return root


def test_the_same_content_in_another_checkout_is_the_same_key(repo: Path, wheel: Path) -> None:
    assert replay_key(repo, CHANNEL, wheel) == replay_key(REPO, CHANNEL, wheel)


def test_a_changed_recipe_file_is_a_new_key(repo: Path, wheel: Path) -> None:
    before = replay_key(repo, CHANNEL, wheel)
    build_sh = repo / "recipe" / "build.sh"
    build_sh.write_text(build_sh.read_text() + "# one more line\n")
    assert replay_key(repo, CHANNEL, wheel) != before


def test_a_changed_replay_fixture_is_a_new_key(repo: Path, wheel: Path) -> None:
    before = replay_key(repo, CHANNEL, wheel)
    setup = repo / "tests" / "fixtures" / "wheel_replay" / "project" / "setup.py"
    setup.write_text(setup.read_text() + "\n")
    assert replay_key(repo, CHANNEL, wheel) != before


def test_another_stand_in_channel_is_a_new_key(repo: Path, wheel: Path) -> None:
    key = replay_key(repo, CHANNEL, wheel)
    assert replay_key(repo, CHANNEL.with_name("fedcba9876543210"), wheel) != key


def test_another_wheel_of_the_same_name_is_a_new_key(repo: Path, wheel: Path) -> None:
    key = replay_key(repo, CHANNEL, wheel)
    wheel.write_bytes(wheel.read_bytes() + b" rebuilt")
    assert replay_key(repo, CHANNEL, wheel) != key


def test_a_missing_build_input_is_an_error_not_a_smaller_key(repo: Path, wheel: Path) -> None:
    (repo / "build-locally.py").unlink()
    with pytest.raises(FileNotFoundError, match=r"build-locally\.py"):
        replay_key(repo, CHANNEL, wheel)


def test_the_stand_in_channels_specs_come_out_in_one_order_whatever_the_hash_seed() -> None:
    # The channel's digest is part of the key; the pypi-releases entry named by these specs
    # flipped it between two values from one run to the next, and so rebuilt the replay.
    code = (
        "from helpers.standin_channel.model import Wanted; "
        "print(Wanted('setuptools', {'setuptools >=77.0.3', 'setuptools <82', "
        "'setuptools >=77.0.3,<82', 'setuptools *'}).version_specs())"
    )
    tests = Path(__file__).resolve().parents[2] / "tests"
    orders = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": str(tests)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in range(8)
    }
    assert len(orders) == 1, orders
