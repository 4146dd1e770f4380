"""The fuzz campaign's inputs (fuzz.py): the seeded mutators of bytes and text, and the real
inputs they damage (packages packed here, a copy of the feedstock's files, a CMakeCache.txt)."""

from __future__ import annotations

import json
import os
import random
import shutil
import zipfile
from pathlib import Path

from helpers.elf_module import small_elf

REPO = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ mutators


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    how = rng.choice(("truncate", "flip", "zero", "duplicate", "insert"))
    start = rng.randrange(len(out)) if out else 0
    if how == "truncate":
        del out[start:]
    elif how == "flip":
        for _ in range(rng.randint(1, 8)):
            if out:
                out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    elif how == "zero":
        size = rng.randint(1, 4096)
        out[start : start + size] = bytes(len(out[start : start + size]))
    elif how == "duplicate":
        size = rng.randint(1, 2048)
        out[start:start] = out[start : start + size]
    else:
        out[start:start] = rng.randbytes(rng.randint(1, 64))
    return bytes(out)


# Injected as whole lines or at the end of a line: jinja, selector and YAML errors.
_INJECTIONS = (
    "{{ undefined_fuzz_variable }}",
    "{{ unclosed",
    "{% if %}",
    "{% endif %}",
    "{{ 1 / 0 }}",
    "{{ compiler() }}",
    "{{ pin_subpackage() }}",
    "{% for x in 3 %}{{ x }}{% endfor %}",
    "  # [linux and]",
    "  # [foo(]",
    "  # [__import__('os').getcwd()]",
    "  # [undefined_selector_name]",
    ": :",
    "- [unclosed",
    "key: 'unclosed",
    "\t",
    "&anchor *alias",
    "<<<<<<< HEAD",
    "=======",
    ">>>>>>> other",
    "\x00",
)


def mutate_text(text: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True) or ["\n"]
    index = rng.randrange(len(lines))
    how = rng.choice(("delete", "duplicate", "indent", "dedent", "inject", "append", "swap"))
    if how == "delete":
        del lines[index]
    elif how == "duplicate":
        lines.insert(index, lines[index])
    elif how == "indent":
        lines[index] = " " * rng.randint(1, 5) + lines[index]
    elif how == "dedent":
        lines[index] = lines[index].lstrip(" ")
    elif how == "inject":
        lines.insert(index, rng.choice(_INJECTIONS) + "\n")
    elif how == "append":
        lines[index] = lines[index].rstrip("\n") + rng.choice(_INJECTIONS) + "\n"
    else:
        other = rng.randrange(len(lines))
        lines[index], lines[other] = lines[other], lines[index]
    return "".join(lines)


# ------------------------------------------------------------------ real inputs


def build_packages(out: Path) -> dict[str, Path]:
    """A tiny libtorch-like package, packed as .conda and .tar.bz2, and a torch wheel."""
    from conda_package_handling import api as cph

    prefix = out / "prefix"
    (prefix / "lib").mkdir(parents=True)
    (prefix / "share" / "cmake" / "Torch").mkdir(parents=True)
    (prefix / "info").mkdir()
    shutil.copyfile(small_elf(), prefix / "lib" / "libtorch.so")
    (prefix / "lib" / "libtorch.so.2").symlink_to("libtorch.so")
    (prefix / "share" / "cmake" / "Torch" / "TorchConfig.cmake").write_text(
        'set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=1")\n'
    )
    files = ["lib/libtorch.so", "lib/libtorch.so.2", "share/cmake/Torch/TorchConfig.cmake"]
    index = {
        "name": "libtorch",
        "version": "2.13.0",
        "build": "cpu_generic_h1234567_0",
        "build_number": 0,
        "subdir": "linux-64",
        "depends": ["libgcc >=14"],
    }
    (prefix / "info" / "index.json").write_text(json.dumps(index))
    (prefix / "info" / "files").write_text("\n".join(files) + "\n")
    paths = [
        {"_path": f, "path_type": "softlink" if f.endswith(".2") else "hardlink"} for f in files
    ]
    (prefix / "info" / "paths.json").write_text(json.dumps({"paths": paths, "paths_version": 1}))
    listing = [*files, "info/index.json", "info/files", "info/paths.json"]
    # Same bytes on every run, so that a seed names the same damaged input: fixed times in
    # the tars (the files') and in the zips (rewritten below).
    for path in (prefix / name for name in listing):
        os.utime(path, (_EPOCH, _EPOCH), follow_symlinks=False)
    packed: dict[str, Path] = {}
    for suffix in (".conda", ".tar.bz2"):
        name = f"libtorch-2.13.0-cpu_generic_h1234567_0{suffix}"
        cph.create(str(prefix), listing, name, out_folder=str(out))
        packed[suffix] = out / name
    _fix_zip_times(packed[".conda"])
    wheel = out / "torch-2.13.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    metadata = (
        "Metadata-Version: 2.4\nName: torch\nVersion: 2.13.0\n"
        "Requires-Dist: sympy>=1.13.3\nRequires-Dist: filelock\n"
    )
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in (
            ("torch/lib/libtorch.so", (prefix / "lib" / "libtorch.so").read_bytes()),
            ("torch-2.13.0.dist-info/METADATA", metadata.encode()),
            ("torch-2.13.0.dist-info/RECORD", b""),
        ):
            archive.writestr(zipfile.ZipInfo(name, _ZIP_TIME), data, zipfile.ZIP_DEFLATED)
    packed[".whl"] = wheel
    return packed


_EPOCH = 1_700_000_000
_ZIP_TIME = (2023, 11, 14, 22, 13, 20)


def _fix_zip_times(path: Path) -> None:
    """Rewrite a zip with every entry dated ``_ZIP_TIME`` (contents and order unchanged)."""
    with zipfile.ZipFile(path) as source:
        entries = [(info, source.read(info)) for info in source.infolist()]
    with zipfile.ZipFile(path, "w") as target:
        for info, data in entries:
            fixed = zipfile.ZipInfo(info.filename, _ZIP_TIME)
            fixed.compress_type = info.compress_type
            fixed.external_attr = info.external_attr
            target.writestr(fixed, data)


def copy_feedstock(dest: Path) -> Path:
    """What the commands read from this repository: recipe, .ci_support, conda-forge.yml and
    build-locally.py with .scripts (the toolkit itself comes from PYTHONPATH)."""
    shutil.copytree(REPO / "recipe", dest / "recipe")
    shutil.copytree(REPO / ".ci_support", dest / ".ci_support")
    shutil.copytree(REPO / ".scripts", dest / ".scripts")
    for name in ("conda-forge.yml", "build-locally.py", "LICENSE.txt"):
        shutil.copy2(REPO / name, dest / name)
    return dest


def _cmake_cache_text() -> str:
    from helpers.cmake_caches import LINUX_312

    return LINUX_312
