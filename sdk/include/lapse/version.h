/* lapse C ABI — versioning.
 *
 * The major version is part of the entry symbol's name, so a plugin built for
 * another major cannot even be found by this host. The minor version only
 * grows: new functions and fields are appended, never inserted or removed.
 */
#ifndef LAPSE_VERSION_H
#define LAPSE_VERSION_H

#define LAPSE_ABI_MAJOR 1
#define LAPSE_ABI_MINOR 0

/* The one symbol a plugin exports. Its name carries the ABI major. */
#define LAPSE_ENTRY_SYMBOL "lapse_plugin_entry_v1"

#endif /* LAPSE_VERSION_H */
