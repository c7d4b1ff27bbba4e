/* Every misuse of the C host API answers a status and a message naming the
 * cause, and never crashes: a closed device, wrong and stale windows, bad
 * configs (file:line:col), NULL arguments, bad sizes and flags, a log
 * callback that sees the plugins' lines. Strict C99; the CPU plugin. */
#include "c_host_test.h"

static lapse_host_device* open_text(lapse_host_runtime* rt, const char* text, lapse_status want, lapse_error* err)
{
    lapse_host_config* cfg = NULL;
    lapse_host_device* dev = NULL;
    lapse_status s = lapse_host_config_from_string(text, "test.toml", "/", &cfg, err);
    if (s == LAPSE_OK) {
        s = lapse_host_open(rt, cfg, &dev, err);
        lapse_host_config_destroy(cfg);
    }
    CHECK_STATUS(s, want, *err);
    return dev;
}

static int destroyed = 0;
static void count_destroy(void* user)
{
    (void)user;
    ++destroyed;
}
static void never_runs(void* user, void* native)
{
    (void)user;
    (void)native;
    fprintf(stderr, "work ran on a closed device\n");
    ++c_host_failures;
}

static void closed_device(lapse_host_runtime* rt)
{
    lapse_error err = c_host_error();
    lapse_host_device* dev = open_text(rt, "[backend]\nplugin = \"cpu\"\n", LAPSE_OK, &err);
    lapse_host_device_info info;
    lapse_host_window w;
    lapse_host_duration d;
    const lapse_plugin* plugin;
    lapse_device* raw;
    REQUIRE(dev != NULL);
    lapse_host_device_close(dev);
    lapse_host_device_close(dev); /* idempotent */

    CHECK_STATUS(lapse_host_profile_start(dev, 0, NULL, &w, &err), LAPSE_ERROR_CLOSED, err);
    CHECK_MESSAGE(err, "closed");
    CHECK(lapse_host_window_kind_of(&w) == LAPSE_HOST_WINDOW_FAILED);
    err = c_host_error();
    CHECK_STATUS(lapse_host_profile_end(dev, &w, 0, &d, &err), LAPSE_ERROR_CLOSED, err);
    CHECK_MESSAGE(err, "closed");
    lapse_host_duration_release(&d);

    destroyed = 0;
    err = c_host_error();
    CHECK_STATUS(lapse_host_submit(dev, 0, never_runs, NULL, count_destroy, &err), LAPSE_ERROR_CLOSED, err);
    CHECK_MESSAGE(err, "submit");
    CHECK(destroyed == 1);
    err = c_host_error();
    CHECK_STATUS(lapse_host_sync(dev, LAPSE_ALL_STREAMS, &err), LAPSE_ERROR_CLOSED, err);
    CHECK_MESSAGE(err, "sync");
    info.struct_size = sizeof info;
    CHECK_STATUS(lapse_host_device_describe(dev, &info, &err), LAPSE_ERROR_CLOSED, err);
    CHECK_STATUS(lapse_host_device_raw(dev, &plugin, &raw, &err), LAPSE_ERROR_CLOSED, err);
    CHECK(lapse_host_device_extension(dev, "lapse.window_dispatch/1") == NULL);
    lapse_host_device_destroy(dev);
}

static void wrong_windows(lapse_host_runtime* rt)
{
    lapse_error err = c_host_error();
    lapse_host_device* a = open_text(rt, "[backend]\nplugin = \"cpu\"\n", LAPSE_OK, &err);
    lapse_host_device* b = open_text(rt, "[backend]\nplugin = \"cpu\"\n", LAPSE_OK, &err);
    lapse_host_device* inline_cpu = open_text(rt, "[backend]\nplugin = \"cpu\"\nmode = \"inline\"\n", LAPSE_OK, &err);
    lapse_host_window w, zero;
    lapse_host_duration d;
    lapse_duration out = c_host_out();
    lapse_token token;
    REQUIRE(a != NULL && b != NULL && inline_cpu != NULL);

    /* Ended twice: the second end reports, never measures. */
    CHECK_STATUS(lapse_host_profile_start(a, 0, "twice", &w, &err), LAPSE_OK, err);
    CHECK_STATUS(lapse_host_profile_end(a, &w, 0, &d, &err), LAPSE_OK, err);
    lapse_host_duration_release(&d);
    CHECK_STATUS(lapse_host_profile_end(a, &w, 0, &d, &err), LAPSE_ERROR_INVALID_TOKEN, err);
    CHECK_MESSAGE(err, "not open");
    CHECK(lapse_host_duration_resolve(&d, 0, &out, NULL) == LAPSE_ERROR_INVALID_TOKEN);
    CHECK(out.state == LAPSE_DURATION_FAILED && out.failure == LAPSE_ERROR_INVALID_TOKEN);
    lapse_host_duration_release(&d);

    /* Another device's window: refused, and left open for its own device. */
    err = c_host_error();
    CHECK_STATUS(lapse_host_profile_start(a, 0, NULL, &w, &err), LAPSE_OK, err);
    CHECK_STATUS(lapse_host_profile_end(b, &w, 0, &d, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    CHECK_MESSAGE(err, "another device");
    lapse_host_duration_release(&d);
    CHECK(lapse_host_window_kind_of(&w) == LAPSE_HOST_WINDOW_DEVICE);
    CHECK_STATUS(lapse_host_profile_end(a, &w, 0, &d, &err), LAPSE_OK, err);
    lapse_host_duration_release(&d);

    /* An all-zero window is a closed one. */
    memset(&zero, 0, sizeof zero);
    CHECK(lapse_host_window_kind_of(&zero) == LAPSE_HOST_WINDOW_CLOSED);
    CHECK_STATUS(lapse_host_profile_end(a, &zero, 0, &d, &err), LAPSE_ERROR_INVALID_TOKEN, err);
    lapse_host_duration_release(&d);
    lapse_host_profile_abandon(a, &zero);

    /* Unknown end flags: refused, the window left open. */
    CHECK_STATUS(lapse_host_profile_start(a, 0, NULL, &w, &err), LAPSE_OK, err);
    CHECK_STATUS(lapse_host_profile_end(a, &w, 0x80u, &d, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    CHECK_MESSAGE(err, "flags");
    CHECK(lapse_host_window_kind_of(&w) == LAPSE_HOST_WINDOW_DEVICE);
    CHECK_STATUS(lapse_host_profile_end(a, &w, 0, &d, &err), LAPSE_OK, err);
    lapse_host_duration_release(&d);

    /* A system-time window has no token to hand out. */
    CHECK_STATUS(lapse_host_profile_start(inline_cpu, 0, NULL, &w, &err), LAPSE_OK, err);
    CHECK(lapse_host_window_kind_of(&w) == LAPSE_HOST_WINDOW_SYSTEM);
    CHECK_STATUS(lapse_host_window_token(&w, &token, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    CHECK_MESSAGE(err, "no token");
    lapse_host_profile_abandon(inline_cpu, &w);

    /* A stream that does not exist: the window fails, and says which. */
    CHECK_STATUS(lapse_host_profile_start(a, 99, NULL, &w, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    CHECK(err.message[0] != '\0');
    CHECK(lapse_host_window_kind_of(&w) == LAPSE_HOST_WINDOW_FAILED);
    CHECK_STATUS(lapse_host_profile_end(a, &w, 0, &d, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    lapse_host_duration_release(&d);

    /* Bulk resolve names the index of the first failure. */
    {
        lapse_host_duration ds[3];
        lapse_duration outs[3];
        int i;
        for (i = 0; i < 3; ++i) {
            CHECK_STATUS(lapse_host_profile_start(a, i == 1 ? 99u : 0u, NULL, &w, &err),
                         i == 1 ? LAPSE_ERROR_INVALID_ARGUMENT : LAPSE_OK, err);
            lapse_host_profile_end(a, &w, 0, &ds[i], NULL);
        }
        outs[0] = c_host_out();
        CHECK_STATUS(lapse_host_resolve(a, ds, 3, 30000LL * MS, outs, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
        CHECK_MESSAGE(err, "durations[1]");
        CHECK(outs[0].state != LAPSE_DURATION_PENDING && outs[2].state != LAPSE_DURATION_PENDING);
        CHECK(outs[1].state == LAPSE_DURATION_FAILED);
        outs[0].struct_size = 4;
        CHECK_STATUS(lapse_host_resolve(a, ds, 3, 0, outs, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
        CHECK_MESSAGE(err, "struct_size");
        for (i = 0; i < 3; ++i) lapse_host_duration_release(&ds[i]);
    }

    lapse_host_device_destroy(inline_cpu);
    lapse_host_device_destroy(b);
    lapse_host_device_destroy(a);
}

static void bad_configs(lapse_host_runtime* rt)
{
    lapse_error err = c_host_error();
    lapse_host_config* cfg = NULL;
    lapse_host_device* dev;

    /* A syntax error: file:line:col. */
    CHECK_STATUS(lapse_host_config_from_string("[backend]\nplugin = \n", "bad.toml", "/", &cfg, &err),
                 LAPSE_ERROR_CONFIG, err);
    CHECK_MESSAGE(err, "bad.toml:2:");
    CHECK(cfg == NULL);
    /* A key no plugin reads: refused at open, with its place. */
    err = c_host_error();
    dev = open_text(rt, "[backend]\nplugin = \"cpu\"\nstreamz = 2\n", LAPSE_ERROR_CONFIG, &err);
    CHECK(dev == NULL);
    CHECK_MESSAGE(err, "test.toml:3:");
    CHECK_MESSAGE(err, "streamz");
    /* A value of the wrong type. */
    err = c_host_error();
    dev = open_text(rt, "[backend]\nplugin = \"cpu\"\nstreams = \"two\"\n", LAPSE_ERROR_CONFIG, &err);
    CHECK(dev == NULL);
    CHECK_MESSAGE(err, "test.toml:3:");
    /* A plugin that is nowhere. */
    err = c_host_error();
    dev = open_text(rt, "[backend]\nplugin = \"no_such_plugin\"\n", LAPSE_ERROR_LOAD, &err);
    CHECK(dev == NULL);
    CHECK_MESSAGE(err, "no_such_plugin");
    /* A file that does not exist. */
    err = c_host_error();
    CHECK(lapse_host_config_from_file("/nonexistent/lapse.toml", &cfg, &err) < 0);
    CHECK_MESSAGE(err, "/nonexistent/lapse.toml");
    /* LAPSE_CONFIG naming a bad file: the variable is named too. */
    err = c_host_error();
    setenv("LAPSE_CONFIG", "/nonexistent/env.toml", 1);
    CHECK(lapse_host_config_default(&cfg, &err) < 0);
    CHECK_MESSAGE(err, "LAPSE_CONFIG=/nonexistent/env.toml");
    unsetenv("LAPSE_CONFIG");
    CHECK_STATUS(lapse_host_config_default(&cfg, &err), LAPSE_OK, err);
    lapse_host_config_destroy(cfg);
    /* open_default: LAPSE_CONFIG as it stood when the runtime was created. */
    {
        lapse_host_runtime* env_rt = NULL;
        lapse_host_device* env_dev = NULL;
        setenv("LAPSE_CONFIG", "/nonexistent/open.toml", 1);
        CHECK_STATUS(lapse_host_runtime_create(NULL, &env_rt, &err), LAPSE_OK, err);
        unsetenv("LAPSE_CONFIG");
        REQUIRE(env_rt != NULL);
        err = c_host_error();
        CHECK(lapse_host_open_default(env_rt, &env_dev, &err) < 0);
        CHECK(env_dev == NULL);
        CHECK_MESSAGE(err, "LAPSE_CONFIG=/nonexistent/open.toml");
        lapse_host_runtime_destroy(env_rt);
        CHECK_STATUS(lapse_host_open_default(NULL, &env_dev, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
        CHECK_STATUS(lapse_host_open_default(rt, &env_dev, &err), LAPSE_OK, err); /* unset: the builtin */
        CHECK(env_dev != NULL);
        lapse_host_device_destroy(env_dev);
    }
}

typedef struct log_lines {
    int count;
    int abandoned_seen;
} log_lines;

static void collect(void* user, lapse_log_level level, const char* message)
{
    log_lines* lines = (log_lines*)user;
    (void)level;
    ++lines->count;
    if (strstr(message, "[cpu]") != NULL) lines->abandoned_seen = 1;
}

static void options_and_logging(void)
{
    lapse_error err = c_host_error();
    lapse_host_runtime* rt = NULL;
    lapse_host_runtime_options opts;
    const char* paths[2] = {"/nonexistent/plugins", NULL};
    log_lines lines = {0, 0};
    lapse_host_device* dev;
    lapse_host_window w;

    memset(&opts, 0, sizeof opts);
    opts.struct_size = 8;
    CHECK_STATUS(lapse_host_runtime_create(&opts, &rt, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    CHECK_MESSAGE(err, "struct_size");
    CHECK(rt == NULL);
    CHECK_STATUS(lapse_host_runtime_create(NULL, NULL, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    CHECK_MESSAGE(err, "out is NULL");

    opts.struct_size = sizeof opts;
    opts.search_path_count = 2;
    opts.search_paths = paths;
    CHECK_STATUS(lapse_host_runtime_create(&opts, &rt, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    CHECK_MESSAGE(err, "search_paths[1]");

    opts.search_path_count = 1;
    opts.log = collect;
    opts.log_user = &lines;
    opts.log_level = LAPSE_LOG_DEBUG;
    CHECK_STATUS(lapse_host_runtime_create(&opts, &rt, &err), LAPSE_OK, err);
    REQUIRE(rt != NULL);
    dev = open_text(rt, "[backend]\nplugin = \"cpu\"\n", LAPSE_OK, &err);
    REQUIRE(dev != NULL);
    /* Left open: the plugin abandons it at close, and says so in the log. */
    CHECK_STATUS(lapse_host_profile_start(dev, 0, NULL, &w, &err), LAPSE_OK, err);
    lapse_host_device_destroy(dev);
    lapse_host_runtime_destroy(rt);
    CHECK(lines.count > 0);
    CHECK(lines.abandoned_seen);

    /* NULL handles everywhere: statuses, not crashes. */
    CHECK_STATUS(lapse_host_open(NULL, NULL, &dev, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    CHECK_STATUS(lapse_host_sync(NULL, 0, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    CHECK_STATUS(lapse_host_profile_start(NULL, 0, NULL, &w, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    CHECK(lapse_host_window_kind_of(&w) == LAPSE_HOST_WINDOW_CLOSED);
    CHECK_STATUS(lapse_host_duration_resolve(NULL, 0, NULL, &err), LAPSE_ERROR_INVALID_ARGUMENT, err);
    destroyed = 0;
    CHECK_STATUS(lapse_host_submit(NULL, 0, never_runs, NULL, count_destroy, &err), LAPSE_ERROR_INVALID_ARGUMENT,
                 err);
    CHECK(destroyed == 1);
    lapse_host_device_destroy(NULL);
    lapse_host_config_destroy(NULL);
    lapse_host_runtime_destroy(NULL);
    /* A NULL or too-small error struct is never written. */
    CHECK(lapse_host_sync(NULL, 0, NULL) == LAPSE_ERROR_INVALID_ARGUMENT);
    {
        lapse_error small = c_host_error();
        small.struct_size = 4;
        CHECK(lapse_host_sync(NULL, 0, &small) == LAPSE_ERROR_INVALID_ARGUMENT);
        CHECK(small.message[0] == '\0');
    }
}

int main(void)
{
    lapse_error err = c_host_error();
    lapse_host_runtime* rt = NULL;
    unsetenv("LAPSE_CONFIG");
    CHECK_STATUS(lapse_host_runtime_create(NULL, &rt, &err), LAPSE_OK, err);
    REQUIRE(rt != NULL);
    closed_device(rt);
    wrong_windows(rt);
    bad_configs(rt);
    lapse_host_runtime_destroy(rt);
    options_and_logging();
    return c_host_report("errors through the C host API");
}
