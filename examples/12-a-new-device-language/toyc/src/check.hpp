#pragma once
#include "ast.hpp"

namespace toyc {

// Semantic checks: kernel names, calls and arity, declared variables, and
// that every kernel returns on every path. Throws CompileError at the first.
void check(const Program& prog);

}  // namespace toyc
