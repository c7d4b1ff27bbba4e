/* lapse C ABI — everything a plugin or a host needs, in C99.
 *
 *   version.h  ABI major/minor and the entry symbol's name
 *   status.h   statuses and the caller-owned error struct
 *   window.h   streams, tokens, close options, durations
 *   host.h     the services the host hands a plugin (log, config, stacking, clock)
 *   plugin.h   the descriptor, capabilities and the entry point
 *   dispatch.h the extension by which a layer steps out of the window path
 *   resolve_compact.h the extension that resolves measured windows into bare stamp pairs
 *
 * A plugin defines exactly one exported function:
 *
 *   LAPSE_EXPORT const lapse_plugin* lapse_plugin_entry_v1(const lapse_host* host);
 */
#ifndef LAPSE_LAPSE_H
#define LAPSE_LAPSE_H

#include "dispatch.h"
#include "host.h"
#include "plugin.h"
#include "resolve_compact.h"
#include "status.h"
#include "version.h"
#include "window.h"

#if defined(_WIN32)
#define LAPSE_EXPORT __declspec(dllexport)
#else
#define LAPSE_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
#define LAPSE_EXTERN_C extern "C"
#else
#define LAPSE_EXTERN_C
#endif

/* Declares the entry point with the right linkage and visibility. */
#define LAPSE_PLUGIN_ENTRY \
    LAPSE_EXTERN_C LAPSE_EXPORT const lapse_plugin* lapse_plugin_entry_v1(const lapse_host* host)

#endif /* LAPSE_LAPSE_H */
