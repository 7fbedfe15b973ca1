// The CUDA implementation of the seam: the host side, dispatching to the device unit.
extern "C" int multi_scale_cuda(float* v, unsigned n, float k);

extern "C" const char* impl(float* v, unsigned n, float k)
{
    return multi_scale_cuda(v, n, k) ? "cuda (device)" : "cuda (no device present: CPU)";
}
