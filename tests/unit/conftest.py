"""The unit tests' guards: a unit test starts no process, and reaches no network.

Every test under tests/unit/ runs with the ways Python starts a process replaced by one that
fails the test, naming the call and where such a test belongs. A test that needs a program
(git, bash, cmake, pip, the toolkit's CLI in a subprocess, a build engine) is an end-to-end
test: it lives in tests/e2e/. The guard raises pytest's own failure (not an OSError), so code
under test that catches its errors cannot hide the attempt.

The network guard (tests/helpers/no_network.py) fails a test that looks up or connects to any
host but this machine, in the same way.

The guards wrap each test's setup, call and teardown (hooks of this folder's conftest apply
to its tests only), not just the test function as an autouse fixture would: the module and
session fixtures a test needs are set up inside its setup, before any function fixture, and a
process they start is the test's too. One exception: the tests cache fetching an entry once
per machine (``pip download`` of a real wheel, tests/helpers/cache.py ``filling``). A unit
test may read the real wheel; on a cold machine the first test to ask fetches it, and which
test that is depends on the order the workers reach them, not on the test.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from helpers.cache import filling
from helpers.no_network import no_network

#: What the guard replaces: subprocess.Popen (which subprocess.run/call/check_output and
#: os.popen go through), and the os functions that start or replace a process directly.
OS_CALLS = (
    "system",
    "fork",
    "forkpty",
    "posix_spawn",
    "posix_spawnp",
    *(name for name in dir(os) if name.startswith(("execv", "execl", "spawnv", "spawnl"))),
)


def _refuse(what: str, original):
    def refused(*args, **kwargs):
        if filling():
            return original(*args, **kwargs)
        shown = repr(args[0])[:200] if args else ""
        pytest.fail(
            f"a unit test started a process: {what}({shown}); tests/unit/ runs no program "
            "(tests/unit/conftest.py): move the test to tests/e2e/ or keep the process out of it"
        )

    return refused


@contextmanager
def no_processes() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess, "Popen", _refuse("subprocess.Popen", subprocess.Popen))
        for name in OS_CALLS:
            if hasattr(os, name):
                patch.setattr(os, name, _refuse(f"os.{name}", getattr(os, name)))
        with no_network():
            yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    with no_processes():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    with no_processes():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    with no_processes():
        return (yield)
