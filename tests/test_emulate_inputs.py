"""``python -m tools emulate``'s inputs, without emulating anything: its command line and
defaults per architecture, what it accepts to install, how conda packages are linked into the
chroot's prefix and what the chroot's environment passes on. No test here starts a process."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path, PurePosixPath

import pytest

from tools.__main__ import main
from tools.commands import emulate as command
from tools.emulate import chroot, conda_link, install, runner
from tools.emulate.arch import ARCHES, get_arch
from tools.foundation.errors import UserError

AARCH64 = ARCHES["aarch64"]
PPC64LE = ARCHES["ppc64le"]
TORCH_AARCH64 = "torch-2.9.1-cp311-cp311-manylinux_2_28_aarch64.whl"
TORCH_X86_64 = "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"


@pytest.fixture(autouse=True)
def no_processes(monkeypatch):
    """Every test here must work without starting a single process."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"a unit test started a process: {args[:1]}")

    monkeypatch.setattr(subprocess, "Popen", refuse)


def _args(*argv: str):
    import argparse

    parser = argparse.ArgumentParser()
    command.configure(parser)
    return parser.parse_args(argv)


def _touch(directory: Path, name: str) -> Path:
    path = directory / name
    path.write_bytes(b"not really a wheel")
    return path


# --- defaults and argument parsing ----------------------------------------


def test_aarch64_defaults_to_sve_off_and_each_sve_vector_length() -> None:
    assert AARCH64.default_cpus == (
        "max,sve=off",
        "max,sve=on,sve128=on",
        "max,sve=on,sve256=on",
        "max,sve=on,sve512=on",
    )


def test_ppc64le_defaults_to_power9_and_power10() -> None:
    assert PPC64LE.default_cpus == ("power9", "power10")


def test_debian_names_the_architectures_its_own_way() -> None:
    assert (AARCH64.debian, PPC64LE.debian) == ("arm64", "ppc64el")


def test_unknown_architecture_is_a_user_error() -> None:
    with pytest.raises(UserError, match="sparc64: not an emulated architecture"):
        get_arch("sparc64")


def test_cli_rejects_an_unknown_arch_with_usage_exit_code(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["emulate", "--arch", "s390x", "x.whl"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_packages_and_test_command_are_split_at_double_dash() -> None:
    packages, cmd = command.split_items(["a.whl", "b.conda", "--", "python", "-c", "print(1)"])
    assert packages == ("a.whl", "b.conda")
    assert cmd == ("python", "-c", "print(1)")


def test_no_test_command_means_the_default_one() -> None:
    assert command.split_items(["a.whl"])[1] is None
    assert command.split_items(["a.whl", "--"])[1] is None


def test_an_option_after_the_packages_is_refused() -> None:
    with pytest.raises(UserError, match="--json: options go before the packages"):
        command.split_items(["a.whl", "--json"])


def test_nothing_to_install_is_refused() -> None:
    with pytest.raises(UserError, match="nothing to install"):
        command.split_items(["--", "python", "-V"])


def test_cpu_settings_default_per_arch() -> None:
    options = command.options_from_args(_args("--arch", "ppc64le", "numpy"), env={"HOME": "/h"})
    assert options.cpus == ("power9", "power10")


def test_cpu_settings_given_replace_the_defaults_in_order() -> None:
    options = command.options_from_args(
        _args(
            "--arch", "aarch64", "--cpu", "max,sve=on,sve256=on", "--cpu", "max,sve=off", "x.whl"
        ),
        env={"HOME": "/h"},
    )
    assert options.cpus == ("max,sve=on,sve256=on", "max,sve=off")


def test_cpu_setting_with_spaces_is_refused() -> None:
    with pytest.raises(UserError, match="--cpu 'max, sve=off'"):
        command.options_from_args(
            _args("--arch", "aarch64", "--cpu", "max, sve=off", "x.whl"), env={"HOME": "/h"}
        )


def test_rootfs_is_cached_under_xdg_cache_home_by_default() -> None:
    options = command.options_from_args(
        _args("--arch", "aarch64", "x.whl"), env={"XDG_CACHE_HOME": "/c", "HOME": "/h"}
    )
    assert options.rootfs == Path("/c/pytorch-feedstock/emulate/rootfs-arm64-bookworm")


def test_rootfs_path_with_spaces_is_refused() -> None:
    with pytest.raises(UserError, match="debootstrap cannot build in a path with spaces"):
        command.options_from_args(
            _args("--arch", "aarch64", "--rootfs", "/tmp/my rootfs", "x.whl"), env={"HOME": "/h"}
        )


def test_default_command_needs_numpy_but_a_custom_one_does_not() -> None:
    default = command.options_from_args(_args("--arch", "aarch64", "x.whl"), env={"HOME": "/h"})
    custom = command.options_from_args(
        _args("--arch", "aarch64", "x.whl", "--", "true"), env={"HOME": "/h"}
    )
    assert default.test_command == runner.DEFAULT_COMMAND
    assert default.extra_requirements == ("numpy",)
    assert (custom.test_command, custom.extra_requirements) == (("true",), ())


def test_missing_wheel_is_a_one_line_error_before_anything_runs(capsys, tmp_path) -> None:
    code = main(
        [
            "emulate",
            "--arch",
            "aarch64",
            "--rootfs",
            str(tmp_path / "r"),
            str(tmp_path / TORCH_AARCH64),
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err == [f"error: {tmp_path / TORCH_AARCH64}: no such file"]
    assert not (tmp_path / "r").exists()


# --- what to install ------------------------------------------------------


def test_wheel_for_the_emulated_arch_is_accepted(tmp_path) -> None:
    wheel = _touch(tmp_path, TORCH_AARCH64)
    assert install.classify(str(wheel), AARCH64) == install.Wheel(wheel)


def test_pure_python_wheel_is_accepted_everywhere(tmp_path) -> None:
    wheel = _touch(tmp_path, "filelock-3.20.0-py3-none-any.whl")
    assert install.classify(str(wheel), PPC64LE) == install.Wheel(wheel)


def test_wheel_for_another_arch_names_its_platform(tmp_path) -> None:
    wheel = _touch(tmp_path, TORCH_X86_64)
    with pytest.raises(UserError, match="built for manylinux_2_28_x86_64, not aarch64"):
        install.classify(str(wheel), AARCH64)


def test_pip_requirement_is_accepted() -> None:
    assert install.classify("numpy>=2", PPC64LE) == install.Requirement("numpy>=2")


def test_garbage_is_neither_file_nor_requirement() -> None:
    with pytest.raises(UserError, match="neither a file nor a pip requirement"):
        install.classify("numpy>>=2", AARCH64)


def _conda_package(
    tmp_path: Path, *, subdir: str, files: dict[str, bytes], paths: list[dict] | None = None
) -> Path:
    from conda_package_handling import api

    src = tmp_path / "pkgsrc"
    (src / "info").mkdir(parents=True)
    (src / "info" / "index.json").write_text(
        json.dumps(
            {
                "name": "minipkg",
                "version": "1.0",
                "build": "0",
                "build_number": 0,
                "subdir": subdir,
                "depends": [],
            }
        )
    )
    for name, data in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(data)
    entries = paths or [{"_path": name, "path_type": "hardlink"} for name in files]
    (src / "info" / "paths.json").write_text(json.dumps({"paths": entries, "paths_version": 1}))
    (src / "info" / "files").write_text("\n".join(files) + "\n")
    listing = [*files, "info/index.json", "info/paths.json", "info/files"]
    out = tmp_path / "out"
    out.mkdir()
    api.create(str(src), listing, "minipkg-1.0-0.conda", out_folder=str(out))
    return out / "minipkg-1.0-0.conda"


def test_conda_package_for_another_subdir_is_refused(tmp_path) -> None:
    package = _conda_package(tmp_path, subdir="linux-64", files={"lib/x.txt": b"x"})
    with pytest.raises(UserError, match="built for linux-64, not linux-aarch64"):
        install.classify(str(package), AARCH64)


def test_conda_package_for_the_emulated_subdir_is_accepted(tmp_path) -> None:
    package = _conda_package(tmp_path, subdir="linux-aarch64", files={"lib/x.txt": b"x"})
    item = install.classify(str(package), AARCH64)
    assert item == install.CondaPackage(package, name="minipkg", subdir="linux-aarch64")


def test_linking_relocates_the_prefix_and_yields_the_python_requirements(tmp_path) -> None:
    placeholder = "/opt/placeholder_" + "p" * 60
    metadata = (
        b"Metadata-Version: 2.1\nName: minipkg\nVersion: 1.0\n"
        b"Requires-Dist: filelock\nRequires-Dist: sympy>=1.13; python_version >= '3.9'\n"
        b"Requires-Dist: opt-einsum; extra == 'opt'\n"
    )
    files = {
        "etc/minipkg.conf": f"root={placeholder}/lib\n".encode(),
        "lib/python3.11/site-packages/minipkg-1.0.dist-info/METADATA": metadata,
    }
    paths = [
        {
            "_path": "etc/minipkg.conf",
            "path_type": "hardlink",
            "prefix_placeholder": placeholder,
            "file_mode": "text",
        },
        {
            "_path": "lib/python3.11/site-packages/minipkg-1.0.dist-info/METADATA",
            "path_type": "hardlink",
        },
    ]
    package = _conda_package(tmp_path, subdir="linux-aarch64", files=files, paths=paths)
    prefix = tmp_path / "prefix"
    conda_link.link_conda_package(
        package,
        prefix,
        PurePosixPath("/opt/emulate/envs/k/prefix"),
        tmp_path / "scratch",
        python="3.11",
    )
    assert (prefix / "etc/minipkg.conf").read_text() == "root=/opt/emulate/envs/k/prefix/lib\n"
    assert conda_link.declared_requirements(prefix) == [
        "filelock",
        "sympy>=1.13; python_version >= '3.9'",
    ]
    assert conda_link.site_packages_pythons(prefix) == {"3.11"}


def test_noarch_python_files_land_in_this_pythons_site_packages() -> None:
    assert conda_link.noarch_python_target("site-packages/filelock/__init__.py", "3.11") == (
        "lib/python3.11/site-packages/filelock/__init__.py"
    )
    assert conda_link.noarch_python_target("python-scripts/isympy", "3.11") == "bin/isympy"
    assert conda_link.noarch_python_target("info/licenses/LICENSE", "3.11") == (
        "info/licenses/LICENSE"
    )


def test_binary_relocation_keeps_the_string_length() -> None:
    placeholder = "/ph" + "_" * 20
    data = b"\x7fELF" + placeholder.encode() + b"/lib:" + placeholder.encode() + b"/x\0tail"
    out = conda_link.relocate(data, placeholder, "/p", "binary")
    assert len(out) == len(data)
    assert out.startswith(b"\x7fELF/p/lib:/p/x\0")
    assert out.endswith(b"\0tail")


def test_text_relocation_replaces_every_occurrence() -> None:
    assert conda_link.relocate(b"a=/ph b=/ph", "/ph", "/prefix", "text") == b"a=/prefix b=/prefix"


def test_environment_key_follows_content_not_file_location(tmp_path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = tmp_path / "a" / TORCH_AARCH64
    second = tmp_path / "b" / TORCH_AARCH64
    first.write_bytes(b"same")
    second.write_bytes(b"same")
    key = install.environment_key([install.Wheel(first)], python="3.11", index_url="u")
    assert key == install.environment_key([install.Wheel(second)], python="3.11", index_url="u")
    second.write_bytes(b"different")
    assert key != install.environment_key([install.Wheel(second)], python="3.11", index_url="u")


def test_pip_in_the_chroot_ignores_the_host_pip_configuration() -> None:
    env = install.pip_env("https://pypi.org/simple")
    assert env["PIP_CONFIG_FILE"] == "/dev/null"
    assert env["PIP_INDEX_URL"] == "https://pypi.org/simple"
    assert env["PIP_CERT"] == str(chroot.CA_BUNDLE)


def test_conda_prefix_libraries_come_first_at_run_time() -> None:
    env = install.Environment(key="k", root=PurePosixPath("/opt/emulate/envs/k"), has_prefix=True)
    assert env.run_env()["LD_LIBRARY_PATH"] == "/opt/emulate/envs/k/prefix/lib"
    assert env.path_entries == ("/opt/emulate/envs/k/venv/bin", "/opt/emulate/envs/k/prefix/bin")


def test_chroot_environment_forwards_proxies_but_no_secrets() -> None:
    env = chroot.base_env(
        host_env={
            "GITHUB_TOKEN": "ghp_secret",
            "https_proxy": "http://p:3128",
            "PIP_FIND_LINKS": "/opt/wheels",
        }
    )
    assert env["https_proxy"] == "http://p:3128"
    assert "ghp_secret" not in json.dumps(env)
    assert "PIP_FIND_LINKS" not in env


def test_the_chroots_sys_offers_only_the_cpu_lists(tmp_path) -> None:
    host_cpu = tmp_path / "host"
    (host_cpu / "cpu0" / "cache" / "index0").mkdir(parents=True)
    for name in ("possible", "present", "online"):
        (host_cpu / name).write_text("0-1\n")
    chroot._populate_sys(tmp_path / "sys", host_cpu=host_cpu)
    cpu = tmp_path / "sys" / "devices" / "system" / "cpu"
    assert sorted(p.name for p in (tmp_path / "sys").rglob("*") if p.is_file()) == [
        "online",
        "possible",
        "present",
    ]
    assert (cpu / "online").read_text() == "0-1\n"
