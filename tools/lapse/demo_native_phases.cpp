// GPU phases of the `lapse run` demo: the seam for backends whose streams
// carry a native context. A phase here should check for the extension it
// needs (e.g. device.extension("lapse.vulkan.commands/1")) and record its
// work through the `native` pointer submit hands it. None yet: the CPU
// phases run on every backend meanwhile.
#include "demo_workload.hpp"

namespace lapse::tool {

std::vector<DemoPhase> native_phases(Device& /*device*/) { return {}; }

}  // namespace lapse::tool
