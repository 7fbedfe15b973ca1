// The device implementation; with no device present it computes on the CPU.
#include <cuda_runtime.h>

static __global__ void square_kernel(const int* v, int* out, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = v[i] * v[i];
}

MCPP_EXPORT_C
long long sum_of_squares(const int* v, unsigned n)
{
    int count = 0;
    long long sum = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        for (unsigned i = 0; i < n; ++i) sum += static_cast<long long>(v[i]) * v[i];
        return sum;
    }
    int *dv = nullptr, *dout = nullptr;
    int* host = new int[n];
    cudaMalloc(&dv, n * sizeof(int));
    cudaMalloc(&dout, n * sizeof(int));
    cudaMemcpy(dv, v, n * sizeof(int), cudaMemcpyHostToDevice);
    square_kernel<<<(n + 255) / 256, 256>>>(dv, dout, n);
    cudaMemcpy(host, dout, n * sizeof(int), cudaMemcpyDeviceToHost);
    for (unsigned i = 0; i < n; ++i) sum += host[i];
    delete[] host;
    cudaFree(dv);
    cudaFree(dout);
    return sum;
}
