@rem Installed by libtorch (Windows CUDA builds) as etc\conda\activate.d\libtorch_activate.bat.
@rem Exports the CUDA architectures libtorch was compiled for, so that downstream extension
@rem builds can match them:  set "TORCH_CUDA_ARCH_LIST=%CF_TORCH_CUDA_ARCH_LIST%"
@rem A value the user set before activation is left alone (same as activate-libtorch.sh).
@rem https://github.com/conda-forge/pytorch-cpu-feedstock/issues/423
@if not defined CF_TORCH_CUDA_ARCH_LIST (
    set "CF_TORCH_CUDA_ARCH_LIST=@CF_TORCH_CUDA_ARCH_LIST@"
    set "CF_TORCH_CUDA_ARCH_LIST_FROM_LIBTORCH=1"
)
