#include "parser.hpp"

namespace toyc {

namespace {

class Parser {
public:
    explicit Parser(const std::vector<Token>& t) : toks_(t) {}

    Program program() {
        Program prog;
        while (peek().kind != Token::End) prog.kernels.push_back(kernel());
        return prog;
    }

private:
    const std::vector<Token>& toks_;
    size_t i_ = 0;

    const Token& peek() const { return toks_[i_]; }
    const Token& next() { return toks_[i_ < toks_.size() - 1 ? i_++ : i_]; }

    bool is(const char* text) const {
        const Token& t = peek();
        return (t.kind == Token::Punct || t.kind == Token::Keyword) && t.text == text;
    }

    [[noreturn]] void fail(const std::string& expected) const {
        throw CompileError(peek().pos, "expected " + expected + ", found " + describe(peek()));
    }

    const Token& expect(const char* text) {
        if (!is(text)) fail(std::string("`") + text + "`");
        return next();
    }

    const Token& ident() {
        if (peek().kind != Token::Ident) fail("identifier");
        return next();
    }

    Kernel kernel() {
        Kernel k;
        if (!is("kernel")) fail("`kernel`");
        k.pos = next().pos;
        const Token& name = ident();
        k.name = name.text;
        k.name_pos = name.pos;
        expect("(");
        if (!is(")")) {
            for (;;) {
                const Token& p = ident();
                k.params.push_back({p.text, p.pos});
                if (!is(",")) break;
                next();
            }
        }
        expect(")");
        k.body = block();
        return k;
    }

    Block block() {
        expect("{");
        Block b;
        while (!is("}")) {
            if (peek().kind == Token::End) fail("`}`");
            b.push_back(stmt());
        }
        next();
        return b;
    }

    StmtPtr stmt() {
        auto s = std::make_unique<Stmt>();
        s->pos = peek().pos;
        if (is("let")) {
            next();
            s->kind = Stmt::Let;
            const Token& n = ident();
            s->name = n.text;
            s->name_pos = n.pos;
            expect("=");
            s->expr = expr();
            expect(";");
        } else if (is("return")) {
            next();
            s->kind = Stmt::Return;
            s->expr = expr();
            expect(";");
        } else if (is("if")) {
            next();
            s->kind = Stmt::If;
            expect("(");
            s->expr = expr();
            expect(")");
            s->body = block();
            if (is("else")) {
                next();
                s->has_else = true;
                s->else_body = block();
            }
        } else if (is("while")) {
            next();
            s->kind = Stmt::While;
            expect("(");
            s->expr = expr();
            expect(")");
            s->body = block();
        } else if (peek().kind == Token::Ident) {
            s->kind = Stmt::Assign;
            const Token& n = next();
            s->name = n.text;
            s->name_pos = n.pos;
            expect("=");
            s->expr = expr();
            expect(";");
        } else {
            fail("statement");
        }
        return s;
    }

    ExprPtr expr() { return cmp(); }

    ExprPtr binary(ExprPtr lhs, const Token& op, ExprPtr rhs) {
        auto e = std::make_unique<Expr>();
        e->kind = Expr::Bin;
        e->pos = op.pos;
        e->text = op.text;
        e->args.push_back(std::move(lhs));
        e->args.push_back(std::move(rhs));
        return e;
    }

    ExprPtr cmp() {
        ExprPtr lhs = sum();
        while (is("<") || is(">") || is("<=") || is(">=") || is("==") || is("!=")) {
            const Token& op = next();
            lhs = binary(std::move(lhs), op, sum());
        }
        return lhs;
    }

    ExprPtr sum() {
        ExprPtr lhs = term();
        while (is("+") || is("-")) {
            const Token& op = next();
            lhs = binary(std::move(lhs), op, term());
        }
        return lhs;
    }

    ExprPtr term() {
        ExprPtr lhs = unary();
        while (is("*") || is("/") || is("%")) {
            const Token& op = next();
            lhs = binary(std::move(lhs), op, unary());
        }
        return lhs;
    }

    ExprPtr unary() {
        if (is("-")) {
            auto e = std::make_unique<Expr>();
            e->kind = Expr::Neg;
            e->pos = next().pos;
            e->text = "-";
            e->args.push_back(primary());
            return e;
        }
        return primary();
    }

    ExprPtr primary() {
        auto e = std::make_unique<Expr>();
        const Token& t = peek();
        e->pos = t.pos;
        if (t.kind == Token::Number) {
            e->kind = Expr::Num;
            e->text = next().text;
        } else if (t.kind == Token::Ident) {
            e->text = next().text;
            e->kind = Expr::Var;
            if (is("(")) {
                next();
                e->kind = Expr::Call;
                if (!is(")")) {
                    for (;;) {
                        e->args.push_back(expr());
                        if (!is(",")) break;
                        next();
                    }
                }
                expect(")");
            }
        } else if (is("(")) {
            next();
            e = expr();
            expect(")");
        } else {
            fail("expression");
        }
        return e;
    }
};

}  // namespace

Program parse(const std::vector<Token>& tokens) { return Parser(tokens).program(); }

}  // namespace toyc
