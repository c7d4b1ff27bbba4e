// TEST DOUBLE of a Vulkan plugin from another build: lapse_vulkan.so itself
// (opened with dlopen and passed through call for call), except that its
// lapse.vulkan.commands/1 table comes back with another struct_size, as a
// plugin built against a later or an earlier minor of the ABI would hand it
// out. Built once per shape (tests/vulkan/CMakeLists.txt):
//
//   LAPSE_RESIZED_LONGER             the table plus trailing members this
//                                    build does not know (a pattern no
//                                    reader may use)
//   LAPSE_RESIZED_LAST_MEMBER=name   the table ending right after member
//                                    `name`; the members past it, absent,
//                                    are zeroed
//
// Only the struct_size and the bytes past it differ: every call still
// reaches the real plugin, so what a reader accepts works on lavapipe.
#include <lapse/lapse.h>
#include <lapse/vulkan.h>

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(LAPSE_RESIZED_LONGER) == defined(LAPSE_RESIZED_LAST_MEMBER)
#error "build with -DLAPSE_RESIZED_LONGER or -DLAPSE_RESIZED_LAST_MEMBER=<member>"
#endif

namespace {

// The commands table as a plugin of a later minor would lay it out.
struct LongerCommands {
    lapse_vulkan_commands known;
    uint64_t later_members[4];
};

// lapse_vulkan.so, kept open while this file is loaded.
struct InnerPlugin {
    void* file = nullptr;
    const lapse_plugin* descriptor = nullptr;
    ~InnerPlugin()
    {
        if (file != nullptr) dlclose(file);
    }
};

InnerPlugin inner;
lapse_plugin descriptor;

LongerCommands resize(const lapse_vulkan_commands& real)
{
    LongerCommands t{};
    std::memcpy(&t.known, &real, sizeof t.known);
#if defined(LAPSE_RESIZED_LONGER)
    for (uint64_t& m : t.later_members) m = 0xdeadbeefdeadbeefull;
    t.known.struct_size = sizeof(LongerCommands);
#else
    constexpr std::size_t size = offsetof(lapse_vulkan_commands, LAPSE_RESIZED_LAST_MEMBER) +
                                 sizeof(lapse_vulkan_commands::LAPSE_RESIZED_LAST_MEMBER);
    std::memset(reinterpret_cast<unsigned char*>(&t.known) + size, 0, sizeof t.known - size);
    t.known.struct_size = size;
#endif
    return t;
}

const void* resized_get_extension(lapse_device* device, const char* id)
{
    const void* found = inner.descriptor->get_extension(device, id);
    if (found == nullptr || id == nullptr || std::strcmp(id, LAPSE_VULKAN_COMMANDS_ID) != 0) return found;
    // The Vulkan plugin hands every device the same static table.
    static const LongerCommands resized = resize(*static_cast<const lapse_vulkan_commands*>(found));
    return &resized;
}

}  // namespace

LAPSE_PLUGIN_ENTRY
{
    inner.file = dlopen(LAPSE_VULKAN_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    auto entry = inner.file != nullptr
                     ? reinterpret_cast<lapse_plugin_entry_fn>(dlsym(inner.file, "lapse_plugin_entry_v1"))
                     : nullptr;
    if (entry == nullptr) {
        host->log(host, LAPSE_LOG_ERROR, "resized commands test double: cannot open " LAPSE_VULKAN_PLUGIN_PATH);
        return nullptr;
    }
    inner.descriptor = entry(host);  // it said why itself if it refused
    if (inner.descriptor == nullptr) return nullptr;
    std::memcpy(&descriptor, inner.descriptor, sizeof descriptor);
    descriptor.get_extension = &resized_get_extension;
    return &descriptor;
}
