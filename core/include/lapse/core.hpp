// lapse core — the host library's C++ API (umbrella header).
//
//   lapse::Runtime   loads plugins, opens devices from configs
//   lapse::Config    a parsed TOML config (file, string or the builtin one)
//   lapse::Device    submit / sync / profile / profile_start / profile_end / resolve
//   lapse::Window    an open window (device token, system-time start, or failure)
//   lapse::Duration  what a closed window measured, resolved later
//   lapse::Session   the named windows of a run, saved and loaded
//   lapse::Capture   every named window of a long run, streamed to a crash-safe file
//   lapse::Name      a window name interned once (lapse/core/name.hpp)
//   LAPSE_SCOPE      a scoped window that records (lapse/core/scope.hpp)
//   lapse::Error     status + message, thrown for setup and submit/sync failures
#pragma once

#include <lapse/core/capture.hpp>
#include <lapse/core/config.hpp>
#include <lapse/core/device.hpp>
#include <lapse/core/duration.hpp>
#include <lapse/core/error.hpp>
#include <lapse/core/name.hpp>
#include <lapse/core/plugin.hpp>
#include <lapse/core/runtime.hpp>
#include <lapse/core/scope.hpp>
#include <lapse/core/session.hpp>
#include <lapse/core/window.hpp>
