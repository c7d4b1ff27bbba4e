/* The window rules of the conformance suite (tests/conformance), through the
 * C host API, on the backend that LAPSE_CONFIG names (read by
 * lapse_host_config_default, as any C host would). Exits 77 when that
 * backend is unavailable here. Strict C99. */
#include "c_host_test.h"

#include <pthread.h>

static lapse_host_device_info info;

static int has(uint64_t cap) { return (info.capabilities & cap) == cap; }
static int device_clock(void) { return has(LAPSE_CAP_DEVICE_CLOCK); }
/* Without a device clock every window is a system-time one: those nest,
 * overlap and split by construction. */
static int supports(uint64_t cap) { return !device_clock() || has(cap); }
static lapse_stream other_stream(void) { return info.stream_count > 1 ? 1 : 0; }

static void start(lapse_host_device* dev, lapse_stream s, lapse_host_window* w)
{
    lapse_error err = c_host_error();
    CHECK_STATUS(lapse_host_profile_start(dev, s, NULL, w, &err), LAPSE_OK, err);
}

static void end(lapse_host_device* dev, lapse_host_window* w, lapse_host_duration* d)
{
    lapse_error err = c_host_error();
    CHECK_STATUS(lapse_host_profile_end(dev, w, LAPSE_END_FLUSH, d, &err), LAPSE_OK, err);
    CHECK(lapse_host_window_kind_of(w) == LAPSE_HOST_WINDOW_CLOSED);
}

static void rule_describes_itself(void)
{
    CHECK(info.stream_count >= 1);
    CHECK(info.name != NULL && info.name[0] != '\0');
    CHECK(info.plugin != NULL && info.plugin[0] != '\0');
    CHECK(info.plugin_file != NULL && info.plugin_file[0] != '\0');
}

typedef struct busy_closure {
    lapse_host_device* dev;
    lapse_stream stream;
    int64_t ns;
} busy_closure;

static lapse_status run_busy(void* user)
{
    busy_closure* c = (busy_closure*)user;
    c_host_busy(c->dev, c->stream, c->ns);
    return LAPSE_OK;
}

static void rule_method_says_how(lapse_host_device* dev)
{
    lapse_error err = c_host_error();
    lapse_host_profile_options opts = {sizeof(lapse_host_profile_options), LAPSE_END_FLUSH, "method"};
    busy_closure c;
    lapse_host_duration d;
    lapse_duration iv;
    c.dev = dev;
    c.stream = 0;
    c.ns = 1 * MS;
    CHECK_STATUS(lapse_host_profile(dev, 0, run_busy, &c, &opts, &d, &err), LAPSE_OK, err);
    iv = c_host_must_resolve(&d, "closure window");
    if (device_clock()) {
        CHECK(iv.method == LAPSE_TIMING_DEVICE || iv.method == LAPSE_TIMING_SYSTEM);
    } else {
        CHECK(iv.method == LAPSE_TIMING_SYSTEM);
        CHECK(iv.clock_domain == LAPSE_CLOCK_HOST_MONOTONIC);
    }
}

static void rule_nest(lapse_host_device* dev)
{
    lapse_host_window outer, inner;
    lapse_host_duration douter, dinner;
    lapse_duration o, i;
    if (!supports(LAPSE_CAP_NESTED)) return;
    start(dev, 0, &outer);
    c_host_busy(dev, 0, 2 * MS);
    start(dev, 0, &inner);
    c_host_busy(dev, 0, 3 * MS);
    end(dev, &inner, &dinner);
    c_host_busy(dev, 0, 2 * MS);
    end(dev, &outer, &douter);
    o = c_host_must_resolve(&douter, "outer");
    i = c_host_must_resolve(&dinner, "inner");
    REQUIRE(o.clock_domain == i.clock_domain);
    CHECK(o.start_ns <= i.start_ns);
    CHECK(i.end_ns <= o.end_ns);
    CHECK(c_host_ns(&i) >= 3 * MS * 95 / 100);
    CHECK(c_host_ns(&o) >= 7 * MS * 95 / 100);
}

static void rule_overlap(lapse_host_device* dev)
{
    lapse_host_window a, b;
    lapse_host_duration da, db;
    lapse_duration ia, ib;
    if (!supports(LAPSE_CAP_OVERLAPPING)) return;
    start(dev, 0, &a);
    c_host_busy(dev, 0, 3 * MS);
    start(dev, 0, &b);
    c_host_busy(dev, 0, 3 * MS);
    end(dev, &a, &da);
    c_host_busy(dev, 0, 3 * MS);
    end(dev, &b, &db);
    ia = c_host_must_resolve(&da, "A");
    ib = c_host_must_resolve(&db, "B");
    REQUIRE(ia.clock_domain == ib.clock_domain);
    CHECK(ia.start_ns <= ib.start_ns);
    CHECK(ib.start_ns <= ia.end_ns);
    CHECK(ia.end_ns <= ib.end_ns);
    CHECK(c_host_ns(&ia) >= 6 * MS * 95 / 100);
    CHECK(c_host_ns(&ib) >= 6 * MS * 95 / 100);
}

typedef struct closer_args {
    lapse_host_device* dev;
    lapse_host_window* window;
    lapse_host_duration* out;
    lapse_status status;
} closer_args;

static void* close_on_another_thread(void* p)
{
    closer_args* a = (closer_args*)p;
    a->status = lapse_host_profile_end(a->dev, a->window, LAPSE_END_FLUSH, a->out, NULL);
    return NULL;
}

static void rule_split_threads(lapse_host_device* dev)
{
    lapse_error err = c_host_error();
    lapse_stream s = other_stream();
    lapse_host_window w;
    lapse_host_duration d;
    lapse_duration iv;
    c_host_spin_work work;
    closer_args args;
    pthread_t closer;
    if (!supports(LAPSE_CAP_SPLIT_THREADS)) return;
    work.want = 10 * MS;
    work.spun = 0;
    start(dev, s, &w);
    CHECK_STATUS(lapse_host_submit(dev, s, c_host_spin_fn, &work, NULL, &err), LAPSE_OK, err);
    args.dev = dev;
    args.window = &w;
    args.out = &d;
    args.status = LAPSE_ERROR_INTERNAL;
    REQUIRE(pthread_create(&closer, NULL, close_on_another_thread, &args) == 0);
    pthread_join(closer, NULL);
    CHECK(args.status == LAPSE_OK);
    iv = c_host_must_resolve(&d, "split window");
    CHECK_STATUS(lapse_host_sync(dev, s, &err), LAPSE_OK, err);
    REQUIRE(c_host_spun(&work) >= 10 * MS);
    CHECK(c_host_ns(&iv) >= c_host_spun(&work) * 95 / 100);
}

static void rule_opened_on_enforced(lapse_host_device* dev)
{
    lapse_error err = c_host_error();
    const lapse_plugin* plugin = NULL;
    lapse_device* raw = NULL;
    lapse_host_window w;
    lapse_host_duration d;
    lapse_token wrong;
    lapse_status s;
    if (!device_clock()) return;
    start(dev, 0, &w);
    REQUIRE(lapse_host_window_kind_of(&w) == LAPSE_HOST_WINDOW_DEVICE);
    c_host_busy(dev, 0, 1 * MS);
    CHECK_STATUS(lapse_host_window_token(&w, &wrong, &err), LAPSE_OK, err);
    wrong.opened_on = info.stream_count > 1 ? 1 : info.stream_count;
    CHECK_STATUS(lapse_host_device_raw(dev, &plugin, &raw, &err), LAPSE_OK, err);
    REQUIRE(plugin != NULL && raw != NULL);
    s = plugin->profile_end(raw, wrong, NULL, &err);
    CHECK(s == LAPSE_ERROR_WRONG_STREAM || s == LAPSE_ERROR_INVALID_TOKEN ||
          (wrong.opened_on >= info.stream_count && s == LAPSE_ERROR_INVALID_ARGUMENT));
    /* The real window is still open on its own stream and closes fine. */
    end(dev, &w, &d);
    c_host_must_resolve(&d, "the real window");
}

static lapse_status decline(void* user)
{
    busy_closure* c = (busy_closure*)user;
    c_host_busy(c->dev, c->stream, c->ns);
    return LAPSE_ERROR_DEVICE; /* "my work failed": the window must go */
}

static void rule_abandon(lapse_host_device* dev)
{
    lapse_error err = c_host_error();
    busy_closure c;
    lapse_host_window w;
    lapse_host_duration d;
    lapse_duration out = c_host_out();
    lapse_token token;
    const lapse_plugin* plugin = NULL;
    lapse_device* raw = NULL;
    c.dev = dev;
    c.stream = 0;
    c.ns = 1 * MS;
    /* The closure form: a closure that fails abandons its window and its
     * status comes back, with a message that says so. */
    CHECK_STATUS(lapse_host_profile(dev, 0, decline, &c, NULL, &d, &err), LAPSE_ERROR_DEVICE, err);
    CHECK(strstr(err.message, "abandoned") != NULL);
    CHECK_STATUS(lapse_host_duration_resolve(&d, 0, &out, &err), LAPSE_OK, err);
    CHECK(out.state == LAPSE_DURATION_NOT_MEASURED);
    lapse_host_duration_release(&d);

    /* The split form: an abandoned window's token is gone from the backend. */
    start(dev, 0, &w);
    if (lapse_host_window_kind_of(&w) == LAPSE_HOST_WINDOW_DEVICE) {
        CHECK_STATUS(lapse_host_window_token(&w, &token, &err), LAPSE_OK, err);
        c_host_busy(dev, 0, 1 * MS);
        lapse_host_profile_abandon(dev, &w);
        CHECK(lapse_host_window_kind_of(&w) == LAPSE_HOST_WINDOW_CLOSED);
        CHECK_STATUS(lapse_host_device_raw(dev, &plugin, &raw, &err), LAPSE_OK, err);
        CHECK(plugin->profile_end(raw, token, NULL, &err) == LAPSE_ERROR_INVALID_TOKEN);
    } else {
        lapse_host_profile_abandon(dev, &w);
    }
    CHECK_STATUS(lapse_host_profile_end(dev, &w, 0, &d, &err), LAPSE_ERROR_INVALID_TOKEN, err);
    lapse_host_duration_release(&d);

    /* The device is still usable. */
    CHECK_STATUS(lapse_host_profile(dev, 0, run_busy, &c, NULL, &d, &err), LAPSE_OK, err);
    c_host_must_resolve(&d, "a window after the abandon");
}

static lapse_status nothing(void* user)
{
    (void)user;
    return LAPSE_OK;
}

static void rule_not_measured_is_not_zero(lapse_host_device* dev)
{
    lapse_error err = c_host_error();
    lapse_host_duration d;
    lapse_duration out = c_host_out();
    busy_closure c;
    /* A window nothing ran in: a measured (maybe zero) interval, or NOT_MEASURED. */
    CHECK_STATUS(lapse_host_profile(dev, 0, nothing, NULL, NULL, &d, &err), LAPSE_OK, err);
    CHECK_STATUS(lapse_host_duration_resolve(&d, 30000LL * MS, &out, &err), LAPSE_OK, err);
    if (out.state == LAPSE_DURATION_READY) {
        CHECK(c_host_ns(&out) >= 0);
        CHECK(out.method != LAPSE_TIMING_NONE);
    } else {
        CHECK(out.state == LAPSE_DURATION_NOT_MEASURED);
        CHECK(out.method == LAPSE_TIMING_NONE);
    }
    lapse_host_duration_release(&d);
    /* Given up and never-measured durations carry no number, not zero. */
    c.dev = dev;
    c.stream = 0;
    c.ns = 1 * MS;
    CHECK_STATUS(lapse_host_profile(dev, 0, run_busy, &c, NULL, &d, &err), LAPSE_OK, err);
    lapse_host_duration_abandon(&d);
    out = c_host_out();
    CHECK_STATUS(lapse_host_duration_resolve(&d, 0, &out, &err), LAPSE_OK, err);
    CHECK(out.state == LAPSE_DURATION_NOT_MEASURED);
    CHECK(out.method == LAPSE_TIMING_NONE);
    lapse_host_duration_release(&d);
    lapse_host_duration_init(&d);
    CHECK_STATUS(lapse_host_duration_resolve(&d, 0, &out, &err), LAPSE_OK, err);
    CHECK(out.state == LAPSE_DURATION_NOT_MEASURED);
}

static void rule_system_time_fallback(lapse_host_device* dev)
{
    lapse_host_window w;
    lapse_host_duration d;
    lapse_duration iv;
    if (device_clock()) return; /* the backend times its own windows */
    start(dev, 0, &w);
    /* The core measures in system time when the backend opens no window;
     * a layer (forward) may open one itself and time it by the host clock. */
    if (strcmp(info.plugin, "cpu") == 0)
        CHECK(lapse_host_window_kind_of(&w) == LAPSE_HOST_WINDOW_SYSTEM);
    else
        CHECK(lapse_host_window_kind_of(&w) != LAPSE_HOST_WINDOW_FAILED);
    c_host_busy(dev, 0, 5 * MS);
    end(dev, &w, &d);
    iv = c_host_must_resolve(&d, "system-time window");
    CHECK(iv.method == LAPSE_TIMING_SYSTEM);
    CHECK(iv.clock_domain == LAPSE_CLOCK_HOST_MONOTONIC);
    CHECK(c_host_ns(&iv) >= 5 * MS * 95 / 100);
}

static void rule_flush_holds_the_work(lapse_host_device* dev)
{
    /* On a batching backend (fusion) the work is still queued when the
     * window ends: LAPSE_END_FLUSH makes it run inside the window. Every
     * other backend ignores the flag, and the rule holds there too. */
    lapse_host_window w;
    lapse_host_duration d;
    lapse_duration iv;
    start(dev, 0, &w);
    c_host_busy(dev, 0, 4 * MS);
    end(dev, &w, &d);
    iv = c_host_must_resolve(&d, "flushed window");
    CHECK(c_host_ns(&iv) >= 4 * MS * 95 / 100);
}

typedef struct ran_flag {
    int ran;
} ran_flag;

static lapse_status mark_ran(void* user)
{
    ((ran_flag*)user)->ran = 1;
    return LAPSE_OK;
}

static void rule_run_anyway(lapse_host_device* dev)
{
    lapse_error err = c_host_error();
    lapse_host_duration d;
    lapse_duration out = c_host_out();
    ran_flag flag = {0};
    lapse_status s = lapse_host_profile(dev, info.stream_count, mark_ran, &flag, NULL, &d, &err);
    CHECK(flag.ran);
    CHECK(s < 0);
    CHECK(err.message[0] != '\0');
    CHECK(lapse_host_duration_resolve(&d, 0, &out, NULL) == s);
    CHECK(out.state == LAPSE_DURATION_FAILED);
    CHECK(out.failure == s);
    lapse_host_duration_release(&d);
}

static void rule_resolve_poll(lapse_host_device* dev)
{
    lapse_error err = c_host_error();
    lapse_host_window w;
    lapse_host_duration d;
    lapse_duration out = c_host_out();
    c_host_spin_work* work;
    int64_t submitted;
    lapse_status polled;
    if (!device_clock()) return; /* system-time windows are final when they close */
    work = (c_host_spin_work*)malloc(sizeof *work);
    REQUIRE(work != NULL);
    work->want = 100 * MS;
    work->spun = 0;
    submitted = c_host_now_ns();
    CHECK_STATUS(lapse_host_submit(dev, 0, c_host_spin_fn, work, c_host_free_fn, &err), LAPSE_OK, err);
    start(dev, 0, &w);
    c_host_busy(dev, 0, 1 * MS);
    end(dev, &w, &d);
    polled = lapse_host_duration_resolve(&d, 0, &out, &err);
    /* Meaningful only when submit did not run the work before returning. */
    if (c_host_now_ns() - submitted < 50 * MS) {
        CHECK_STATUS(polled, LAPSE_NOT_READY, err);
        CHECK(out.state == LAPSE_DURATION_PENDING);
    }
    c_host_must_resolve(&d, "the window once the stream drained");
}

static void rule_many_in_one_batch(lapse_host_device* dev)
{
    enum { n = 64 };
    lapse_error err = c_host_error();
    lapse_host_duration ds[n];
    lapse_duration out[n];
    lapse_stream streams = info.stream_count < 2 ? info.stream_count : 2;
    int i;
    for (i = 0; i < n; ++i) {
        lapse_host_window w;
        lapse_stream s = (lapse_stream)i % streams;
        start(dev, s, &w);
        c_host_busy(dev, s, 0);
        end(dev, &w, &ds[i]);
    }
    out[0] = c_host_out();
    CHECK_STATUS(lapse_host_resolve(dev, ds, n, 30000LL * MS, out, &err), LAPSE_OK, err);
    for (i = 0; i < n; ++i) {
        CHECK(out[i].struct_size == sizeof(lapse_duration));
        CHECK(out[i].state == LAPSE_DURATION_READY || out[i].state == LAPSE_DURATION_NOT_MEASURED);
        lapse_host_duration_release(&ds[i]);
    }
}

static void rule_close_with_windows_open(lapse_host_runtime* rt, lapse_host_config* cfg)
{
    lapse_error err = c_host_error();
    lapse_host_device* dev = NULL;
    const lapse_plugin* plugin = NULL;
    lapse_device* raw = NULL;
    lapse_token t;
    CHECK_STATUS(lapse_host_open(rt, cfg, &dev, &err), LAPSE_OK, err);
    REQUIRE(dev != NULL);
    CHECK_STATUS(lapse_host_device_raw(dev, &plugin, &raw, &err), LAPSE_OK, err);
    if (plugin->profile_start(raw, 0, &t, &err) == LAPSE_OK) c_host_busy(dev, 0, 1 * MS);
    lapse_host_device_close(dev); /* the plugin abandons the open window */
    lapse_host_device_destroy(dev);
}

int main(void)
{
    lapse_error err = c_host_error();
    lapse_host_runtime* rt = NULL;
    lapse_host_config* cfg = NULL;
    lapse_host_device* dev = NULL;
    lapse_status s;

    REQUIRE(lapse_host_api_version() == LAPSE_HOST_API_VERSION);
    CHECK_STATUS(lapse_host_runtime_create(NULL, &rt, &err), LAPSE_OK, err);
    CHECK_STATUS(lapse_host_config_default(&cfg, &err), LAPSE_OK, err);
    REQUIRE(rt != NULL && cfg != NULL);
    s = lapse_host_open(rt, cfg, &dev, &err);
    if (s == LAPSE_ERROR_UNAVAILABLE) {
        printf("skipped: the backend is unavailable here: %s\n", err.message);
        lapse_host_config_destroy(cfg);
        lapse_host_runtime_destroy(rt);
        return 77;
    }
    CHECK_STATUS(s, LAPSE_OK, err);
    REQUIRE(dev != NULL);
    info.struct_size = sizeof info;
    CHECK_STATUS(lapse_host_device_describe(dev, &info, &err), LAPSE_OK, err);
    printf("backend: %s %s (%s), %u streams\n", info.plugin, info.plugin_version, info.name, info.stream_count);

    rule_describes_itself();
    rule_method_says_how(dev);
    rule_nest(dev);
    rule_overlap(dev);
    rule_split_threads(dev);
    rule_opened_on_enforced(dev);
    rule_abandon(dev);
    rule_not_measured_is_not_zero(dev);
    rule_system_time_fallback(dev);
    rule_flush_holds_the_work(dev);
    rule_run_anyway(dev);
    rule_resolve_poll(dev);
    rule_many_in_one_batch(dev);
    CHECK_STATUS(lapse_host_sync(dev, LAPSE_ALL_STREAMS, &err), LAPSE_OK, err);
    lapse_host_device_destroy(dev);
    rule_close_with_windows_open(rt, cfg);

    lapse_host_config_destroy(cfg);
    lapse_host_runtime_destroy(rt);
    return c_host_report("window rules through the C host API");
}
