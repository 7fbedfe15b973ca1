#pragma once
#include <string>
#include <vector>

#include "ast.hpp"

namespace toyc {

struct Token {
    enum Kind { Ident, Number, Keyword, Punct, End } kind;
    std::string text;  // as written; empty for End
    Pos pos;
};

// How a token is named in "expected X, found Y".
std::string describe(const Token& t);

std::vector<Token> lex(const std::string& src);

}  // namespace toyc
