// TEST DOUBLE — fake_cuda_driver: the model (streams in order, the device
// clock, the legacy stream's implicit waits, the host-function thread).
#include "fake_cuda_state.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>

namespace fake_cuda {

namespace {
thread_local std::vector<CUctx_st*> t_context_stack;

void worker_loop(Driver& d)
{
    std::unique_lock<std::mutex> lock(d.mutex);
    for (;;) {
        // A driver's host-function thread that just ran is still awake: for
        // a moment it polls for the next call before it sleeps, so back-to-
        // back host functions do not each pay a wake-up.
        if (d.host_queue.empty() && !d.stopping) {
            lock.unlock();
            for (int64_t until = host_ns() + 2000000; d.host_queued.load() == 0 && host_ns() < until;) {
            }
            lock.lock();
        }
        d.changed.wait(lock, [&] { return d.stopping || !d.host_queue.empty(); });
        if (d.host_queue.empty()) return;  // stopping
        Stream* s = d.host_queue.front();
        d.host_queue.pop_front();
        --d.host_queued;
        if (d.streams.count(s) == 0 || s->queued.empty()) continue;
        Op op = s->queued.front();
        int64_t until = s->cursor;
        lock.unlock();
        sleep_until(until);
        lock.lock();
        // Documented: no host function runs after an error in its context.
        if (d.sticky == SUCCESS) {
            lock.unlock();
            op.fn(op.data);
            lock.lock();
            ++d.counters.host_functions_run;
        } else {
            ++d.counters.host_functions_dropped;
        }
        if (d.streams.count(s) != 0) {
            s->queued.pop_front();
            s->host_running = false;
            s->cursor = std::max(s->cursor, host_ns());
            advance(d, *s);
        }
        d.changed.notify_all();
    }
}

// When the legacy stream or a blocking stream may start its next op: after
// the other kind's work (CUDA's implicit synchronisation of the legacy
// default stream).
int64_t implicit_floor(Driver& d, const Stream& s)
{
    if (s.flags & kNonBlocking) return 0;
    int64_t floor = 0;
    if (s.legacy) {
        for (const Stream* o : d.streams)
            if (o->ctx == s.ctx && !o->legacy && !(o->flags & kNonBlocking)) floor = std::max(floor, o->cursor);
    } else if (const Stream* l = d.legacy[device_of(s.ctx)]) {
        floor = l->cursor;
    }
    return floor;
}

void apply(Driver& d, Stream& s, const Op& op)
{
    int64_t start = std::max({host_ns(), s.cursor, implicit_floor(d, s)});
    if (op.kind == Op::Kernel) {
        s.cursor = start + op.ns;
    } else if (op.kind == Op::Record && d.events.count(op.event) != 0 && op.event->recorded && !op.event->stamped) {
        op.event->stamp = start;
        op.event->stamped = true;
        s.cursor = start;
    }
}

}  // namespace

Driver::Driver()
{
    epoch_ns = host_ns();
    // For a program that cannot call the controls (the GPU program, the
    // check script over the double): what cuInit answers, e.g. 803.
    if (const char* r = std::getenv("FAKE_CUDA_INIT_RESULT")) init_result = std::atoi(r);
}

Driver::~Driver()
{
    {
        std::lock_guard<std::mutex> lock(mutex);
        stopping = true;
        host_queue.clear();
        host_queued = 0;
    }
    changed.notify_all();
    if (worker.joinable()) worker.join();
}

Driver& driver()
{
    static Driver d;
    return d;
}

CUctx_st* current() { return t_context_stack.empty() ? nullptr : t_context_stack.back(); }
std::vector<CUctx_st*>& context_stack() { return t_context_stack; }

int device_of(const CUctx_st* ctx) { return ctx != nullptr ? ctx->device : 0; }

CUresult enter(Driver& d, const char* call, bool needs_init)
{
    if (d.sticky != SUCCESS) return d.sticky;
    auto it = d.fail_next.find(call);
    if (it != d.fail_next.end() && it->second.second > 0) {
        --it->second.second;
        return it->second.first;
    }
    if (needs_init && !d.initialised) return NOT_INITIALIZED;
    return SUCCESS;
}

Stream* find_stream(Driver& d, CUstream_st* h)
{
    if (h == nullptr || h == kLegacyHandle) {
        CUctx_st* ctx = current();
        if (ctx == nullptr) return nullptr;
        Stream*& l = d.legacy[device_of(ctx)];
        if (l == nullptr) {
            l = new Stream();
            l->ctx = ctx;
            l->legacy = true;
            d.streams.insert(l);
        }
        return l;
    }
    if (h == kPerThreadHandle) return nullptr;  // not modelled
    auto* s = reinterpret_cast<Stream*>(h);
    return d.streams.count(s) != 0 ? s : nullptr;
}

Event* find_event(Driver& d, CUevent_st* h)
{
    auto* e = reinterpret_cast<Event*>(h);
    return d.events.count(e) != 0 ? e : nullptr;
}

bool complete(const Event& e, int64_t now) { return !e.recorded || (e.stamped && now >= e.stamp); }

void enqueue(Driver& d, Stream& s, const Op& op)
{
    if (s.idle() && op.kind != Op::HostFunction) {
        apply(d, s, op);
        return;
    }
    s.queued.push_back(op);
    advance(d, s);
}

void advance(Driver& d, Stream& s)
{
    while (!s.held && !s.host_running && !s.queued.empty()) {
        const Op& op = s.queued.front();
        if (op.kind == Op::HostFunction) {
            if (d.sticky != SUCCESS) {
                ++d.counters.host_functions_dropped;
                s.queued.pop_front();
                continue;
            }
            s.host_running = true;  // the worker pops it when done
            start_worker(d);
            d.host_queue.push_back(&s);
            ++d.host_queued;
            break;
        }
        apply(d, s, op);
        s.queued.pop_front();
    }
    d.changed.notify_all();
}

void start_worker(Driver& d)
{
    if (d.worker.joinable()) return;
    d.worker = std::thread([&d] { worker_loop(d); });
    d.worker_id = d.worker.get_id();
}

int64_t device_ns(const Driver& d, int64_t host)
{
    double t = static_cast<double>(host - d.epoch_ns) * (1.0 + d.drift_ppm * 1e-6);
    int64_t dev = d.device_offset_ns + static_cast<int64_t>(std::floor(t));
    return dev - dev % d.resolution_ns;
}

void sleep_until(int64_t t)
{
    // Sleeps, then spins the last stretch, as the real driver's default
    // scheduling spins while it waits: a sleep alone would wake the waiter
    // up to a scheduler tick late and the double would read as slow.
    constexpr int64_t kSpin = 200000;
    int64_t n = host_ns();
    if (t - n > kSpin) std::this_thread::sleep_for(std::chrono::nanoseconds(t - n - kSpin));
    while (host_ns() < t) std::this_thread::yield();
}

}  // namespace fake_cuda
