#version 450
// The same stem in another directory: `shader_app::shaders::a::scale_comp()`, a second blob.
// Scales and offsets, so its module differs from the one above.
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Data { float v[]; };
layout(push_constant) uniform Push { float factor; float offset; };

void main()
{
    uint i = gl_GlobalInvocationID.x;
    v[i] = v[i] * factor + offset;
}
