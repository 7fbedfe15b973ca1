#include "check.hpp"

#include <map>
#include <set>

namespace toyc {

namespace {

class Checker {
public:
    explicit Checker(const Program& p) : prog_(p) {}

    void run() {
        for (const Kernel& k : prog_.kernels) {
            if (!arity_.emplace(k.name, k.params.size()).second)
                throw CompileError(k.name_pos, "kernel `" + k.name + "` is defined twice");
        }
        for (const Kernel& k : prog_.kernels) kernel(k);
    }

private:
    const Program& prog_;
    std::map<std::string, size_t> arity_;
    std::vector<std::set<std::string>> scopes_;

    bool declared(const std::string& name) const {
        for (const auto& s : scopes_)
            if (s.count(name)) return true;
        return false;
    }

    // A variable may not be declared again while an earlier one is visible:
    // `let x = x + 1;` inside a block would read the new, uninitialised C++
    // variable, so the language does not allow shadowing at all.
    void declare(const std::string& name, Pos pos) {
        if (declared(name)) throw CompileError(pos, "`" + name + "` is already declared");
        scopes_.back().insert(name);
    }

    void kernel(const Kernel& k) {
        scopes_.assign(1, {});
        for (const Param& p : k.params) {
            if (scopes_.back().count(p.name))
                throw CompileError(p.pos, "parameter `" + p.name + "` is declared twice");
            scopes_.back().insert(p.name);
        }
        // The body shares the parameters' scope, as it does in C++.
        for (const StmtPtr& s : k.body) stmt(*s);
        if (!returns(k.body))
            throw CompileError(k.pos,
                               "kernel `" + k.name + "` can reach its end without a `return`");
    }

    static bool returns(const Block& b) {
        if (b.empty()) return false;
        const Stmt& last = *b.back();
        if (last.kind == Stmt::Return) return true;
        if (last.kind == Stmt::If) return last.has_else && returns(last.body) && returns(last.else_body);
        return false;  // `while` never counts: nothing says it runs at all
    }

    void block(const Block& b) {
        scopes_.emplace_back();
        for (const StmtPtr& s : b) stmt(*s);
        scopes_.pop_back();
    }

    void stmt(const Stmt& s) {
        switch (s.kind) {
        case Stmt::Let:
            expr(*s.expr);
            declare(s.name, s.name_pos);
            break;
        case Stmt::Assign:
            if (!declared(s.name)) throw CompileError(s.name_pos, "`" + s.name + "` is not declared");
            expr(*s.expr);
            break;
        case Stmt::Return:
            expr(*s.expr);
            break;
        case Stmt::If:
            expr(*s.expr);
            block(s.body);
            if (s.has_else) block(s.else_body);
            break;
        case Stmt::While:
            expr(*s.expr);
            block(s.body);
            break;
        }
    }

    void expr(const Expr& e) {
        switch (e.kind) {
        case Expr::Num:
            break;
        case Expr::Var:
            if (!declared(e.text)) throw CompileError(e.pos, "`" + e.text + "` is not declared");
            break;
        case Expr::Call: {
            auto it = arity_.find(e.text);
            if (it == arity_.end())
                throw CompileError(e.pos, "`" + e.text + "` is not a kernel in this file");
            if (it->second != e.args.size()) {
                auto n = it->second;
                throw CompileError(e.pos, "kernel `" + e.text + "` takes " + std::to_string(n) +
                                              (n == 1 ? " argument, " : " arguments, ") +
                                              std::to_string(e.args.size()) + " given");
            }
            for (const ExprPtr& a : e.args) expr(*a);
            break;
        }
        case Expr::Neg:
        case Expr::Bin:
            for (const ExprPtr& a : e.args) expr(*a);
            break;
        }
    }
};

}  // namespace

void check(const Program& prog) { Checker(prog).run(); }

}  // namespace toyc
