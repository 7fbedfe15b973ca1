// idlc: a small schema compiler.
//
//   idlc -o DIR SCHEMA...           one DIR/<Struct>.h and DIR/<Struct>.cpp per struct: the names
//                                   come from the schema, so DIR is a tree output of the action
//   idlc --check-main FILE SCHEMA...  FILE: a program that checks data files against the schemas
//
// A schema is lines of `struct Name {`, `type field`, `}` and `use Name` (a struct of another
// schema, whose header the generated code includes). Types: int, double, string, or a struct.
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

struct Field { std::string type, name; };
struct Struct { std::string name; std::vector<Field> fields; };

static int fail(const std::string& where, const std::string& what) {
    std::fprintf(stderr, "%s: error: %s\n", where.c_str(), what.c_str());
    return 1;
}

static bool builtin(const std::string& t) { return t == "int" || t == "double" || t == "string"; }

static int parse(const std::string& path, std::vector<Struct>& out, std::vector<std::string>& used) {
    std::ifstream in(path);
    if (!in) return fail(path, "cannot read");
    std::string line;
    Struct* open = nullptr;
    for (int n = 1; std::getline(in, line); ++n) {
        std::istringstream words(line);
        std::string a, b, c;
        words >> a >> b >> c;
        std::string where = path + ":" + std::to_string(n);
        if (a.empty() || a[0] == '#') continue;
        if (a == "use") { used.push_back(b); continue; }
        if (a == "struct") {
            if (open) return fail(where, "struct inside struct");
            if (b.empty() || c != "{") return fail(where, "expected `struct Name {`");
            out.push_back({b, {}});
            open = &out.back();
            continue;
        }
        if (a == "}") { open = nullptr; continue; }
        if (!open) return fail(where, "field outside a struct");
        if (b.empty()) return fail(where, "expected `type name`");
        out.back().fields.push_back({a, b});
    }
    if (open) return fail(path, "struct `" + open->name + "` is not closed");
    return 0;
}

static std::string cxx_type(const std::string& t) {
    return t == "string" ? "std::string" : t;
}

static bool write(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    return bool(out);
}

static int emit_types(const std::string& dir, const std::vector<Struct>& all) {
    for (const Struct& s : all) {
        std::string h = "#pragma once\n#include <ostream>\n#include <string>\n";
        for (const Field& f : s.fields)
            if (!builtin(f.type)) h += "#include \"" + f.type + ".h\"\n";
        h += "\nstruct " + s.name + " {\n";
        for (const Field& f : s.fields)
            h += "    " + cxx_type(f.type) + " " + f.name + (builtin(f.type) && f.type != "string" ? "{};\n" : ";\n");
        h += "};\n\nstd::ostream& operator<<(std::ostream& os, const " + s.name + "& v);\n";
        std::string c = "#include \"" + s.name + ".h\"\n\nstd::ostream& operator<<(std::ostream& os, const " +
                        s.name + "& v) {\n    os << \"" + s.name + "{\";\n";
        for (size_t i = 0; i < s.fields.size(); ++i) {
            const Field& f = s.fields[i];
            std::string value = f.type == "string" ? "'\"' << v." + f.name + " << '\"'" : "v." + f.name;
            c += "    os << \"" + std::string(i ? ", " : "") + f.name + "=\" << " + value + ";\n";
        }
        c += "    return os << \"}\";\n}\n";
        if (!write(dir + "/" + s.name + ".h", h) || !write(dir + "/" + s.name + ".cpp", c))
            return fail(dir, "cannot write");
    }
    return 0;
}

static int emit_checker(const std::string& file, const std::vector<Struct>& all) {
    std::string c = "// Checks data files against the schemas: each line `Struct field=value ...`.\n"
                    "#include <cstdio>\n#include <cstdlib>\n#include <fstream>\n#include <map>\n"
                    "#include <sstream>\n#include <string>\n\n"
                    "static const std::map<std::string, std::map<std::string, std::string>> kSchema = {\n";
    for (const Struct& s : all) {
        c += "    {\"" + s.name + "\", {";
        for (const Field& f : s.fields) c += "{\"" + f.name + "\", \"" + f.type + "\"}, ";
        c += "}},\n";
    }
    c += "};\n\n"
         "int main(int argc, char** argv) {\n"
         "    if (argc != 2) { std::fprintf(stderr, \"usage: check DATA\\n\"); return 2; }\n"
         "    std::ifstream in(argv[1]);\n"
         "    std::string line, name = std::string(argv[1]).substr(std::string(argv[1]).rfind('/') + 1);\n"
         "    int records = 0;\n"
         "    for (int n = 1; std::getline(in, line); ++n) {\n"
         "        std::istringstream words(line);\n"
         "        std::string type, kv;\n"
         "        if (!(words >> type) || type[0] == '#') continue;\n"
         "        auto s = kSchema.find(type);\n"
         "        if (s == kSchema.end()) { std::printf(\"%s:%d: unknown struct %s\\n\", name.c_str(), n, type.c_str()); return 1; }\n"
         "        while (words >> kv) {\n"
         "            auto eq = kv.find('=');\n"
         "            auto f = s->second.find(kv.substr(0, eq));\n"
         "            if (eq == std::string::npos || f == s->second.end()) {\n"
         "                std::printf(\"%s:%d: %s has no field %s\\n\", name.c_str(), n, type.c_str(), kv.substr(0, eq).c_str());\n"
         "                return 1;\n"
         "            }\n"
         "            char* end = nullptr;\n"
         "            std::string value = kv.substr(eq + 1);\n"
         "            if (f->second == \"int\") std::strtol(value.c_str(), &end, 10);\n"
         "            if (f->second == \"double\") std::strtod(value.c_str(), &end);\n"
         "            if (end && (*end || value.empty())) {\n"
         "                std::printf(\"%s:%d: %s.%s is not %s\\n\", name.c_str(), n, type.c_str(), f->first.c_str(), f->second.c_str());\n"
         "                return 1;\n"
         "            }\n"
         "        }\n"
         "        ++records;\n"
         "    }\n"
         "    std::printf(\"%s: %d records\\n\", name.c_str(), records);\n"
         "    return 0;\n"
         "}\n";
    return write(file, c) ? 0 : fail(file, "cannot write");
}

int main(int argc, char** argv) {
    if (argc < 4 || (std::string(argv[1]) != "-o" && std::string(argv[1]) != "--check-main")) {
        std::fprintf(stderr, "usage: idlc -o DIR SCHEMA... | idlc --check-main FILE SCHEMA...\n");
        return 2;
    }
    std::vector<Struct> all;
    std::vector<std::string> used;
    for (int i = 3; i < argc; ++i)
        if (int rc = parse(argv[i], all, used)) return rc;
    for (const Struct& s : all)
        for (const Field& f : s.fields) {
            bool known = builtin(f.type);
            for (const Struct& t : all) known = known || t.name == f.type;
            for (const std::string& u : used) known = known || u == f.type;
            if (!known) return fail(s.name, "field `" + f.name + "` has unknown type `" + f.type + "`");
        }
    return std::string(argv[1]) == "-o" ? emit_types(argv[2], all) : emit_checker(argv[2], all);
}
