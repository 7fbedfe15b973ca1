#include <iostream>

#include "Scene.h"  // generated from schemas/scene.idl; includes shapes' generated Rect.h

int main() {
    Scene s;
    s.title = "demo";
    s.frame.corner = {3, 4};
    s.frame.width = 5;
    s.frame.height = 2;
    s.scale = 1.5;
    std::cout << s << "\n" << "linked with: " << SHAPES_LIBRARIES << "\n";
}
