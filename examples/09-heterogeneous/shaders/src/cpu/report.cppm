// The CPU build (`--no-accel`): no shaders are compiled, and nothing imports their module.
module;
#include <cstdio>
export module app.report;

export namespace app {

int report()
{
    std::printf("no accelerator: shaders not compiled\n");
    return 0;
}

}
