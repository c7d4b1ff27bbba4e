// lapse core — symbol visibility of the host library.
//
// The core is built with hidden visibility so that its machinery (toml++,
// Boost.DLL, Boost.Serialization) never leaks into the user's process;
// only what is marked LAPSE_CORE_API is exported.
#pragma once

#if defined(_WIN32)
#define LAPSE_CORE_API
#else
#define LAPSE_CORE_API __attribute__((visibility("default")))
#endif
