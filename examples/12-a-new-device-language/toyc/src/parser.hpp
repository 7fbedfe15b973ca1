#pragma once
#include <vector>

#include "ast.hpp"
#include "lexer.hpp"

namespace toyc {

// Recursive descent over the grammar in the example's README.
Program parse(const std::vector<Token>& tokens);

}  // namespace toyc
