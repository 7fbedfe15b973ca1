// The CPU implementation of the same boundary, compiled by mcpp: an ordinary #include of the
// generated header (no forced include here), and the same marked declarations.
#include "app_kernels.h"

MCPP_EXPORT_C
const char* app_backend()
{
    return "cpu";
}

MCPP_EXPORT_C
int app_device_count()
{
    return 0;
}

MCPP_EXPORT_C
int app_saxpy(float a, const float* x, const float* y, float* out, unsigned n)
{
    for (unsigned i = 0; i < n; ++i) out[i] = a * x[i] + y[i];
    return 1;
}
