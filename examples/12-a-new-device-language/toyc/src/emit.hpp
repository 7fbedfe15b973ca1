#pragma once
#include <string>

#include "ast.hpp"

namespace toyc {

// C++ for a checked program: every kernel forward-declared, then defined, as
// extern "C" int toy_<name>(int v_<param>, ...).
std::string emit(const Program& prog, const std::string& source_name);

}  // namespace toyc
