// The Vulkan build: each embedded blob's byte count, and whether it starts with the SPIR-V magic
// number. A renderer would hand `blob.data()` and `blob.size()` to vkCreateShaderModule.
module;
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
export module app.report;
import shader_app.shaders;

namespace {

bool show(const char* name, std::span<const std::byte> blob)
{
    std::uint32_t magic = 0;
    if (blob.size() >= sizeof magic)
        std::memcpy(&magic, blob.data(), sizeof magic);
    const bool spirv = magic == 0x07230203u && blob.size() % 4 == 0;
    std::printf("%s: %zu bytes, %s\n", name, blob.size(), spirv ? "SPIR-V" : "not SPIR-V");
    return spirv;
}

}

export namespace app {

int report()
{
    const bool a = show("shaders/scale.comp", shader_app::shaders::scale_comp());
    const bool b = show("shaders/a/scale.comp", shader_app::shaders::a::scale_comp());
    const bool distinct = shader_app::shaders::scale_comp().size() != shader_app::shaders::a::scale_comp().size();
    std::printf("two blobs: %s\n", distinct ? "distinct" : "the same");
    return a && b && distinct ? 0 : 1;
}

}
