"""The small ELF shared object the check tests pack is found wherever the suite runs: in a
virtual environment too (the README's install), where ``sys.prefix`` has no lib-dynload."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

from helpers.elf_module import ELF_MAGIC, compiled_module

TESTS = Path(__file__).resolve().parents[2] / "tests"


def test_in_a_virtual_environment_the_base_interpreters_extension_module_is_used(tmp_path):
    venv.create(tmp_path / "venv", with_pip=False)
    found = subprocess.run(
        [
            str(tmp_path / "venv" / "bin" / "python"),
            "-c",
            f"import sys; sys.path.insert(0, {str(TESTS)!r}); "
            "from helpers.elf_module import small_elf; print(small_elf())",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    module = Path(found)
    assert module.parent.name == "lib-dynload"
    assert module.is_relative_to(sys.base_exec_prefix)
    assert module.read_bytes()[:4] == ELF_MAGIC


def test_without_extension_modules_one_is_compiled():
    module = compiled_module()
    assert module.suffix == ".so"
    assert module.read_bytes()[:4] == ELF_MAGIC
