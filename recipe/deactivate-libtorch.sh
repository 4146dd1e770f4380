# shellcheck shell=sh
# Installed by libtorch (CUDA builds) as etc/conda/deactivate.d/libtorch_deactivate.sh.
# Removes CF_TORCH_CUDA_ARCH_LIST only if libtorch's activation script set it.
if [ "${CF_TORCH_CUDA_ARCH_LIST_FROM_LIBTORCH:-}" = 1 ]; then
    unset CF_TORCH_CUDA_ARCH_LIST CF_TORCH_CUDA_ARCH_LIST_FROM_LIBTORCH
fi
