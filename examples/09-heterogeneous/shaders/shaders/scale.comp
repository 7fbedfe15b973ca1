#version 450
// Multiplies every element of the buffer by the push constant.
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Data { float v[]; };
layout(push_constant) uniform Push { float factor; };

void main()
{
    v[gl_GlobalInvocationID.x] *= factor;
}
