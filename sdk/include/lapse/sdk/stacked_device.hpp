// lapse SDK (C++) — the backend a stacking plugin wraps.
//
// A plugin that stacks on another backend (forward, fusion, a third party's
// layer) opens it from a child of its own config node through the host's
// open_backend service, calls it through its plugin table, and says which
// layer an error passed through. InnerBackend is that plumbing, once, and
// StackedDevice a base for the layer's device that holds it with the host
// and the stream count:
//
//   class MyLayer : public lapse::sdk::StackedDevice {
//   public:
//       static std::unique_ptr<MyLayer> open(lapse::sdk::Host host, lapse::sdk::Config config)
//       {
//           // ... read every key of your own first ...
//           auto inner = lapse::sdk::InnerBackend::open(host, config, "mylayer");
//           return std::make_unique<MyLayer>(host, std::move(inner));
//       }
//       MyLayer(lapse::sdk::Host host, lapse::sdk::InnerBackend inner)
//           : StackedDevice(host, std::move(inner)) {}
//       lapse_status sync(lapse_stream s, lapse_error* e) { return inner_.sync(s, e); }
//       ...
//   };
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
// - sync/submit/profile_start/profile_end/resolve call the inner backend
//   and put "<layer>: " in front of the message when the call failed: the
//   pass-through a layer makes most. A call whose failure the layer
//   interprets itself goes through plugin()/device().
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

// What a layer's profile_end passes on to the backend below: no options
// (NULL, the ABI's default, of which the callee reads nothing) unless there
// are flags to say, else `storage` filled with them. [any thread]
inline const lapse_end_options* end_options(uint32_t flags, lapse_end_options& storage) noexcept
{
    if (flags == 0) return nullptr;
    storage = lapse_end_options{sizeof(lapse_end_options), flags};
    return &storage;
}

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

    // The inner call, its failure's message prefixed with "<layer>: ".
    lapse_status sync(lapse_stream stream, lapse_error* error) const
    {
        return checked(plugin_->sync(device_, stream, error), error);
    }
    lapse_status submit(lapse_stream stream, lapse_work_fn fn, void* user, lapse_error* error) const
    {
        return checked(plugin_->submit(device_, stream, fn, user, error), error);
    }
    lapse_status profile_start(lapse_stream stream, lapse_token& token, lapse_error* error) const
    {
        return checked(plugin_->profile_start(device_, stream, &token, error), error);
    }
    lapse_status profile_end(lapse_token token, uint32_t flags, lapse_error* error) const
    {
        lapse_end_options options;
        return checked(plugin_->profile_end(device_, token, end_options(flags, options), error), error);
    }
    lapse_status resolve(const lapse_token* tokens, lapse_duration* out, uint32_t count, uint64_t timeout_ns,
                         lapse_error* error) const
    {
        return checked(plugin_->resolve(device_, tokens, out, count, timeout_ns, error), error);
    }

    // Closes the inner device now (a layer's close runs what it still holds
    // first, then lets the inner backend run and close).
    void reset() noexcept
    {
        backend_.reset();
        device_ = nullptr;
    }

private:
    lapse_status checked(lapse_status status, lapse_error* error) const noexcept
    {
        return status < 0 ? prefixed(status, error) : status;
    }

    Backend backend_;
    const char* layer_;
    const char* relation_;
    const lapse_plugin* plugin_;
    lapse_device* device_;
};

// A base for a layer's device: the host, the backend it wraps, and that
// backend's stream count and capabilities as it described them at open
// (the layer keeps state per stream, so the count is fixed for its life).
// The members are the layer's to use; the inner device closes when the
// layer is destroyed, after the layer's own members, unless the layer's
// destructor calls inner_.reset() first (it must, when the inner backend's
// close runs work that touches the layer's state).
class StackedDevice {
public:
    // The most streams a layer takes by default: it keeps state per stream,
    // so an absurd count from the inner backend is refused (naming it)
    // rather than spun on or allocated.
    static constexpr uint32_t kMaxStreams = 65536;

    StackedDevice(const StackedDevice&) = delete;
    StackedDevice& operator=(const StackedDevice&) = delete;

protected:
    // Describes the inner backend: throws sdk::Error as describe() does,
    // and when it claims more than `max_streams` streams.
    StackedDevice(Host host, InnerBackend inner, uint32_t max_streams = kMaxStreams)
        : host_(host), inner_(std::move(inner))
    {
        const lapse_device_info info = inner_.describe(max_streams);
        stream_count_ = info.stream_count;
        inner_caps_ = info.capabilities;
    }
    ~StackedDevice() = default;

    // For the layer's describe: asks the inner backend now and writes the
    // stream count and the name ("<layer>(<inner name>)") into `info`; the
    // layer derives the capabilities from the inner ones returned.
    uint64_t describe_layer(lapse_device_info& info) const
    {
        const lapse_device_info in = inner_.describe(UINT32_MAX, "describe");
        info.stream_count = in.stream_count;
        inner_.name(info, in);
        return in.capabilities;
    }

    // INVALID_ARGUMENT, "<layer>: <call>: stream N does not exist (the
    // device has M)".
    lapse_status no_such_stream(const char* call, lapse_stream stream, lapse_error* error) const noexcept
    {
        return failf(error, LAPSE_ERROR_INVALID_ARGUMENT, "%s: %s: stream %u does not exist (the device has %u)",
                     inner_.layer(), call, stream, stream_count_);
    }

    Host host_;
    InnerBackend inner_;
    uint32_t stream_count_ = 0;  // the inner backend's, at open
    uint64_t inner_caps_ = 0;    // the inner backend's capabilities, at open
};

}  // namespace lapse::sdk
