// Loads lapse_vulkan.so with dlopen (once per process) and opens devices on
// it through a TestHost (the shared test double of the host, tests/support):
// the plugin-level view of the ABI, with no core library in between.
#pragma once

#include <lapse/lapse.h>
#include <lapse/vulkan.h>
#include <lapse_test/test_host.hpp>

#include <cstdint>
#include <ctime>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace lapse::test {

// The plugin's descriptor; the library stays loaded for the process.
inline const lapse_plugin& vulkan_plugin()
{
    static TestHost entry_host;
    static const lapse_plugin* plugin = [] {
        const lapse_plugin* p = process_plugin_entry(LAPSE_VULKAN_PLUGIN_PATH)(entry_host.get());
        if (p == nullptr) throw std::runtime_error("the entry point refused the host");
        return p;
    }();
    return *plugin;
}

// An open device with its host. close() returns the host so that a test
// can check the log after everything (validation messages at destroy
// time included) has been said.
class OpenDevice {
public:
    explicit OpenDevice(TestHost::Config config) : host_(std::make_unique<TestHost>(std::move(config)))
    {
        lapse_error e = make_error();
        status_ = plugin().open(host_->get(), host_->node(), &device_, &e);
        message_ = e.message;
    }
    ~OpenDevice() { close(); }
    OpenDevice(const OpenDevice&) = delete;
    OpenDevice& operator=(const OpenDevice&) = delete;

    const lapse_plugin& plugin() const { return vulkan_plugin(); }
    lapse_device* get() const { return device_; }
    lapse_status open_status() const { return status_; }
    const std::string& open_message() const { return message_; }
    TestHost& host() { return *host_; }

    const lapse_vulkan_commands* commands() const
    {
        auto* c = static_cast<const lapse_vulkan_commands*>(plugin().get_extension(device_, LAPSE_VULKAN_COMMANDS_ID));
        return (c != nullptr && c->struct_size >= sizeof(lapse_vulkan_commands)) ? c : nullptr;
    }
    uint64_t validation_messages() const { return commands() ? commands()->validation_message_count(device_) : 0; }

    lapse_device_info describe() const
    {
        lapse_device_info info{};
        info.struct_size = sizeof info;
        lapse_error e = make_error();
        if (plugin().describe(device_, &info, &e) != LAPSE_OK) throw std::runtime_error(e.message);
        return info;
    }

    lapse_status start(lapse_stream s, lapse_token& t, lapse_error* e = nullptr) const
    {
        return plugin().profile_start(device_, s, &t, e);
    }
    lapse_status end(lapse_token t, lapse_error* e = nullptr, uint32_t flags = 0) const
    {
        lapse_end_options o{sizeof(lapse_end_options), flags};
        return plugin().profile_end(device_, t, &o, e);
    }
    lapse_status sync(lapse_stream s, lapse_error* e = nullptr) const { return plugin().sync(device_, s, e); }
    lapse_status resolve(const lapse_token* t, lapse_duration* d, uint32_t n, uint64_t timeout,
                         lapse_error* e = nullptr) const
    {
        return plugin().resolve(device_, t, d, n, timeout, e);
    }
    lapse_status resolve_one(lapse_token t, lapse_duration& d, uint64_t timeout = LAPSE_WAIT_FOREVER,
                             lapse_error* e = nullptr) const
    {
        d = make_duration();
        return resolve(&t, &d, 1, timeout, e);
    }
    template <class F>
    lapse_status submit(lapse_stream s, F& f, lapse_error* e = nullptr) const
    {
        return plugin().submit(
            device_, s, [](void* user, void* native) { (*static_cast<F*>(user))(static_cast<VkCommandBuffer>(native)); },
            &f, e);
    }

    void close()
    {
        if (device_ != nullptr) plugin().close(device_);
        device_ = nullptr;
    }

private:
    std::unique_ptr<TestHost> host_;
    lapse_device* device_ = nullptr;
    lapse_status status_ = LAPSE_OK;
    std::string message_;
};

// The config every test starts from: validation on, so any message fails.
inline TestHost::Config base_config(TestHost::Config extra = {})
{
    TestHost::Config c{{"validation", true}};
    for (auto& [k, v] : extra) c[k] = v;
    return c;
}

}  // namespace lapse::test
