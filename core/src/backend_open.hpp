// Internal: opening the backend a config node names, for the top of a
// stack (Runtime::open) and for every layer below it (the host's
// open_backend service). One OpenContext lives for one Runtime::open call;
// it holds the stack of layers being opened, so a cycle is refused with
// its path and a failure deep down names every layer on the way.
#pragma once

#include "config_tree.hpp"

#include <lapse/lapse.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace lapse::detail {

class LoadedLibrary;
struct RuntimeState;

struct OpenContext {
    std::shared_ptr<RuntimeState> runtime;
    std::vector<std::filesystem::path> search_path;
    bool allow_insecure = false;

    std::mutex mutex;
    struct Layer {
        const ConfigNode* node;
        std::string label;  // "vulkan (backend.inner)"
    };
    std::vector<Layer> stack;
    // The deepest failure seen: its message already names every layer.
    struct Failure {
        std::size_t depth;
        lapse_status status;
        std::string message;
    };
    std::optional<Failure> deepest;
};

struct OpenedBackend {
    const lapse_plugin* plugin = nullptr;
    lapse_device* device = nullptr;
    std::shared_ptr<LoadedLibrary> library;  // keeps the file loaded while the device lives
};

// Layers deeper than this are refused (a runaway stack, or a cycle the node
// identity check cannot see).
inline constexpr std::size_t max_stack_depth = 32;

// Opens the backend `node` names. Throws Error with the layered message.
OpenedBackend open_node(OpenContext& context, ConfigNode& node);

// Closes a device and then drops its file reference. Cannot fail.
void close_opened(OpenedBackend& backend) noexcept;

}  // namespace lapse::detail
