"""The stand-in channel's plan (tests/helpers/standin_channel) is whole.

A cold tests cache builds every package of the channel in one rattler-build call, and a
build or host requirement that no package of the channel provides stops it with "Failed to
resolve dependencies": every e2e test that needs the channel then fails. A warm cache hides
this, since it builds only what its pool lacks. Found on a cold cache: this interpreter's
real numpy asked for its own Python (3.11 here), which no config of the e2e builds named.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import cache, feedstock_matrix
from helpers.e2e_feedstock import REPO, narrowed_config
from helpers.standin_channel.channel import VIRTUAL, _build_libraries, plan
from helpers.standin_channel.model import ChannelError, satisfies


def _plan(tmp_path: Path):
    cpu = feedstock_matrix.find(platform="linux-64", cuda=False, blas="generic")
    if cpu is None:
        pytest.skip(
            f".ci_support holds no {feedstock_matrix.describe('linux-64', False, 'generic')}"
        )
    [source] = sorted((REPO / ".ci_support").glob(cpu.name + ".yaml"))
    config = tmp_path / "cpu.yaml"
    config.write_text(narrowed_config(source))  # the e2e builds' Pythons
    try:
        return plan([config], _build_libraries(cache.tests_cache_root() / "standin-channel"))
    except ChannelError as error:
        pytest.skip(f"no stand-in channel on this machine: {error}")


def test_every_build_and_host_requirement_is_a_package_of_the_channel(tmp_path: Path) -> None:
    packages = _plan(tmp_path)
    provided = [(p.name, p.version, p.build) for p in packages]
    unmet = [
        (f"{p.name} {p.version} {p.build}", spec)
        for p in packages
        for section in ("build", "host")
        for spec in p.requirements.get(section, [])
        if not VIRTUAL.match(spec)
        and not any(n == spec.split()[0] and satisfies(v, b, spec) for n, v, b in provided)
    ]
    assert unmet == []
