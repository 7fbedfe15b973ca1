// The library's public interface: one named module, built from a partition.
export module greet;

export import :math;

export namespace greet {
const char* hello() { return "Hello from the greet module!"; }
int answer() { return detail::twice(21); }
}  // namespace greet
