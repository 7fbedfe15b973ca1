#include <cstdio>

// Each backend under its own name; the table lists those this build carries.
extern "C" int multi_scale_cpu(float* v, unsigned n, float k);
#ifdef RUNTIME_CHOICE_WITH_CUDA
extern "C" int multi_scale_cuda(float* v, unsigned n, float k);  // 0: no device present
#endif

struct Backend {
    const char* name;
    int (*scale)(float*, unsigned, float);  // non-zero when it ran on its own device
};

static const Backend backends[] = {
#ifdef RUNTIME_CHOICE_WITH_CUDA
    {"cuda", multi_scale_cuda},
#endif
    {"cpu", multi_scale_cpu},
};

int main()
{
    float v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    std::printf("built in:");
    for (const Backend& b : backends) std::printf(" %s", b.name);
    std::printf("\n");
    for (const Backend& b : backends) {
        float w[8];
        for (int i = 0; i < 8; ++i) w[i] = v[i];
        if (b.scale(w, 8, 0.5f)) {
            float sum = 0;
            for (float x : w) sum += x;
            std::printf("chosen at run time: %s\nsum = %g\n", b.name, sum);
            return 0;
        }
        std::printf("%s: no device present\n", b.name);
    }
    return 1;
}
