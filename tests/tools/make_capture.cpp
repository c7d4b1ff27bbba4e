// Writes a capture of N windows for the export and report speed figures
// (docs/performance.md): the CPU plugin on 2 streams, 8 names, every
// window recorded (policy block), as `lapse bench` writes its big capture.
// Usage: make_capture FILE N
#include <lapse/core.hpp>

#include <cstdlib>
#include <iostream>
#include <string>

int main(int argc, char** argv)
{
    if (argc != 3) {
        std::cerr << "usage: make_capture FILE N\n";
        return 2;
    }
    const unsigned long long n = std::strtoull(argv[2], nullptr, 10);
    static const char* const names[] = {"frame", "upload", "draw", "compute", "copy", "resolve", "present", "wait"};
    try {
        lapse::Runtime runtime;
        lapse::Device dev =
            runtime.open(lapse::Config::from_string("[backend]\nplugin = \"cpu\"\nstreams = 2\n", "<make_capture>", {}));
        lapse::CaptureOptions o;
        o.path = argv[1];
        o.policy = lapse::CapturePolicy::block;
        auto capture = lapse::Capture::open(o);
        dev.record_into(capture);
        for (unsigned long long i = 0; i < n; ++i) dev.profile(i & 1, [] {}, {.name = names[i & 7]});
        dev.close();
        capture->close();
    } catch (const std::exception& e) {
        std::cerr << "make_capture: " << e.what() << '\n';
        return 1;
    }
    return 0;
}
