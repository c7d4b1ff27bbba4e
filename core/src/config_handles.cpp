// The table behind lapse_config handles (config_tree.hpp): ids never
// reused, a use count per node, and a node's destructor waiting until no
// service call uses it any more.
#include "config_tree.hpp"

#include <lapse/sdk/error.hpp>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace lapse::detail {

namespace {

struct HandleTable {
    std::mutex mutex;
    std::condition_variable released;
    std::unordered_map<std::uintptr_t, ConfigNode*> nodes;
    std::uintptr_t next_id = 1;
};

HandleTable& handle_table()
{
    static auto* t = new HandleTable();  // never destroyed: a plugin may call at exit
    return *t;
}

}  // namespace

ConfigNode::ConfigNode()
{
    HandleTable& t = handle_table();
    std::lock_guard lock(t.mutex);
    const std::uintptr_t id = t.next_id++;
    t.nodes.emplace(id, this);
    handle = reinterpret_cast<const lapse_config*>(id);
}

ConfigNode::~ConfigNode()
{
    HandleTable& t = handle_table();
    std::unique_lock lock(t.mutex);
    t.nodes.erase(reinterpret_cast<std::uintptr_t>(handle));
    t.released.wait(lock, [this] { return users == 0; });
}

NodeUse::NodeUse(const lapse_config* config) noexcept
{
    if (config == nullptr) return;
    HandleTable& t = handle_table();
    std::lock_guard lock(t.mutex);
    auto it = t.nodes.find(reinterpret_cast<std::uintptr_t>(config));
    if (it == t.nodes.end()) return;
    node_ = it->second;
    ++node_->users;
}

NodeUse::~NodeUse()
{
    if (node_ == nullptr) return;
    HandleTable& t = handle_table();
    {
        std::lock_guard lock(t.mutex);
        --node_->users;
    }
    t.released.notify_all();
}

lapse_status node_gone(lapse_error* error, const char* call) noexcept
{
    return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                      "%s: the config node is no longer valid (a node lives only during the open call that "
                      "received it)",
                      call);
}

}  // namespace lapse::detail
