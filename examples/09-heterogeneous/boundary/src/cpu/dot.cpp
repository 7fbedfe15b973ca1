#include "boundary.h"

MCPP_EXPORT_C
long long sum_of_squares(const int* v, unsigned n)
{
    long long sum = 0;
    for (unsigned i = 0; i < n; ++i) sum += static_cast<long long>(v[i]) * v[i];
    return sum;
}
