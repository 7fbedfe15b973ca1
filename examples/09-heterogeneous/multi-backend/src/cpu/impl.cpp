// The CPU implementation of the seam.
extern "C" const char* impl(float* v, unsigned n, float k)
{
    for (unsigned i = 0; i < n; ++i) v[i] *= k;
    return "cpu";
}
