// src/kernels/saxpy.cu -- no include of the boundary: the generated header arrives through the
// compiler's forced-include flag, which is also what defines the marker as nothing.
#include <cuda_runtime.h>

static __global__ void saxpy_kernel(float a, const float* x, const float* y, float* out, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}

static void saxpy_host(float a, const float* x, const float* y, float* out, unsigned n)
{
    for (unsigned i = 0; i < n; ++i) out[i] = a * x[i] + y[i];
}

MCPP_EXPORT_C
const char* app_backend()
{
    return "cuda";
}

// 0: no CUDA device is reachable here (no driver, or no GPU): computed on the CPU.
MCPP_EXPORT_C
int app_device_count()
{
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

// Returns 0 when it ran on the device, 1 when it computed on the CPU because no device is present.
MCPP_EXPORT_C
int app_saxpy(float a, const float* x, const float* y, float* out, unsigned n)
{
    if (app_device_count() == 0) {
        saxpy_host(a, x, y, out, n);
        return 1;
    }
    float *dx = nullptr, *dy = nullptr, *dout = nullptr;
    const size_t bytes = n * sizeof(float);
    cudaMalloc(&dx, bytes);
    cudaMalloc(&dy, bytes);
    cudaMalloc(&dout, bytes);
    cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(dy, y, bytes, cudaMemcpyHostToDevice);
    saxpy_kernel<<<(n + 255) / 256, 256>>>(a, dx, dy, dout, n);
    cudaError_t err = cudaMemcpy(out, dout, bytes, cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dy);
    cudaFree(dout);
    if (err != cudaSuccess) {
        saxpy_host(a, x, y, out, n);
        return 1;
    }
    return 0;
}
