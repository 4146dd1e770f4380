"""The unit tests' guards (tests/unit/conftest.py): a unit test that starts a process fails,
naming the call, whichever way it starts it; one that reaches for another host fails alike."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def test_subprocess_run_fails_the_test_naming_the_program():
    with pytest.raises(pytest.fail.Exception, match=r"subprocess\.Popen\(\['git', 'status'\]\)"):
        subprocess.run(["git", "status"], check=False)


def test_os_system_fails_the_test():
    with pytest.raises(pytest.fail.Exception, match=r"os\.system\('true'\).*tests/e2e/"):
        os.system("true")


def test_os_exec_fails_the_test_before_it_replaces_the_process():
    with pytest.raises(pytest.fail.Exception, match=r"os\.execv"):
        os.execv(sys.executable, [sys.executable, "-c", "pass"])


def _version_or_none() -> str | None:
    """What code under test often does: a program that cannot run is "unknown"."""
    try:
        return subprocess.check_output(["git", "--version"], text=True)
    except Exception:
        return None


def test_code_that_catches_exceptions_does_not_hide_the_attempt():
    # The guard raises pytest's own outcome, no Exception (nor OSError) for code to catch.
    with pytest.raises(pytest.fail.Exception):
        _version_or_none()


def test_a_name_lookup_of_another_host_fails_the_test():
    import socket

    with pytest.raises(pytest.fail.Exception, match=r"getaddrinfo\('oauth2\.sigstore\.dev'\)"):
        socket.getaddrinfo("oauth2.sigstore.dev", 443)


def test_a_connection_to_another_host_fails_the_test_even_by_address():
    import socket

    with socket.socket() as sock, pytest.raises(pytest.fail.Exception, match=r"connect"):
        sock.connect(("192.0.2.1", 443))  # TEST-NET-1: never a real host


def test_this_machine_stays_reachable():
    import socket

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname(), timeout=5):
            pass


def test_the_tests_cache_fetching_an_entry_may_run_its_program(tmp_path, monkeypatch):
    # A cold machine: the first test to ask for a real wheel fetches it with pip, unit or not.
    from helpers import cache

    monkeypatch.setenv("PIP_NO_INDEX", "1")  # pip answers at once, from no index
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    with pytest.raises(cache.CacheError, match=r"pip download nothing-here==1 --no-deps failed"):
        cache.pip_download(
            tmp_path / "wheels", "nothing-here-*.whl", ["nothing-here==1", "--no-deps"], 60
        )


def test_outside_a_fetch_the_same_program_still_fails_the_test():
    with pytest.raises(pytest.fail.Exception, match=r"subprocess\.Popen"):
        subprocess.run([sys.executable, "-m", "pip", "--version"], check=False)
