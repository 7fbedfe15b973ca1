#include <cstdio>
#include <string>

#include "assets.h"       // embedc's header; its source is compiled via generated()
#include "schema_docs.h"  // written by an action that read the docs tree
#include "shape.h"        // schemac's header for shape.schema, which includes geo's point.h

int main() {
    for (std::size_t i = 0; i < embedded_asset_count; ++i) {
        const EmbeddedAsset& a = embedded_assets[i];
        std::string text(reinterpret_cast<const char*>(a.data), a.size);
        std::printf("asset %s (%zu bytes): %s", a.name, a.size, text.c_str());
    }
    std::printf("%s\n", describe(app::Rect{}).c_str());
    std::printf("%s\n", describe(app::Label{}).c_str());
    std::printf("docs: %s\n", SCHEMA_DOC_PAGES);
}
