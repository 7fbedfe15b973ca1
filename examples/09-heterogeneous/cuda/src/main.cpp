#include <cstdio>
#include <vector>
import app.saxpy;

int main()
{
    std::vector<float> x(1024), y(1024);
    for (unsigned i = 0; i < x.size(); ++i) {
        x[i] = static_cast<float>(i);
        y[i] = 1.0f;
    }
    const app::Result r = app::saxpy(2.0f, x, y);
    double sum = 0;
    for (float v : r.values) sum += v;
#ifdef __has_include
#endif
    std::printf("computed on %s\n", r.where.c_str());
    std::printf("saxpy: out[0]=%g out[1023]=%g sum=%.1f\n", r.values[0], r.values[1023], sum);
}
