"""A guard that fails a test which tries to reach the network.

The suite runs from a clone with no network (docs/testing.md); sigstore-python, for one,
refreshes its trusted root over TUF and signs through Fulcio and Rekor unless told not to, and
a test that quietly reached them would pass here only while they answer. With the guard on, a
name lookup or a connection to any host but this machine fails the test with pytest's own
outcome, which code under test that catches exceptions cannot swallow. tests/unit/conftest.py
puts every unit test under it; an end-to-end test that runs the toolkit in its own process
uses it as a context manager.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "", None})


def _refuse(what: str, host: object) -> None:
    pytest.fail(
        f"a test reached for the network: {what}({host!r}); tests run offline "
        "(tests/helpers/no_network.py): keep the network out of it (sigstore-python: "
        "offline=True, a --trusted-root file)"
    )


def _host(address: object) -> object:
    return address[0] if isinstance(address, tuple) and address else address


@contextmanager
def no_network() -> Iterator[None]:
    connect, connect_ex = socket.socket.connect, socket.socket.connect_ex

    def guarded_lookup(original, name):
        def call(host, *args, **kwargs):
            if host not in LOOPBACK:
                _refuse(f"socket.{name}", host)
            return original(host, *args, **kwargs)

        return call

    def guarded(original, name):
        def call(self, address):
            if self.family in (socket.AF_INET, socket.AF_INET6) and _host(address) not in LOOPBACK:
                _refuse(f"socket.{name}", _host(address))
            return original(self, address)

        return call

    with pytest.MonkeyPatch.context() as patch:
        for name in ("getaddrinfo", "gethostbyname", "gethostbyname_ex"):
            patch.setattr(socket, name, guarded_lookup(getattr(socket, name), name))
        patch.setattr(socket.socket, "connect", guarded(connect, "connect"))
        patch.setattr(socket.socket, "connect_ex", guarded(connect_ex, "connect_ex"))
        yield
