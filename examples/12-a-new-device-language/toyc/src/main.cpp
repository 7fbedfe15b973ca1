// toyc: compiles a .toy file to C++.
//   toyc INPUT.toy -o OUTPUT.cpp
// Exit 0 on success, 1 on a compile error (file:line:col: error: message on
// stderr), 2 on bad usage or an unreadable/unwritable file.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "check.hpp"
#include "emit.hpp"
#include "lexer.hpp"
#include "parser.hpp"

namespace {

int usage() {
    std::cerr << "usage: toyc INPUT.toy -o OUTPUT.cpp\n";
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::string input, output;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "-o") {
            if (i + 1 >= argc || !output.empty()) return usage();
            output = argv[++i];
        } else if (a == "-h" || a == "--help") {
            std::cout << "usage: toyc INPUT.toy -o OUTPUT.cpp\n";
            return 0;
        } else if (input.empty() && (a.empty() || a[0] != '-')) {
            input = a;
        } else {
            return usage();
        }
    }
    if (input.empty() || output.empty()) return usage();

    std::ifstream in(input, std::ios::binary);
    if (!in) {
        std::cerr << "toyc: error: cannot read " << input << "\n";
        return 2;
    }
    std::stringstream buf;
    buf << in.rdbuf();

    std::string code;
    try {
        toyc::Program prog = toyc::parse(toyc::lex(buf.str()));
        toyc::check(prog);
        code = toyc::emit(prog, input);
    } catch (const toyc::CompileError& e) {
        std::cerr << input << ":" << e.pos.line << ":" << e.pos.col << ": error: " << e.what()
                  << "\n";
        return 1;
    }

    // Write beside the target and rename, so a failed write never leaves a
    // truncated file that a later build step would take for output.
    std::string tmp = output + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << code;
        out.flush();
        if (!out) {
            std::cerr << "toyc: error: cannot write " << output << "\n";
            std::remove(tmp.c_str());
            return 2;
        }
    }
    if (std::rename(tmp.c_str(), output.c_str()) != 0) {
        std::cerr << "toyc: error: cannot write " << output << "\n";
        std::remove(tmp.c_str());
        return 2;
    }
    return 0;
}
