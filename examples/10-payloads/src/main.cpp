#include <cstdio>
#include <string>

std::string banner();

int main() {
    std::printf("%s\n", banner().c_str());
}
