@rem Installed by libtorch (Windows CUDA builds) as etc\conda\deactivate.d\libtorch_deactivate.bat.
@rem Removes CF_TORCH_CUDA_ARCH_LIST only if libtorch's activation script set it.
@if "%CF_TORCH_CUDA_ARCH_LIST_FROM_LIBTORCH%"=="1" (
    set "CF_TORCH_CUDA_ARCH_LIST="
    set "CF_TORCH_CUDA_ARCH_LIST_FROM_LIBTORCH="
)
