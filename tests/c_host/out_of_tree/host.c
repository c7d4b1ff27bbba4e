/* A minimal C host: opens the default config (LAPSE_CONFIG, else the
 * builtin CPU backend), times one window around one piece of work, prints
 * "<plugin>: <ns> ns (<method>)". */
#include <lapse/host_api.h>

#include <stdio.h>

static void work(void* user, void* native)
{
    volatile unsigned long* sum = (volatile unsigned long*)user;
    unsigned long i;
    (void)native;
    for (i = 0; i < 1000000ul; ++i) *sum += i;
}

int main(void)
{
    lapse_error err = {sizeof(lapse_error), 0, ""};
    lapse_host_runtime* rt = NULL;
    lapse_host_config* cfg = NULL;
    lapse_host_device* dev = NULL;
    lapse_host_device_info info;
    lapse_host_window w;
    lapse_host_duration d;
    lapse_duration out;
    volatile unsigned long sum = 0;
    int rc = 1;

    info.struct_size = sizeof info;
    out.struct_size = sizeof out;
    if (lapse_host_runtime_create(NULL, &rt, &err) != LAPSE_OK || lapse_host_config_default(&cfg, &err) != LAPSE_OK ||
        lapse_host_open(rt, cfg, &dev, &err) != LAPSE_OK || lapse_host_device_describe(dev, &info, &err) != LAPSE_OK)
        goto done;
    lapse_host_profile_start(dev, 0, "work", &w, &err);
    if (lapse_host_submit(dev, 0, work, (void*)&sum, NULL, &err) != LAPSE_OK) goto done;
    lapse_host_profile_end(dev, &w, LAPSE_END_FLUSH, &d, &err);
    if (lapse_host_duration_resolve(&d, LAPSE_WAIT_FOREVER, &out, &err) == LAPSE_OK &&
        out.state == LAPSE_DURATION_READY) {
        printf("%s: %lld ns (%s)\n", info.plugin, (long long)(out.end_ns - out.start_ns),
               out.method == LAPSE_TIMING_DEVICE ? "device" : "system");
        rc = 0;
    }
    lapse_host_duration_release(&d);
done:
    if (rc != 0) fprintf(stderr, "c_host: %s (%s)\n", err.message, lapse_status_name(err.code));
    lapse_host_device_destroy(dev);
    lapse_host_config_destroy(cfg);
    lapse_host_runtime_destroy(rt);
    return rc;
}
