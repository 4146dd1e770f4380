"""Packages and ELF facts as records, for the check rules' tests (no archive, no wheel)."""

from __future__ import annotations

from pathlib import Path

from tools.check.archive import Member, Package
from tools.check.readers.elf import ElfInfo


def elf(needed=(), runpath=("$ORIGIN",), versions=(), cxx11=0, old=0, std=0) -> ElfInfo:
    return ElfInfo(
        machine="EM_X86_64",
        soname=None,
        needed=tuple(needed),
        runpath=tuple(runpath),
        rpath=(),
        version_needs=tuple(versions),
        cxx11_symbols=cxx11,
        old_abi_symbols=old,
        std_definitions=std,
        std_definition_sample=("_ZNSt10filesystem4pathC1Ev",) if std else (),
    )


def package(
    name="libtorch",
    build="cpu_generic_h1234567_2",
    files=(),
    links=(),
    elves=None,
    depends=(),
    constrains=(),
    run_exports=None,
    prefix_strings=None,
    placeholders=None,
    texts=None,
) -> Package:
    members = tuple(Member(p, "file", 1) for p in files) + tuple(
        Member(p, "symlink", 0, t) for p, t in links
    )
    return Package(
        source=Path(f"/pkgs/{name}-2.13.0-{build}.conda"),
        kind="conda",
        name=name,
        version="2.13.0",
        build=build,
        subdir="linux-64",
        depends=tuple(depends),
        constrains=tuple(constrains),
        run_exports=run_exports,
        members=members,
        elves=elves or {},
        prefix_strings=prefix_strings or {},
        placeholders=placeholders or {},
        texts=texts or {},
    )


def fails(findings, check):
    return [f for f in findings if f.check == check and f.status == "fail"]


def statuses(findings, check):
    return sorted({f.status for f in findings if f.check == check})
