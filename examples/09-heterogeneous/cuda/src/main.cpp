#include <cstdio>
#include <vector>
import app.saxpy;

int main()
{
    std::vector<float> x(1024), y(1024), out(1024);
    for (unsigned i = 0; i < x.size(); ++i) {
        x[i] = static_cast<float>(i);
        y[i] = 1.0f;
    }
    const char* where = app::saxpy(2.0f, x.data(), y.data(), out.data(), static_cast<unsigned>(x.size()));
    double sum = 0;
    for (float v : out) sum += v;
    std::printf("%s\n", where);
    std::printf("saxpy: out[0]=%g out[1023]=%g sum=%.1f\n", out[0], out[1023], sum);
}
