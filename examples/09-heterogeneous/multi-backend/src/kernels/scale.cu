#include <cuda_runtime.h>

static __global__ void scale_kernel(float* v, unsigned n, float k)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] *= k;
}

// 1: ran on the device; 0: no device present, computed on the CPU.
extern "C" int multi_scale_cuda(float* v, unsigned n, float k)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        for (unsigned i = 0; i < n; ++i) v[i] *= k;
        return 0;
    }
    float* d = nullptr;
    cudaMalloc(&d, n * sizeof(float));
    cudaMemcpy(d, v, n * sizeof(float), cudaMemcpyHostToDevice);
    scale_kernel<<<(n + 255) / 256, 256>>>(d, n, k);
    cudaMemcpy(v, d, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(d);
    return 1;
}
