// The table of export formats (see export_format.hpp).
#include "export_format.hpp"

#include <array>

namespace lapse::cli {
namespace {

constexpr std::array formats{
    ExportFormat{"chrome", "Chrome trace-event JSON (chrome://tracing, Perfetto's legacy importer)",
                 true, InputOrder::by_anchor, &write_chrome_export},
    ExportFormat{"perfetto", "Perfetto protobuf trace (TracePacket/TrackEvent); several inputs on one timeline",
                 true, InputOrder::as_given, &write_perfetto_export},
};

}  // namespace

std::span<const ExportFormat> export_formats() { return formats; }

const ExportFormat* find_export_format(std::string_view name)
{
    for (const ExportFormat& f : formats)
        if (f.name == name) return &f;
    return nullptr;
}

}  // namespace lapse::cli
