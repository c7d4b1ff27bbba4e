// A busy loop whose length is set by an iteration count: the workload the
// tests and the demo time. Each invocation runs a chain of dependent
// integer operations the compiler cannot fold and stores the result, so
// the loop is not dead code.
//
// Long jobs are many workgroups of a short loop, not one long loop:
// llvmpipe/lavapipe caps loops at 65535 iterations (against runaway
// shaders), and a capped "20 ms" loop silently takes 0.5 ms. With
// LP_NUM_THREADS=0 lavapipe runs the workgroups one after another, so the
// time grows linearly with their number.
#version 450

layout(local_size_x = 1) in;

layout(push_constant) uniform Params {
    uint iterations;  // per invocation; keep well under 65535
} params;

layout(std430, binding = 0) buffer Sink {
    uint values[64];
} sink;

void main()
{
    uint x = gl_GlobalInvocationID.x * 2654435761u + 1u;
    for (uint i = 0u; i < params.iterations; ++i) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x = x * 1664525u + i;
    }
    sink.values[gl_GlobalInvocationID.x & 63u] = x;
}
