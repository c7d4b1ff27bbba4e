/* Recording into a capture through the C host API, and reading it back:
 * every named window a device closes is in the file exactly once, also
 * when its duration was released unread, named by a string or by an
 * interned name; unnamed and abandoned windows are
 * not; LAPSE_CAPTURE records every device of a runtime; and every misuse
 * answers a status and a message naming the cause. Strict C99; the CPU
 * plugin. */
#include "c_host_test.h"

#include <stdlib.h>
#include <unistd.h>

static char dir[64];

static const char* file_in_dir(char* buf, size_t size, const char* name)
{
    snprintf(buf, size, "%s/%s", dir, name);
    return buf;
}

static lapse_host_device* open_cpu(lapse_host_runtime* rt)
{
    lapse_error err = c_host_error();
    lapse_host_config* cfg = NULL;
    lapse_host_device* dev = NULL;
    CHECK_STATUS(lapse_host_config_from_string("[backend]\nplugin = \"cpu\"\n", "capture.toml", "/", &cfg, &err),
                 LAPSE_OK, err);
    REQUIRE(cfg != NULL);
    CHECK_STATUS(lapse_host_open(rt, cfg, &dev, &err), LAPSE_OK, err);
    lapse_host_config_destroy(cfg);
    REQUIRE(dev != NULL);
    return dev;
}

/* `n` windows named `name` on stream 0 whose durations are released
 * unread: the capture resolves them itself. */
static void dropped_windows(lapse_host_device* dev, const char* name, int n)
{
    lapse_error err = c_host_error();
    int i;
    for (i = 0; i < n; ++i) {
        lapse_host_window w;
        lapse_host_duration d;
        CHECK_STATUS(lapse_host_profile_start(dev, 0, name, &w, &err), LAPSE_OK, err);
        CHECK_STATUS(lapse_host_profile_end(dev, &w, 0, &d, &err), LAPSE_OK, err);
        lapse_host_duration_release(&d);
    }
}

typedef struct counts {
    int total;
    int named; /* windows named as asked */
    int ready;
    int complete;
    unsigned long long windows_read;
} counts;

static counts read_back(const char* path, const char* name)
{
    lapse_error err = c_host_error();
    lapse_host_capture_reader* reader = NULL;
    lapse_host_captured_window w;
    lapse_host_capture_summary summary;
    counts c = {0, 0, 0, 0, 0};
    int found = 1;
    CHECK_STATUS(lapse_host_capture_reader_open(path, &reader, &err), LAPSE_OK, err);
    if (reader == NULL) return c;
    memset(&w, 0, sizeof w);
    w.struct_size = sizeof w;
    while (found) {
        CHECK_STATUS(lapse_host_capture_reader_next(reader, &w, &found, &err), LAPSE_OK, err);
        if (!found) break;
        ++c.total;
        if (strcmp(w.name, name) == 0) ++c.named;
        if (w.state == LAPSE_DURATION_READY) {
            ++c.ready;
            CHECK(w.end_ns >= w.start_ns);
            CHECK(w.method != LAPSE_TIMING_NONE);
        }
        CHECK(w.cause != NULL);
    }
    memset(&summary, 0, sizeof summary);
    summary.struct_size = sizeof summary;
    CHECK_STATUS(lapse_host_capture_reader_summary(reader, &summary, &err), LAPSE_OK, err);
    CHECK(summary.damage_count == 0);
    CHECK(summary.dropped_total == 0);
    c.complete = (int)summary.complete;
    c.windows_read = summary.windows_read;
    lapse_host_capture_reader_destroy(reader);
    return c;
}

/* A capture opened by the host, one device recording into it. */
static void device_records_into_a_capture(lapse_host_runtime* rt)
{
    enum { N = 300 };
    lapse_error err = c_host_error();
    char path[128];
    lapse_host_capture_options o;
    lapse_host_capture* cap = NULL;
    lapse_host_capture_stats stats;
    lapse_host_device* dev = open_cpu(rt);
    lapse_host_profile_options po;
    lapse_host_duration d;
    lapse_host_window w;
    counts c;

    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.path = file_in_dir(path, sizeof path, "device.lapse-capture");
    o.policy = LAPSE_HOST_CAPTURE_BLOCK; /* nothing dropped, whatever the load */
    o.flush_ms = 20;
    CHECK_STATUS(lapse_host_capture_open(&o, &cap, &err), LAPSE_OK, err);
    REQUIRE(cap != NULL);
    CHECK_STATUS(lapse_host_device_record_into(dev, cap, &err), LAPSE_OK, err);

    dropped_windows(dev, "step", N);
    /* Not recorded: an unnamed window, an abandoned one, a declined closure. */
    CHECK_STATUS(lapse_host_profile_start(dev, 0, NULL, &w, &err), LAPSE_OK, err);
    CHECK_STATUS(lapse_host_profile_end(dev, &w, 0, &d, &err), LAPSE_OK, err);
    lapse_host_duration_release(&d);
    CHECK_STATUS(lapse_host_profile_start(dev, 0, "abandoned", &w, &err), LAPSE_OK, err);
    lapse_host_profile_abandon(dev, &w);
    /* Recorded: one resolved by the host too (both see the same number). */
    memset(&po, 0, sizeof po);
    po.struct_size = sizeof po;
    po.name = "resolved";
    CHECK_STATUS(lapse_host_profile_start(dev, 0, "resolved", &w, &err), LAPSE_OK, err);
    CHECK_STATUS(lapse_host_profile_end(dev, &w, 0, &d, &err), LAPSE_OK, err);
    (void)c_host_must_resolve(&d, "a recorded window the host resolved");

    CHECK_STATUS(lapse_host_capture_flush(cap, &err), LAPSE_OK, err);
    CHECK_STATUS(lapse_host_device_record_into(dev, NULL, &err), LAPSE_OK, err);
    dropped_windows(dev, "after", 5); /* recording stopped: not in the file */
    lapse_host_capture_close(cap);
    lapse_host_capture_close(cap); /* idempotent */

    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    CHECK_STATUS(lapse_host_capture_stats_of(cap, &stats, &err), LAPSE_OK, err);
    CHECK(stats.recorded == N + 1);
    CHECK(stats.dropped == 0);
    CHECK(stats.queued == 0);
    CHECK(stats.bytes_written > 0);
    lapse_host_capture_destroy(cap);

    c = read_back(path, "step");
    CHECK(c.named == N);
    CHECK(c.total == N + 1);
    CHECK(c.ready == N + 1);
    CHECK(c.windows_read == (unsigned long long)(N + 1));
    CHECK(c.complete == 1);
    if (c.named != N || c.total != N + 1)
        fprintf(stderr, "device capture: %d 'step' of %d windows read, wanted %d of %d\n", c.named, c.total, N,
                N + 1);
    lapse_host_device_destroy(dev);
}

/* Windows named by an interned name are recorded under its text, their
 * durations released unread, next to windows named by the same text; an
 * interned NULL or "" names nothing (the window is measured, not recorded). */
static void interned_names_are_recorded_under_their_text(lapse_host_runtime* rt)
{
    enum { N = 200 };
    lapse_error err = c_host_error();
    char path[128];
    lapse_host_capture_options o;
    lapse_host_capture* cap = NULL;
    const lapse_host_name* step = NULL;
    const lapse_host_name* again = NULL;
    const lapse_host_name* none = NULL;
    lapse_host_device* dev = open_cpu(rt);
    lapse_host_window w;
    lapse_host_duration d;
    counts c;
    int i;

    CHECK_STATUS(lapse_host_name_intern("step", &step, &err), LAPSE_OK, err);
    CHECK(step != NULL);
    CHECK_STATUS(lapse_host_name_intern("step", &again, &err), LAPSE_OK, err);
    CHECK(again == step); /* one entry per text */
    none = step; /* to see it written */
    CHECK_STATUS(lapse_host_name_intern("", &none, &err), LAPSE_OK, err);
    CHECK(none == NULL);
    CHECK_STATUS(lapse_host_name_intern(NULL, &again, &err), LAPSE_OK, err);
    CHECK(again == NULL);
    CHECK_STATUS(lapse_host_name_intern("step", NULL, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    CHECK_MESSAGE(err, "lapse_host_name_intern");
    err = c_host_error();
    CHECK_STATUS(lapse_host_profile_start_named(NULL, 0, step, &w, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    CHECK_MESSAGE(err, "lapse_host_profile_start_named");
    CHECK(lapse_host_window_kind_of(&w) == LAPSE_HOST_WINDOW_CLOSED);
    err = c_host_error();

    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.path = file_in_dir(path, sizeof path, "names.lapse-capture");
    o.policy = LAPSE_HOST_CAPTURE_BLOCK;
    CHECK_STATUS(lapse_host_capture_open(&o, &cap, &err), LAPSE_OK, err);
    REQUIRE(cap != NULL);
    CHECK_STATUS(lapse_host_device_record_into(dev, cap, &err), LAPSE_OK, err);
    for (i = 0; i < N; ++i) {
        CHECK_STATUS(lapse_host_profile_start_named(dev, 0, step, &w, &err), LAPSE_OK, err);
        CHECK_STATUS(lapse_host_profile_end(dev, &w, 0, &d, &err), LAPSE_OK, err);
        lapse_host_duration_release(&d);
    }
    dropped_windows(dev, "step", N); /* the same text as a string */
    CHECK_STATUS(lapse_host_profile_start_named(dev, 0, NULL, &w, &err), LAPSE_OK, err);
    CHECK(lapse_host_window_kind_of(&w) == LAPSE_HOST_WINDOW_DEVICE);
    CHECK_STATUS(lapse_host_profile_end(dev, &w, 0, &d, &err), LAPSE_OK, err);
    (void)c_host_must_resolve(&d, "a window opened with no name");
    lapse_host_device_destroy(dev); /* drains its windows into the capture */
    lapse_host_capture_close(cap);
    lapse_host_capture_destroy(cap);

    c = read_back(path, "step");
    CHECK(c.named == 2 * N);
    CHECK(c.total == 2 * N);
    CHECK(c.ready == 2 * N);
    CHECK(c.complete == 1);
    if (c.named != 2 * N || c.total != 2 * N)
        fprintf(stderr, "interned names: %d 'step' of %d windows read, wanted %d\n", c.named, c.total, 2 * N);
}

/* A runtime's capture: the devices it opens afterwards record into it. */
static void runtime_records_its_devices(lapse_host_runtime* rt)
{
    enum { N = 120 };
    lapse_error err = c_host_error();
    char path[128];
    lapse_host_capture_options o;
    lapse_host_capture *cap = NULL, *current = NULL;
    lapse_host_device *a, *b;
    counts c;

    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.path = file_in_dir(path, sizeof path, "runtime.lapse-capture");
    o.policy = LAPSE_HOST_CAPTURE_BLOCK;
    CHECK_STATUS(lapse_host_capture_open(&o, &cap, &err), LAPSE_OK, err);
    REQUIRE(cap != NULL);
    CHECK_STATUS(lapse_host_runtime_record_into(rt, cap, &err), LAPSE_OK, err);
    CHECK_STATUS(lapse_host_runtime_capture(rt, &current, &err), LAPSE_OK, err);
    CHECK(current != NULL);
    lapse_host_capture_destroy(current);
    /* The handle may go: the runtime keeps the capture. */
    lapse_host_capture_destroy(cap);

    a = open_cpu(rt);
    b = open_cpu(rt);
    dropped_windows(a, "a", N);
    dropped_windows(b, "b", N);
    /* Back to none: the runtime's later devices do not record. */
    CHECK_STATUS(lapse_host_runtime_record_into(rt, NULL, &err), LAPSE_OK, err);
    CHECK_STATUS(lapse_host_runtime_capture(rt, &current, &err), LAPSE_OK, err);
    CHECK(current == NULL);
    /* Closing the devices drains their windows into the capture, and the
     * last holder letting go closes the file. */
    lapse_host_device_destroy(a);
    lapse_host_device_destroy(b);

    c = read_back(path, "a");
    CHECK(c.named == N);
    CHECK(c.total == 2 * N);
    CHECK(c.complete == 1);
    if (c.total != 2 * N) fprintf(stderr, "runtime capture: %d windows read, wanted %d\n", c.total, 2 * N);
}

/* LAPSE_CAPTURE=path, read when a runtime is created. */
static void lapse_capture_records_every_device(void)
{
    enum { N = 80 };
    lapse_error err = c_host_error();
    char path[128];
    lapse_host_runtime* rt = NULL;
    lapse_host_capture* cap = NULL;
    lapse_host_device* dev;
    counts c;

    file_in_dir(path, sizeof path, "env.lapse-capture");
    setenv("LAPSE_CAPTURE", path, 1);
    CHECK_STATUS(lapse_host_runtime_create(NULL, &rt, &err), LAPSE_OK, err);
    unsetenv("LAPSE_CAPTURE");
    REQUIRE(rt != NULL);
    CHECK_STATUS(lapse_host_runtime_capture(rt, &cap, &err), LAPSE_OK, err);
    REQUIRE(cap != NULL);
    CHECK(access(path, F_OK) == 0);

    dev = open_cpu(rt);
    dropped_windows(dev, "env", N);
    lapse_host_device_destroy(dev); /* its windows go into the file */
    CHECK_STATUS(lapse_host_capture_flush(cap, &err), LAPSE_OK, err);
    c = read_back(path, "env");
    CHECK(c.named == N);
    CHECK(c.total == N);
    CHECK(c.complete == 0); /* LAPSE_CAPTURE's file is closed at exit */
    lapse_host_capture_destroy(cap);
    lapse_host_runtime_destroy(rt);

    /* Without the variable, a runtime has no capture. */
    CHECK_STATUS(lapse_host_runtime_create(NULL, &rt, &err), LAPSE_OK, err);
    CHECK_STATUS(lapse_host_runtime_capture(rt, &cap, &err), LAPSE_OK, err);
    CHECK(cap == NULL);
    lapse_host_runtime_destroy(rt);
}

static void misuse_answers_a_status_and_a_message(lapse_host_runtime* rt)
{
    lapse_error err = c_host_error();
    lapse_host_capture_options o;
    lapse_host_capture* cap = NULL;
    lapse_host_capture_reader* reader = NULL;
    lapse_host_capture_stats stats;
    lapse_host_captured_window w;
    lapse_host_device* dev;
    char path[128];
    FILE* f;
    int found = 1;

    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    /* A file that cannot be created: the status, and the path in the message. */
    o.path = "/nonexistent-lapse-dir/sub/run.lapse-capture";
    CHECK(lapse_host_capture_open(&o, &cap, &err) < 0);
    CHECK(cap == NULL);
    CHECK_MESSAGE(err, "/nonexistent-lapse-dir/sub/run.lapse-capture");
    /* No options, a short struct, no path, an unknown policy. */
    err = c_host_error();
    CHECK_STATUS(lapse_host_capture_open(NULL, &cap, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    CHECK_MESSAGE(err, "options is NULL");
    o.struct_size = 8;
    CHECK_STATUS(lapse_host_capture_open(&o, &cap, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    CHECK_MESSAGE(err, "struct_size");
    o.struct_size = sizeof o;
    o.path = NULL;
    CHECK_STATUS(lapse_host_capture_open(&o, &cap, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    CHECK_MESSAGE(err, "options->path");
    o.path = file_in_dir(path, sizeof path, "policy.lapse-capture");
    o.policy = 7;
    CHECK_STATUS(lapse_host_capture_open(&o, &cap, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    CHECK_MESSAGE(err, "policy 7");
    CHECK(cap == NULL);
    /* NULL handles. */
    CHECK_STATUS(lapse_host_capture_flush(NULL, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    CHECK_STATUS(lapse_host_device_record_into(NULL, NULL, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    CHECK_STATUS(lapse_host_runtime_record_into(NULL, NULL, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    stats.struct_size = sizeof stats;
    CHECK_STATUS(lapse_host_capture_stats_of(NULL, &stats, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    lapse_host_capture_close(NULL);
    lapse_host_capture_destroy(NULL);
    lapse_host_capture_reader_destroy(NULL);

    /* Recording on a closed device. */
    o.policy = LAPSE_HOST_CAPTURE_DROP;
    CHECK_STATUS(lapse_host_capture_open(&o, &cap, &err), LAPSE_OK, err);
    REQUIRE(cap != NULL);
    dev = open_cpu(rt);
    lapse_host_device_close(dev);
    err = c_host_error();
    CHECK_STATUS(lapse_host_device_record_into(dev, cap, &err), LAPSE_ERROR_CLOSED, err);
    CHECK_MESSAGE(err, "record_into");
    lapse_host_device_destroy(dev);
    stats.struct_size = 4;
    CHECK_STATUS(lapse_host_capture_stats_of(cap, &stats, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    CHECK_MESSAGE(err, "struct_size");
    lapse_host_capture_destroy(cap); /* the last holder: closes it */

    /* Reading: no file, a file that is not a capture, short structs. */
    err = c_host_error();
    CHECK_STATUS(lapse_host_capture_reader_open("/nonexistent-lapse-dir/x.lapse-capture", &reader, &err),
                 LAPSE_ERROR_INVALID_ARGUMENT, err);
    CHECK_MESSAGE(err, "/nonexistent-lapse-dir/x.lapse-capture");
    CHECK(reader == NULL);
    f = fopen(file_in_dir(path, sizeof path, "not-a-capture.txt"), "w");
    REQUIRE(f != NULL);
    fputs("hello, not a capture\n", f);
    fclose(f);
    err = c_host_error();
    CHECK_STATUS(lapse_host_capture_reader_open(path, &reader, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    CHECK_MESSAGE(err, "not-a-capture.txt");
    CHECK_STATUS(lapse_host_capture_reader_open(file_in_dir(path, sizeof path, "policy.lapse-capture"), &reader,
                                                &err),
                 LAPSE_OK, err);
    REQUIRE(reader != NULL);
    w.struct_size = 4;
    CHECK_STATUS(lapse_host_capture_reader_next(reader, &w, &found, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    CHECK_MESSAGE(err, "struct_size");
    CHECK(found == 0);
    CHECK_STATUS(lapse_host_capture_reader_next(reader, NULL, &found, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    lapse_host_capture_reader_destroy(reader);
}

static void remove_dir(void)
{
    const char* names[] = {"device.lapse-capture", "runtime.lapse-capture", "env.lapse-capture",
                           "policy.lapse-capture", "not-a-capture.txt", "names.lapse-capture"};
    char path[128];
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0]; ++i) unlink(file_in_dir(path, sizeof path, names[i]));
    rmdir(dir);
}

int main(void)
{
    lapse_error err = c_host_error();
    lapse_host_runtime* rt = NULL;
    strcpy(dir, "/tmp/lapse-c-host-capture-XXXXXX");
    REQUIRE(mkdtemp(dir) != NULL);
    unsetenv("LAPSE_CAPTURE");
    unsetenv("LAPSE_CONFIG");
    CHECK_STATUS(lapse_host_runtime_create(NULL, &rt, &err), LAPSE_OK, err);
    REQUIRE(rt != NULL);
    device_records_into_a_capture(rt);
    interned_names_are_recorded_under_their_text(rt);
    runtime_records_its_devices(rt);
    misuse_answers_a_status_and_a_message(rt);
    lapse_host_runtime_destroy(rt);
    lapse_capture_records_every_device();
    remove_dir();
    return c_host_report("captures through the C host API");
}
