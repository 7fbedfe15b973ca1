// A module partition: part of `greet`; importers reach it through `export import :math;`.
export module greet:math;

export namespace greet::detail {
constexpr int twice(int x) { return 2 * x; }
}  // namespace greet::detail
