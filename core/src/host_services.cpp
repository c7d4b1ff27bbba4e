// The services the host hands every plugin (lapse_host): log, config,
// stacking, clock. Each callback is noexcept: nothing crosses the C ABI.
#include "backend_open.hpp"
#include "config_tree.hpp"
#include "loaded_library.hpp"

#include <lapse/core/error.hpp>
#include <lapse/sdk/error.hpp>

#include <cstddef>
#include <ctime>

namespace lapse::detail {

namespace {

// The fields of lapse_backend this host fills (all of ABI 1.0): a plugin
// built against a later minor may pass a longer struct, never a shorter one.
constexpr std::size_t backend_fields_written = offsetof(lapse_backend, host_handle) + sizeof(void*);

// What the host keeps in lapse_backend::host_handle for a stacked backend.
struct StackedBackend {
    OpenedBackend opened;
};

void host_log(const lapse_host* host, lapse_log_level level, const char* message) noexcept
{
    if (LoadedLibrary* library = LoadedLibrary::from_host(host)) library->log(level, message);
}

lapse_status host_open_backend(const lapse_host*, const lapse_config* node, lapse_backend* out,
                               lapse_error* error) noexcept
{
    if (node == nullptr || out == nullptr)
        return sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "open_backend: null node or out");
    if (out->struct_size < backend_fields_written)
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                          "open_backend: lapse_backend is %u bytes, shorter than the %zu this host fills",
                          out->struct_size, backend_fields_written);
    out->plugin = nullptr;
    out->device = nullptr;
    out->host_handle = nullptr;
    try {
        // Holds the node (and so the open it belongs to) while the stack below opens.
        NodeUse use(node);
        if (!use || use->context == nullptr) return node_gone(error, "open_backend");
        ConfigNode& config = *use;
        auto stacked = std::make_unique<StackedBackend>();
        stacked->opened = open_node(*config.context, config);
        out->plugin = stacked->opened.plugin;
        out->device = stacked->opened.device;
        out->host_handle = stacked.release();
        return LAPSE_OK;
    } catch (const Error& e) {
        return sdk::fail(error, e.status(), e.what());
    } catch (...) {
        return sdk::status_from_current_exception(error, "open_backend");
    }
}

void host_close_backend(const lapse_host*, lapse_backend* backend) noexcept
{
    if (backend == nullptr || backend->host_handle == nullptr) return;
    std::unique_ptr<StackedBackend> stacked(static_cast<StackedBackend*>(backend->host_handle));
    close_opened(stacked->opened);
    backend->host_handle = nullptr;
    backend->device = nullptr;
    backend->plugin = nullptr;
}

int64_t host_clock_ns(const lapse_host*) noexcept
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace

void fill_host_services(lapse_host& host) noexcept
{
    host.log = &host_log;
    host.config_string = &host_config_string;
    host.config_int = &host_config_int;
    host.config_double = &host_config_double;
    host.config_bool = &host_config_bool;
    host.config_child = &host_config_child;
    host.config_error = &host_config_error;
    host.open_backend = &host_open_backend;
    host.close_backend = &host_close_backend;
    host.clock_ns = &host_clock_ns;
}

}  // namespace lapse::detail
