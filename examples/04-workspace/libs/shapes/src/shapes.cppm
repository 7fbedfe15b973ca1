export module shapes;

export import units;

export namespace shapes {
struct Square {
    units::Meters side;
    double area() const { return side.value * side.value; }
    units::Meters perimeter() const { return side * 4.0; }
};
}  // namespace shapes
