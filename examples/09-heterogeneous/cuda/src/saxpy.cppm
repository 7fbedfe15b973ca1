// The seam: the project's designed interface. It is the one place where the implementation
// under it (CUDA, or the CPU) can be replaced without touching a consumer. It keeps to plain
// types: the standard library stays out of module interfaces that GCC 12 merges with headers.
export module app.saxpy;
// Re-exported only because GCC 12 loses namespace `app` for an importer of this module when the
// module reopens a namespace it met through a private import.
export import app.kernels;

export namespace app {

// Where `out = a * x + y` was computed.
const char* saxpy(float a, const float* x, const float* y, float* out, unsigned n)
{
    const bool cpu_build = kernels::backend()[0] == 'c' && kernels::backend()[1] == 'p';
    const int on_host = kernels::saxpy(a, x, y, out, n);
    if (cpu_build)
        return "built without accelerators: computed on the CPU";
    if (on_host)
        return "no CUDA device present: computed on the CPU";
    return "computed on the CUDA device";
}

}  // namespace app
