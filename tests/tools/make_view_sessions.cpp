// Writes the sessions the HTML report test opens in a browser:
//   small.lapse  19 known windows: thread 7 (5 system windows, nested),
//                stream 0 (10 device windows on the host clock, two
//                overlapping), stream 1 (4 windows on its device clock),
//                plus one failed and one not-measured window;
//   base.lapse   the same names, stream 0 about 10 % faster (a diff view);
//   big.lapse    1,000,000 device windows on 4 streams.
// Usage: make_view_sessions DIR
#include "session_maker.hpp"

#include <iostream>

using namespace lapse;
using namespace lapse::test;

int main(int argc, char** argv)
{
    if (argc != 2) {
        std::cerr << "usage: make_view_sessions DIR\n";
        return 2;
    }
    const std::filesystem::path dir = argv[1];
    constexpr int64_t t = 43'200'000'000'000;
    Session small;
    small.set_backend({"cpu", "0.1.0", "test device", 2, 0});
    small.add(make_window("frame", 7, 0, TimingMethod::system, ClockDomain::host_monotonic, t, t + 900'000));
    for (int i = 0; i < 4; ++i)
        small.add(make_window("step", 7, 0, TimingMethod::system, ClockDomain::host_monotonic, t + 10'000 + i * 200'000,
                              t + 150'000 + i * 200'000));
    for (int i = 0; i < 10; ++i)
        small.add(device_window("kernel <b>", 0, t + i * 80'000, t + i * 80'000 + 60'000 + (i == 3 ? 40'000 : 0)));
    for (int i = 0; i < 4; ++i)
        small.add(make_window("copy", 1, 1, TimingMethod::device, ClockDomain::device, 5'000 + i * 1'000, 5'500 + i * 1'000));
    WindowRecord failed;
    failed.name = "kernel <b>";
    failed.method = TimingMethod::device;
    failed.state = DurationState::failed;
    small.add(failed);
    WindowRecord lost;
    lost.name = "step";
    lost.method = TimingMethod::system;
    small.add(lost);
    small.save(dir / "small.lapse");

    std::mt19937_64 rng(1);
    Session base;
    add_serial_windows(base, rng, "kernel <b>", 0, 50, 54'000, 1'000, t);
    add_serial_windows(base, rng, "copy", 1, 50, 500, 10, 5'000);
    base.save(dir / "base.lapse");

    Session big;
    for (Stream s = 0; s < 4; ++s)
        add_serial_windows(big, rng, "kernel_" + std::to_string(s), s, 250'000, 20'000, 2'000, t);
    big.save(dir / "big.lapse");
    return 0;
}
