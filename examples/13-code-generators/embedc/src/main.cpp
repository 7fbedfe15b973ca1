// embedc OUT.h OUT.cpp FILE...: turn data files into one header and one source, in one run.
// The header declares a table of assets; the source defines each file's bytes as an array.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: embedc OUT.h OUT.cpp FILE...\n");
        return 2;
    }
    std::string header = argv[1];
    std::ofstream h(header), cpp(argv[2]);
    h << "#pragma once\n#include <cstddef>\n"
         "struct EmbeddedAsset { const char* name; const unsigned char* data; std::size_t size; };\n"
         "extern const EmbeddedAsset embedded_assets[];\n"
         "extern const std::size_t embedded_asset_count;\n";
    cpp << "#include \"" << header.substr(header.rfind('/') + 1) << "\"\n";
    std::vector<std::string> names;
    std::vector<std::size_t> sizes;
    for (int i = 3; i < argc; ++i) {
        std::ifstream in(argv[i], std::ios::binary);
        if (!in) {
            std::fprintf(stderr, "%s: error: cannot read this asset\n", argv[i]);
            return 1;
        }
        std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        cpp << "static const unsigned char asset_" << i << "[] = {";
        for (unsigned char c : bytes) cpp << int(c) << ",";
        cpp << "0};\n";
        std::string path = argv[i];
        names.push_back(path.substr(path.rfind('/') + 1));
        sizes.push_back(bytes.size());
    }
    cpp << "const EmbeddedAsset embedded_assets[] = {\n";
    for (int i = 3; i < argc; ++i)
        cpp << "    {\"" << names[i - 3] << "\", asset_" << i << ", " << sizes[i - 3] << "},\n";
    cpp << "    {nullptr, nullptr, 0}\n};\n"
        << "const std::size_t embedded_asset_count = " << names.size() << ";\n";
    return h && cpp ? 0 : 1;
}
