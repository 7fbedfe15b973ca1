// The seam: the project's designed interface. It is the one place where the implementation
// under it (CUDA, or the CPU) can be replaced without touching a consumer.
module;
#include <string>
#include <vector>
export module app.saxpy;
import app.kernels;

export namespace app {

struct Result {
    std::vector<float> values;
    std::string where;  // what computed it
};

Result saxpy(float a, const std::vector<float>& x, const std::vector<float>& y)
{
    Result r{std::vector<float>(x.size()), ""};
    const int on_host = kernels::saxpy(a, x.data(), y.data(), r.values.data(), static_cast<unsigned>(x.size()));
    if (!on_host)
        r.where = "the CUDA device";
    else if (kernels::device_count() == 0)
        r.where = "the CPU";
    return r;
}

}  // namespace app
