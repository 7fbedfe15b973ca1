#include <cstdio>

import shapes;

int main() {
    shapes::Square sq{units::Meters{3.0}};
    std::printf("area = %.1f\n", sq.area());
    std::printf("perimeter = %.1f m\n", sq.perimeter().value);
    return 0;
}
