// schemac: a tiny schema compiler. A schema names its C++ namespace, imports other schemas and
// declares messages with `int` and `string` fields or fields of another message:
//
//     package app
//     import point.schema
//     message Rect
//       Point corner
//       int width = 5
//
//   schemac [-I DIR]... [--describe] -o OUT.h FILE    a header with one struct per message
//   schemac [-I DIR]... --docs DIR FILE...            one DIR/<Message>.md per message
//   schemac [-I DIR]... --check -o STAMP FILE         naming rules too; writes STAMP when clean
//
// Errors are `FILE:LINE: error: ...`, with FILE as it was given, and exit 1.
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Field { std::string type, name, value; int line; };
struct Message { std::string name; int line; std::vector<Field> fields; };
struct Schema { std::string package; std::vector<std::string> imports; std::vector<Message> messages; };

std::vector<std::string> include_dirs;
std::map<std::string, std::string> known;  // message name -> qualified C++ name

[[noreturn]] void fail(const std::string& file, int line, const std::string& message) {
    std::fprintf(stderr, "%s:%d: error: %s\n", file.c_str(), line, message.c_str());
    std::exit(1);
}

std::string dir_of(const std::string& path) {
    auto slash = path.rfind('/');
    return slash == std::string::npos ? "." : path.substr(0, slash);
}

Schema parse(const std::string& path, bool check);

std::string find_import(const std::string& from, int line, const std::string& name) {
    std::vector<std::string> dirs{dir_of(from)};
    dirs.insert(dirs.end(), include_dirs.begin(), include_dirs.end());
    for (const auto& d : dirs) {
        std::string candidate = d + "/" + name;
        if (std::ifstream(candidate)) return candidate;
    }
    fail(from, line, "cannot find import '" + name + "'");
}

Schema parse(const std::string& path, bool check) {
    std::ifstream in(path);
    if (!in) fail(path, 0, "cannot read this schema");
    Schema s;
    std::string text;
    for (int line = 1; std::getline(in, text); ++line) {
        std::istringstream words(text.substr(0, text.find('#')));
        std::vector<std::string> w;
        for (std::string x; words >> x;) w.push_back(x);
        if (w.empty()) continue;
        if (w[0] == "package" && w.size() == 2) {
            s.package = w[1];
        } else if (w[0] == "import" && w.size() == 2) {
            s.imports.push_back(w[1]);
            parse(find_import(path, line, w[1]), false);
        } else if (w[0] == "message" && w.size() == 2) {
            if (check && !std::isupper(static_cast<unsigned char>(w[1][0])))
                fail(path, line, "message '" + w[1] + "' must start with an upper-case letter");
            s.messages.push_back({w[1], line, {}});
            known[w[1]] = s.package + "::" + w[1];
        } else if ((w.size() == 2 || (w.size() == 4 && w[2] == "=")) && !s.messages.empty()) {
            if (w[0] != "int" && w[0] != "string" && !known.count(w[0]))
                fail(path, line, "unknown type '" + w[0] + "'");
            for (char c : w[1])
                if (check && std::isupper(static_cast<unsigned char>(c)))
                    fail(path, line, "field '" + w[1] + "' must be lower_case");
            s.messages.back().fields.push_back({w[0], w[1], w.size() == 4 ? w[3] : "", line});
        } else {
            fail(path, line, "expected `package`, `import`, `message` or a field, got '" + w[0] + "'");
        }
    }
    if (s.package.empty()) fail(path, 1, "no `package` line");
    return s;
}

std::string header_of(const std::string& schema) {
    auto base = schema.substr(schema.rfind('/') + 1);
    return base.substr(0, base.rfind('.')) + ".h";
}

void emit(const Schema& s, std::ostream& out, bool describe) {
    out << "#pragma once\n#include <string>\n";
    for (const auto& i : s.imports) out << "#include \"" << header_of(i) << "\"\n";
    out << "namespace " << s.package << " {\n";
    for (const auto& m : s.messages) {
        out << "struct " << m.name << " {\n";
        for (const auto& f : m.fields) {
            std::string type = f.type == "int" ? "int" : f.type == "string" ? "std::string" : known[f.type];
            std::string init = f.value.empty() ? "" : f.type == "string" ? " = \"" + f.value + "\"" : " = " + f.value;
            out << "    " << type << " " << f.name << init << ";\n";
        }
        out << "};\n";
        if (!describe) continue;
        out << "inline std::string describe(const " << m.name << "& v) {\n    return std::string(\"" << m.name << "{\")";
        const char* sep = "";
        for (const auto& f : m.fields) {
            std::string value = f.type == "int" ? "std::to_string(v." + f.name + ")"
                              : f.type == "string" ? "v." + f.name : "describe(v." + f.name + ")";
            out << " + \"" << sep << f.name << "=\" + " << value;
            sep = ", ";
        }
        out << " + \"}\";\n}\n";
    }
    out << "}  // namespace " << s.package << "\n";
}

}  // namespace

int main(int argc, char** argv) {
    bool check = false, describe = false;
    std::string out, docs;
    std::vector<std::string> files;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--check") check = true;
        else if (a == "--describe") describe = true;
        else if (a == "-I" && i + 1 < argc) include_dirs.push_back(argv[++i]);
        else if (a == "-o" && i + 1 < argc) out = argv[++i];
        else if (a == "--docs" && i + 1 < argc) docs = argv[++i];
        else files.push_back(a);
    }
    if (files.empty() || (out.empty() == docs.empty()) || (!out.empty() && files.size() != 1)) {
        std::fprintf(stderr, "usage: schemac [-I DIR]... [--check|--describe] (-o OUT FILE | --docs DIR FILE...)\n");
        return 2;
    }
    for (const auto& file : files) {
        Schema s = parse(file, check);
        if (!docs.empty()) {
            for (const auto& m : s.messages) {
                std::ofstream page(docs + "/" + m.name + ".md");
                page << "# " << s.package << "." << m.name << "\n\n";
                for (const auto& f : m.fields) page << "- `" << f.type << " " << f.name << "`\n";
            }
        } else if (check) {
            std::ofstream(out) << "ok\n";
        } else {
            std::ofstream header(out);
            emit(s, header, describe);
        }
    }
    return 0;
}
