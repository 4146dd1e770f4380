# shellcheck shell=sh
# Installed by libtorch (CUDA builds) as etc/conda/activate.d/libtorch_activate.sh.
# Exports the CUDA architectures libtorch was compiled for, so that downstream
# extension builds can match them:  export TORCH_CUDA_ARCH_LIST="${CF_TORCH_CUDA_ARCH_LIST}"
# A value the user set before activation is left alone.
# https://github.com/conda-forge/pytorch-cpu-feedstock/issues/423
if [ -z "${CF_TORCH_CUDA_ARCH_LIST+set}" ]; then
    export CF_TORCH_CUDA_ARCH_LIST="@CF_TORCH_CUDA_ARCH_LIST@"
    export CF_TORCH_CUDA_ARCH_LIST_FROM_LIBTORCH=1
fi
