#include <cstdio>

#include "greeting.hpp"

int main(int argc, char** argv) {
    std::printf("%s\n", greeting(argc > 1 ? argv[1] : "world").c_str());
    return 0;
}
