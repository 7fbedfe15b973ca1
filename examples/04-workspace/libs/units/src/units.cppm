export module units;

export namespace units {
struct Meters {
    double value;
};
constexpr Meters operator*(Meters a, double k) { return Meters{a.value * k}; }
}  // namespace units
