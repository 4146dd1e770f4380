"""Run the test command once per CPU setting (QEMU_CPU) and record what happened."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tools.emulate.chroot import Chroot
from tools.emulate.install import Environment
from tools.foundation.errors import CommandError

# A test command reports the CPU capability it saw by printing this marker;
# the default command does, and a custom one may.
CAPABILITY_MARKER = "emulate-capability:"
_CAPABILITY_LINE = re.compile(rf"^{re.escape(CAPABILITY_MARKER)}[ \t]*(\S.*?)\s*$", re.MULTILINE)

DEFAULT_TEST_CODE = f"""\
import numpy as np
import torch

print("{CAPABILITY_MARKER}", torch.backends.cpu.get_cpu_capability(), flush=True)
generator = torch.Generator().manual_seed(0)
a = torch.randn(96, 64, generator=generator)
b = torch.randn(64, 80, generator=generator)
got = (a @ b).numpy()
want = a.numpy().astype(np.float64) @ b.numpy().astype(np.float64)
error = float(np.abs(got - want).max())
if not np.allclose(got, want, rtol=1e-4, atol=1e-4):
    raise SystemExit(f"matmul disagrees with numpy: max abs error {{error:.3g}}")
print("matmul matches numpy: max abs error", f"{{error:.3g}}")
"""
DEFAULT_COMMAND = ("python", "-c", DEFAULT_TEST_CODE)
# What the default command needs besides the packages under test.
DEFAULT_COMMAND_NEEDS = ("numpy",)
OUTPUT_TAIL_LINES = 20


@dataclass(frozen=True)
class SettingResult:
    cpu: str
    returncode: int | None  # None: the run timed out or could not start
    capability: str | None
    seconds: float
    output: str
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.returncode == 0

    @property
    def output_tail(self) -> str:
        return "\n".join(self.output.rstrip().splitlines()[-OUTPUT_TAIL_LINES:])


def parse_capability(output: str) -> str | None:
    """The last capability the test printed, if it printed one."""
    found = _CAPABILITY_LINE.findall(output)
    return found[-1] if found else None


def run_setting(
    chroot: Chroot,
    env: Environment,
    cpu: str,
    command: Sequence[str],
    *,
    timeout: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> SettingResult:
    run_env = {
        **env.run_env(),
        "PATH": ":".join([*env.path_entries, chroot.env.get("PATH", "")]),
        "QEMU_CPU": cpu,
    }
    start = clock()
    try:
        result = chroot.run(*command, env=run_env, capture=True, check=False, timeout=timeout)
    except CommandError as exc:
        return SettingResult(
            cpu=cpu,
            returncode=None,
            capability=None,
            seconds=clock() - start,
            output="",
            error=str(exc),
        )
    seconds = clock() - start
    output = "\n".join(part.rstrip("\n") for part in (result.stdout, result.stderr) if part.strip())
    # The test's own output belongs in the log, after the "+ chroot ..." line.
    if output:
        print(output, file=sys.stderr, flush=True)
    return SettingResult(
        cpu=cpu,
        returncode=result.returncode,
        capability=parse_capability(result.stdout),
        seconds=seconds,
        output=output,
    )
