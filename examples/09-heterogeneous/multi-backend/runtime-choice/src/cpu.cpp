extern "C" int multi_scale_cpu(float* v, unsigned n, float k)
{
    for (unsigned i = 0; i < n; ++i) v[i] *= k;
    return 1;
}
