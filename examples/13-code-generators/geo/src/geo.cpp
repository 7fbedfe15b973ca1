#include "point.h"

// The library's own use of its generated header.
int geo_manhattan(const geo::Point& p) { return p.x + p.y; }
