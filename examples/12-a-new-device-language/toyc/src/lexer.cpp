#include "lexer.hpp"

#include <cctype>

namespace toyc {

std::string describe(const Token& t) {
    if (t.kind == Token::End) return "end of file";
    return "`" + t.text + "`";
}

static bool is_keyword(const std::string& s) {
    return s == "kernel" || s == "let" || s == "return" || s == "if" || s == "else" ||
           s == "while";
}

std::vector<Token> lex(const std::string& src) {
    std::vector<Token> out;
    Pos p;
    size_t i = 0;
    auto advance = [&](size_t n) {
        for (size_t k = 0; k < n && i < src.size(); ++k, ++i) {
            if (src[i] == '\n') {
                ++p.line;
                p.col = 1;
            } else {
                ++p.col;
            }
        }
    };
    while (i < src.size()) {
        unsigned char c = static_cast<unsigned char>(src[i]);
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            advance(1);
            continue;
        }
        if (c == '/' && i + 1 < src.size() && src[i + 1] == '/') {
            while (i < src.size() && src[i] != '\n') advance(1);
            continue;
        }
        Pos start = p;
        if (std::isalpha(c) || c == '_') {
            size_t j = i;
            while (j < src.size() &&
                   (std::isalnum(static_cast<unsigned char>(src[j])) || src[j] == '_'))
                ++j;
            std::string word = src.substr(i, j - i);
            out.push_back({is_keyword(word) ? Token::Keyword : Token::Ident, word, start});
            advance(j - i);
            continue;
        }
        if (std::isdigit(c)) {
            size_t j = i;
            while (j < src.size() && std::isdigit(static_cast<unsigned char>(src[j]))) ++j;
            std::string digits = src.substr(i, j - i);
            size_t first = digits.find_first_not_of('0');
            std::string sig = first == std::string::npos ? "0" : digits.substr(first);
            if (sig.size() > 10 || (sig.size() == 10 && sig > "2147483647"))
                throw CompileError(start, "integer literal `" + digits + "` does not fit in an int");
            out.push_back({Token::Number, sig, start});
            advance(j - i);
            continue;
        }
        static const char* two[] = {"<=", ">=", "==", "!="};
        bool matched = false;
        for (const char* t : two) {
            if (src.compare(i, 2, t) == 0) {
                out.push_back({Token::Punct, t, start});
                advance(2);
                matched = true;
                break;
            }
        }
        if (matched) continue;
        if (std::string("(){},;=+-*/%<>").find(static_cast<char>(c)) != std::string::npos) {
            out.push_back({Token::Punct, std::string(1, static_cast<char>(c)), start});
            advance(1);
            continue;
        }
        std::string shown = std::isprint(c) ? std::string(1, static_cast<char>(c))
                                            : "\\x" + std::string(1, "0123456789abcdef"[c >> 4]) +
                                                  std::string(1, "0123456789abcdef"[c & 15]);
        throw CompileError(start, "unexpected character `" + shown + "`");
    }
    out.push_back({Token::End, "", p});
    return out;
}

}  // namespace toyc
