// toyc: the syntax tree and the error every stage reports through.
#pragma once
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace toyc {

struct Pos {
    int line = 1;
    int col = 1;
};

// The first error stops compilation; main prints it as file:line:col.
struct CompileError : std::runtime_error {
    Pos pos;
    CompileError(Pos p, const std::string& msg) : std::runtime_error(msg), pos(p) {}
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    enum Kind { Num, Var, Call, Neg, Bin } kind;
    Pos pos;
    std::string text;           // number digits, variable or callee name, operator
    std::vector<ExprPtr> args;  // Call: arguments; Neg: operand; Bin: lhs, rhs
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Block = std::vector<StmtPtr>;

struct Stmt {
    enum Kind { Let, Assign, Return, If, While } kind;
    Pos pos;
    Pos name_pos;      // Let / Assign: position of the name
    std::string name;  // Let / Assign
    ExprPtr expr;      // value, return value or condition
    Block body;        // If: then-block; While: body
    Block else_body;   // If
    bool has_else = false;
};

struct Param {
    std::string name;
    Pos pos;
};

struct Kernel {
    Pos pos;  // the `kernel` keyword
    std::string name;
    Pos name_pos;
    std::vector<Param> params;
    Block body;
};

struct Program {
    std::vector<Kernel> kernels;
};

}  // namespace toyc
