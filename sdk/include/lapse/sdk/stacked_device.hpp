// lapse SDK (C++) — the backend a stacking plugin wraps.
//
// A plugin that stacks on another backend (forward, fusion, a third party's
// layer) opens it from a child of its own config node through the host's
// open_backend service, calls it through its plugin table, and says which
// layer an error passed through. InnerBackend is that plumbing, once:
//
//   static std::unique_ptr<MyLayer> open(lapse::sdk::Host host, lapse::sdk::Config config)
//   {
//       // ... read every key of your own first ...
//       auto inner = lapse::sdk::InnerBackend::open(host, config, "mylayer");
//       return std::make_unique<MyLayer>(std::move(inner));
//   }
//   lapse_status MyLayer::sync(lapse_stream s, lapse_error* e)
//   {
//       return inner_.prefixed(inner_.plugin()->sync(inner_.device(), s, e), e);
//   }
//
// - open() reads the `inner` child (required: a config without it is
//   refused naming the key) and opens it; the host's message already names
//   every layer on the way down, so it passes through unchanged.
// - plugin() / device() are cached for the hot path: one load each.
// - describe() asks the inner backend, with `max_streams` refusing an absurd
//   stream count (the layer keeps state per stream) naming the inner plugin.
// - prefixed() puts "<layer>: " in front of an inner error's message.
// - abandon() calls the inner abandon and swallows what an inner plugin
//   built without the SDK may throw (abandon cannot fail, and a throw out of
//   a noexcept caller terminates the host).
// - name() writes "<layer>(<inner name>)" for the layer's describe.
//
// Thread safety: open() and the destructor as a device's open and close;
// everything else [thread-safe], as the inner calls it makes.
#pragma once

#include <lapse/plugin.h>
#include <lapse/sdk/error.hpp>
#include <lapse/sdk/host.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

namespace lapse::sdk {

class InnerBackend {
public:
    // Opens the backend `config`'s `inner` child names. `layer` is the
    // wrapping plugin's name and `relation` what it does to the backend
    // ("stacks on", "batches for"), both for messages and both strings that
    // outlive the device (literals).
    static InnerBackend open(Host host, const Config& config, const char* layer, const char* relation = "stacks on")
    {
        Config inner = config.child("inner");
        if (!inner)
            config.reject("inner", std::string(layer) + " needs the backend it " + relation +
                                       ": inner = { plugin = \"...\" }");
        return InnerBackend(host.open_backend(inner.node()), layer, relation);
    }

    InnerBackend(Backend backend, const char* layer, const char* relation = "stacks on") noexcept
        : backend_(std::move(backend)), layer_(layer), relation_(relation), plugin_(&backend_.plugin()),
          device_(backend_.device())
    {
    }
    InnerBackend(InnerBackend&& other) noexcept
        : backend_(std::move(other.backend_)), layer_(other.layer_), relation_(other.relation_),
          plugin_(other.plugin_), device_(other.device_)
    {
        other.device_ = nullptr;
    }
    InnerBackend& operator=(InnerBackend&&) = delete;
    InnerBackend(const InnerBackend&) = delete;
    InnerBackend& operator=(const InnerBackend&) = delete;

    const lapse_plugin* plugin() const noexcept { return plugin_; }
    lapse_device* device() const noexcept { return device_; }
    const char* layer() const noexcept { return layer_; }

    // The inner device's info, its name NUL-terminated. Throws sdk::Error
    // ("<layer>: <what>: <inner message>"), and LAPSE_ERROR_UNSUPPORTED when
    // it claims more than `max_streams` streams.
    lapse_device_info describe(uint32_t max_streams = UINT32_MAX, const char* what = "describing the inner backend") const
    {
        lapse_device_info info{};
        info.struct_size = sizeof info;
        lapse_error error = make_error();
        const lapse_status status = plugin_->describe(device_, &info, &error);
        if (status < 0) throw Error(status, std::string(layer_) + ": " + what + ": " + error.message);
        info.name[sizeof info.name - 1] = '\0';
        if (info.stream_count > max_streams)
            throw Error(LAPSE_ERROR_UNSUPPORTED, std::string(layer_) + ": the inner backend '" + plugin_->name + "' (" +
                                                     info.name + ") claims " + std::to_string(info.stream_count) +
                                                     " streams; " + layer_ + " " + relation_ + " at most " +
                                                     std::to_string(max_streams));
        return info;
    }

    // "<layer>: " in front of the message an inner call wrote; returns `status`.
    lapse_status prefixed(lapse_status status, lapse_error* error) const noexcept
    {
        prefix_error(error, layer_);
        return status;
    }

    // The inner abandon, which never throws out of here.
    void abandon(lapse_token token) const noexcept
    {
        try {
            plugin_->profile_abandon(device_, token);
        } catch (...) {
            // An inner plugin built without the SDK may throw; abandon cannot fail.
        }
    }

    // Writes "<layer>(<inner name>)" into `info.name`, truncating the inner name.
    void name(lapse_device_info& info, const lapse_device_info& inner) const noexcept
    {
        const int room = static_cast<int>(sizeof info.name) - static_cast<int>(std::char_traits<char>::length(layer_)) - 3;
        std::snprintf(info.name, sizeof info.name, "%s(%.*s)", layer_, room > 0 ? room : 0, inner.name);
    }

    // Closes the inner device now (a layer's close runs what it still holds
    // first, then lets the inner backend run and close).
    void reset() noexcept
    {
        backend_.reset();
        device_ = nullptr;
    }

private:
    Backend backend_;
    const char* layer_;
    const char* relation_;
    const lapse_plugin* plugin_;
    lapse_device* device_;
};

}  // namespace lapse::sdk
