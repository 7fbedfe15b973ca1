// The kernels come from src/kernels/answer.toy, compiled by toyc through the rules-toy rule.
// extern "C": the two sides are produced by different compilers and share no C++ ABI.
#include <cstdio>

extern "C" int toy_gcd(int a, int b);
extern "C" int toy_scale(int x, int k);
extern "C" int toy_answer();

int main() {
    std::printf("gcd(1071, 462) = %d\n", toy_gcd(1071, 462));
    std::printf("scale(21, 2)   = %d\n", toy_scale(21, 2));
    std::printf("answer()       = %d\n", toy_answer());
    return 0;
}
