#include <cstdio>

import greet;

int main() {
    std::printf("%s\n", greet::hello());
    std::printf("answer = %d\n", greet::answer());
    return 0;
}
