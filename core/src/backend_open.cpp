#include "backend_open.hpp"

#include "loaded_library.hpp"
#include "plugin_search.hpp"
#include "plugin_text.hpp"
#include "runtime_state.hpp"

#include <lapse/core/error.hpp>
#include <lapse/sdk/error.hpp>

namespace lapse::detail {

namespace {

std::string chain(const std::vector<OpenContext::Layer>& stack, std::size_t depth)
{
    std::string out;
    for (std::size_t i = 0; i < depth && i < stack.size(); ++i) {
        if (i > 0) out += " -> ";
        out += stack[i].label;
    }
    return out;
}

// The error a layer at `depth` throws: the deeper failure's message when a
// layer below failed during this open (it names every layer already),
// else this layer's cause behind the chain of layers above it.
Error layered(OpenContext& context, std::size_t depth, lapse_status status, const std::string& cause)
{
    std::lock_guard lock(context.mutex);
    if (context.deepest && context.deepest->depth > depth)
        return Error(context.deepest->status, context.deepest->message);
    std::string message = depth > 1 ? chain(context.stack, depth) + ": " + cause : cause;
    context.deepest = OpenContext::Failure{depth, status, message};
    return Error(status, message);
}

void set_label(OpenContext& context, std::size_t depth, std::string label)
{
    std::lock_guard lock(context.mutex);
    if (depth >= 1 && depth <= context.stack.size()) context.stack[depth - 1].label = std::move(label);
}

}  // namespace

OpenedBackend open_node(OpenContext& context, ConfigNode& node)
{
    std::size_t depth = 0;
    {
        std::lock_guard lock(context.mutex);
        for (const auto& layer : context.stack) {
            if (layer.node != &node) continue;
            // A layer asked to open a node that is already being opened
            // below it: opening it would recurse forever. The position is
            // that of the table asked for again, which closes the cycle.
            std::string path = chain(context.stack, context.stack.size()) + " -> " + layer.label;
            std::string message = node_location(node, nullptr) + ": cycle in the backend stack: " + path;
            context.deepest = OpenContext::Failure{context.stack.size() + 1, LAPSE_ERROR_CONFIG, message};
            throw Error(LAPSE_ERROR_CONFIG, message);
        }
        if (context.stack.size() >= max_stack_depth) {
            // The position is that of the first table past the limit.
            std::string message = node_location(node, nullptr) + ": backend stack deeper than " +
                                  std::to_string(max_stack_depth) + " layers (a cycle?): " +
                                  chain(context.stack, context.stack.size()) + " -> " + node.path;
            context.deepest = OpenContext::Failure{context.stack.size() + 1, LAPSE_ERROR_CONFIG, message};
            throw Error(LAPSE_ERROR_CONFIG, message);
        }
        context.stack.push_back({&node, "(" + node.path + ")"});
        depth = context.stack.size();
    }
    struct Pop {
        OpenContext& c;
        ~Pop()
        {
            std::lock_guard lock(c.mutex);
            c.stack.pop_back();
        }
    } pop{context};

    try {
        BackendEntry entry = read_backend_entry(node);
        set_label(context, depth, entry.plugin + " (" + node.path + ")");
        std::string where = entry.plugin_at + ": " + node.path + ".plugin";
        std::filesystem::path file = resolve_plugin(entry.plugin, document_base_dir(*node.doc), context.search_path, where);
        std::optional<PinnedHash> pin;
        if (entry.sha256) pin = parse_sha256_pin(*entry.sha256, entry.sha256_at + ": " + node.path + ".sha256");
        check_file_trust(file, context.allow_insecure || entry.allow_insecure, where);

        std::shared_ptr<LoadedLibrary> library =
            LoadedLibrary::load(file, context.runtime->logger, pin ? &*pin : nullptr);
        const lapse_plugin& plugin = library->descriptor();
        set_label(context, depth, library->name() + " (" + node.path + ")");

        lapse_device* device = nullptr;
        lapse_error error = sdk::make_error();
        lapse_status status = LAPSE_ERROR_INTERNAL;
        std::string thrown;
        try {
            status = plugin.open(library->host(), node.as_config(), &device, &error);
        } catch (const std::exception& e) {
            thrown = std::string("open threw a C++ exception across the C ABI: ") + e.what();
        } catch (...) {
            thrown = "open threw a non-standard C++ exception across the C ABI";
        }
        if (!thrown.empty()) throw Error(LAPSE_ERROR_INTERNAL, library->path().string() + ": " + thrown);
        if (status < 0 || device == nullptr) {
            std::string cause = !error_text(error).empty() ? std::string(error_text(error)) : lapse_status_name(status);
            if (status >= 0) {
                status = LAPSE_ERROR_INTERNAL;
                cause = "open returned " + std::string(lapse_status_name(status)) + " but no device";
            }
            throw Error(status, cause);
        }
        OpenedBackend opened{&plugin, device, library};
        std::string unknown = unknown_key_error(node, library->name());
        if (!unknown.empty()) {
            close_opened(opened);
            throw Error(LAPSE_ERROR_CONFIG, unknown);
        }
        {
            // A failure below was handled by this layer (it opened anyway).
            std::lock_guard lock(context.mutex);
            if (context.deepest && context.deepest->depth > depth) context.deepest.reset();
        }
        return opened;
    } catch (const Error& e) {
        throw layered(context, depth, e.status(), e.what());
    }
}

void close_opened(OpenedBackend& backend) noexcept
{
    if (backend.device != nullptr && backend.plugin != nullptr) {
        try {
            backend.plugin->close(backend.device);
        } catch (...) {
            // close cannot fail; a plugin that throws here is broken, and the
            // host keeps running.
        }
    }
    backend.device = nullptr;
    backend.library.reset();  // after close: the code must stay mapped until then
}

}  // namespace lapse::detail
