// The same answer whichever implementation is under the seam.
#include <cstdio>
import app.saxpy;

int main()
{
    float x[4] = {0, 1, 2, 3}, y[4] = {1, 1, 1, 1}, out[4] = {};
    std::printf("%s\n", app::saxpy(3.0f, x, y, out, 4));
    for (int i = 0; i < 4; ++i)
        if (out[i] != 3.0f * x[i] + y[i]) {
            std::printf("out[%d] = %g\n", i, out[i]);
            return 1;
        }
    return 0;
}
