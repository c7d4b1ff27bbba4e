// TEST DOUBLE — fake_cuda_driver: the model shared by its source files
// (streams, events, the clock, the host-function thread). See
// fake_cuda_driver.h for what it models and why it exists.
#pragma once

#include "fake_cuda_driver.h"

#include <time.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

struct CUctx_st {
    int device;
};
struct CUevent_st;

namespace fake_cuda {

typedef int CUresult;
typedef int CUdevice;
typedef void (*HostFn)(void*);

enum : CUresult {
    SUCCESS = 0,
    INVALID_VALUE = 1,
    NOT_INITIALIZED = 3,
    STUB_LIBRARY = 34,
    DEVICE_UNAVAILABLE = 46,
    NO_DEVICE = 100,
    INVALID_DEVICE = 101,
    INVALID_CONTEXT = 201,
    INVALID_HANDLE = 400,
    NOT_FOUND = 500,
    NOT_READY = 600,
    ILLEGAL_ADDRESS = 700,
    LAUNCH_FAILED = 719,
    SYSTEM_DRIVER_MISMATCH = 803,
    COMPAT_NOT_SUPPORTED_ON_DEVICE = 804,
    STREAM_CAPTURE_UNSUPPORTED = 900,
    STREAM_CAPTURE_IMPLICIT = 906,
    CAPTURED_EVENT = 907,
};

// The special stream handles of cuda.h.
inline CUstream_st* const kLegacyHandle = reinterpret_cast<CUstream_st*>(0x1);
inline CUstream_st* const kPerThreadHandle = reinterpret_cast<CUstream_st*>(0x2);
constexpr unsigned kNonBlocking = 1;  // CU_STREAM_NON_BLOCKING

inline int64_t host_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

struct Event {
    CUctx_st* ctx;
    bool recorded = false;
    bool stamped = false;   // reached by its stream
    bool captured = false;  // last recorded inside a stream capture
    int64_t stamp = 0;      // host ns at which it completes
};

struct Op {
    enum Kind { Kernel, Record, HostFunction } kind;
    int64_t ns = 0;
    Event* event = nullptr;
    HostFn fn = nullptr;
    void* data = nullptr;
};

struct Stream {
    CUctx_st* ctx = nullptr;
    unsigned flags = 0;
    bool legacy = false;        // the context's legacy default stream
    int64_t cursor = 0;         // host ns at which its last applied op completes
    bool held = false;          // fake_cuda_hold
    bool host_running = false;  // its front op is a host function the worker runs
    bool capturing = false;
    std::deque<Op> queued;      // ops behind a hold or a host function

    bool idle() const { return !held && !host_running && queued.empty(); }
};

constexpr int kMaxDevices = 4;

struct Driver {
    std::mutex mutex;
    std::condition_variable changed;  // any stream moved, a stall lifted
    int device_count = 1;
    int version = 13000;
    CUresult init_result = SUCCESS;
    bool initialised = false;
    bool hide_gpa = false;
    CUresult sticky = SUCCESS;
    bool stall_event_sync = false;
    std::map<std::string, std::pair<CUresult, int>> fail_next;
    CUctx_st primary[kMaxDevices] = {{0}, {1}, {2}, {3}};
    int retained[kMaxDevices] = {};
    Stream* legacy[kMaxDevices] = {};
    std::set<Stream*> streams;
    std::set<Event*> events;
    fake_cuda_counters counters{};

    // The device clock: offset + (host - epoch) * (1 + drift), in steps of
    // `resolution_ns`, as events are stamped on a real GPU.
    double drift_ppm = 20.0;
    int64_t resolution_ns = 500;
    int64_t epoch_ns = 0;
    int64_t device_offset_ns = 987654321000;

    // NVML's view, for the MIG check.
    int nvml_gpus = 1;
    int nvml_mig_enabled = 0;

    // The driver's host-function thread: one for the whole driver, so host
    // functions of different streams run one after another, as the real
    // driver may do.
    std::deque<Stream*> host_queue;
    std::atomic<int> host_queued{0};  // host_queue.size(), for the thread's poll
    std::thread worker;
    bool stopping = false;
    std::thread::id worker_id;

    Driver();
    ~Driver();
};

Driver& driver();

// The calling thread's current context.
CUctx_st* current();
std::vector<CUctx_st*>& context_stack();  // the calling thread's
int device_of(const CUctx_st* ctx);

// Injected failures and the sticky error first, then initialisation.
CUresult enter(Driver& d, const char* call, bool needs_init = true);

Stream* find_stream(Driver& d, CUstream_st* h);  // resolves the legacy handle
Event* find_event(Driver& d, CUevent_st* h);
bool complete(const Event& e, int64_t now);

// Queues or applies `op` on `s` in stream order, then advances it.
void enqueue(Driver& d, Stream& s, const Op& op);
// Applies what can run now; hands a host function at the front to the worker.
void advance(Driver& d, Stream& s);
void start_worker(Driver& d);

int64_t device_ns(const Driver& d, int64_t host);
void sleep_until(int64_t t);

}  // namespace fake_cuda
