"""What a wheel's own ``Requires-Dist`` installs beside it: the shared libraries of the
wheels it requires.

pip installs a wheel's requirements with it, so for a wheel a NEEDED library that a required
wheel ships is satisfied, as a run dependency's library is for a conda package; the finding
names the requirement. Which wheel ships which library is a fact, read from the wheels
themselves, and kept here only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.metadata import Metadata
from packaging.requirements import Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from tools.check.archive import Package

# The shared libraries (file name = DT_SONAME) each of NVIDIA's CUDA 13 wheels installs,
# under nvidia/cu13/lib/ (nvidia/<component>/lib/ for the -cu13 names), as listed in the
# wheels: nvidia-cuda-runtime 13.0.96, nvidia-cublas 13.1.1.3, nvidia-cuda-cupti 13.0.85,
# nvidia-cuda-nvrtc 13.0.88, nvidia-cufft 12.0.0.61, nvidia-cufile 1.15.1.6, nvidia-curand
# 10.4.0.35, nvidia-cusolver 12.0.4.66, nvidia-cusparse 12.6.3.3, nvidia-nvjitlink 13.4.92,
# nvidia-nvtx 13.0.85, nvidia-cudnn-cu13 9.24.0.43, nvidia-cusparselt-cu13 0.8.1,
# nvidia-nccl-cu13 2.30.7 and nvidia-nvshmem-cu13 3.4.5. A library's major version is in its
# name, so a wheel of another major provides none of these and is not taken for one.
WHEEL_LIBRARIES: Mapping[str, tuple[str, ...]] = {
    "nvidia-cuda-runtime": ("libcudart.so.13",),
    "nvidia-cublas": ("libcublas.so.13", "libcublasLt.so.13", "libnvblas.so.13"),
    "nvidia-cuda-cupti": (
        "libcupti.so.13",
        "libcheckpoint.so",
        "libnvperf_host.so",
        "libnvperf_target.so",
        "libpcsamplingutil.so",
    ),
    "nvidia-cuda-nvrtc": ("libnvrtc.so.13", "libnvrtc.alt.so.13"),
    "nvidia-cufft": ("libcufft.so.12", "libcufftw.so.12"),
    "nvidia-cufile": ("libcufile.so.0", "libcufile_rdma.so.1"),
    "nvidia-curand": ("libcurand.so.10",),
    "nvidia-cusolver": ("libcusolver.so.12", "libcusolverMg.so.12"),
    "nvidia-cusparse": ("libcusparse.so.12",),
    "nvidia-nvjitlink": ("libnvJitLink.so.13",),
    "nvidia-nvtx": ("libnvtx3interop.so.1",),
    "nvidia-cudnn-cu13": tuple(
        f"libcudnn{part}.so.9"
        for part in (
            "",
            "_adv",
            "_cnn",
            "_engines_precompiled",
            "_engines_runtime_compiled",
            "_engines_tensor_ir",
            "_ext",
            "_graph",
            "_heuristic",
            "_ops",
        )
    ),
    "nvidia-cusparselt-cu13": ("libcusparseLt.so.0",),
    "nvidia-nccl-cu13": ("libnccl.so.2",),
    "nvidia-nvshmem-cu13": (
        "libnvshmem_host.so.3",
        *(f"nvshmem_bootstrap_{b}.so.3" for b in ("mpi", "pmi", "pmi2", "pmix", "shmem", "uid")),
        *(f"nvshmem_transport_{t}.so.3" for t in ("ibdevx", "ibgda", "ibrc", "libfabric", "ucx")),
    ),
}

# The NVIDIA wheels each extra of the cuda-toolkit metapackage pulls in (its METADATA; the
# same in cuda-toolkit 13.0.3 and 13.2.2). PyTorch's CUDA 13 wheels require
# cuda-toolkit[cublas,cudart,…]==13.x instead of the NVIDIA wheels themselves.
CUDA_TOOLKIT_EXTRAS: Mapping[str, tuple[str, ...]] = {
    "cublas": ("nvidia-cublas", "nvidia-cuda-nvrtc"),
    "cudart": ("nvidia-cuda-runtime",),
    "cufft": ("nvidia-cufft", "nvidia-nvjitlink"),
    "cufile": ("nvidia-cufile",),
    "cupti": ("nvidia-cuda-cupti",),
    "curand": ("nvidia-curand",),
    "cusolver": ("nvidia-cublas", "nvidia-cusolver", "nvidia-cusparse", "nvidia-nvjitlink"),
    "cusparse": ("nvidia-cusparse", "nvidia-nvjitlink"),
    "nvjitlink": ("nvidia-nvjitlink",),
    "nvrtc": ("nvidia-cuda-nvrtc",),
    "nvtx": ("nvidia-nvtx",),
}
CUDA_TOOLKIT = "cuda-toolkit"

_METADATA = re.compile(r"[^/]+\.dist-info/METADATA")
# A wheel's platform tag, as the PEP 508 markers of the machine it installs on see it.
_PLATFORMS = (
    (re.compile(r"(many|musl)linux.*_(x86_64|aarch64|ppc64le|s390x)$"), "Linux", "linux"),
    (re.compile(r"linux_(x86_64|aarch64|ppc64le|s390x)$"), "Linux", "linux"),
    (re.compile(r"macosx_.*_(x86_64|arm64|universal2)$"), "Darwin", "darwin"),
    (re.compile(r"win_(amd64|arm64)$"), "Windows", "win32"),
)


def metadata_text(package: Package) -> str | None:
    """The wheel's ``*.dist-info/METADATA`` as read from the archive (None: it has none)."""
    found = [text for path, text in package.texts.items() if _METADATA.fullmatch(path)]
    return found[0] if len(found) == 1 else None


def marker_environment(wheel_name: str) -> dict[str, str]:
    """The PEP 508 marker values of a machine this wheel installs on, from its file name
    (values its tags do not pin are left to the running interpreter's)."""
    try:
        _, _, _, tags = parse_wheel_filename(wheel_name)
    except InvalidWheelFilename:
        return {"extra": ""}
    env = {"extra": ""}  # no extras asked for: what `pip install torch` installs
    for tag in tags:
        python = re.fullmatch(r"cp(\d)(\d+)", tag.interpreter)
        if python:
            env["python_version"] = f"{python[1]}.{python[2]}"
            env["python_full_version"] = f"{python[1]}.{python[2]}.0"
            env["implementation_name"] = "cpython"
            env["platform_python_implementation"] = "CPython"
        for pattern, system, sys_platform in _PLATFORMS:
            platform = pattern.search(tag.platform)
            if platform:
                machine = platform.groups()[-1]
                env["platform_system"], env["sys_platform"] = system, sys_platform
                env["platform_machine"] = "AMD64" if machine == "amd64" else machine
                env["os_name"] = "nt" if system == "Windows" else "posix"
    return env


def _applies(requirement: Requirement, env: Mapping[str, str]) -> bool:
    if requirement.marker is None:
        return True
    try:
        return requirement.marker.evaluate(dict(env))
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return False


def _named(requirement: Requirement, extra: str | None = None) -> str:
    """``name[extra]SPECIFIER``: the requirement as a finding names it, marker left out."""
    extras = f"[{extra}]" if extra else ""
    return f"{requirement.name}{extras}{requirement.specifier}"


def provided_libraries(package: Package) -> dict[str, str]:
    """For a wheel: each library that a wheel its ``Requires-Dist`` installs ships, with the
    requirement that installs it (``libcudart.so.13`` -> ``cuda-toolkit[cudart]==13.2.2``)."""
    text = metadata_text(package) if package.kind == "wheel" else None
    if text is None:
        return {}
    try:
        requirements = Metadata.from_email(text, validate=False).requires_dist or []
    except Exception:  # damaged METADATA: it provides nothing, and NEEDED says what is missing
        return {}
    env = marker_environment(package.source.name)
    provided: dict[str, str] = {}
    for requirement in requirements:
        if not _applies(requirement, env):
            continue
        name = canonicalize_name(requirement.name)
        wheels = [(name, _named(requirement))]
        if name == CUDA_TOOLKIT:
            wheels = [
                (wheel, _named(requirement, extra))
                for extra in sorted(requirement.extras)
                for wheel in CUDA_TOOLKIT_EXTRAS.get(extra, ())
            ]
        for wheel, named in wheels:
            for library in WHEEL_LIBRARIES.get(wheel, ()):
                provided.setdefault(library, named)
    return provided
