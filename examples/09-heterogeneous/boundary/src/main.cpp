#include <cstdio>
import boundary;

int main()
{
    int v[100];
    for (int i = 0; i < 100; ++i) v[i] = i + 1;
    std::printf("sum of squares 1..100 = %lld\n", boundary::sum_of_squares(v, 100));
}
