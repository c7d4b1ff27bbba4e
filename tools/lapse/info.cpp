// lapse info PLUGIN [--json]: what a plugin file is, without opening a
// device or running work (only the entry point runs, as any host would).
#include "plugin_arg.hpp"
#include "terminal.hpp"

#include "commands.hpp"
#include <lapse/core.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

namespace lapse::cli {

void add_info_command(CLI::App& app)
{
    struct Options {
        std::string plugin;
        bool json = false;
    };
    auto opt = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand("info", "Describe a plugin file: entry, ABI, name, version, capabilities");
    cmd->footer(R"HELP(PLUGIN is a name on the plugin search path (cpu -> lapse_cpu.so) or a path.
Loads the file and calls its entry point, nothing else: no device is opened.
Symbols exported besides lapse_plugin_entry_v1 are listed as a warning.
A plugin whose entry crashes takes `info` down with it; `lapse validate`
runs every check in a child process and reports such a crash.

Examples:
  lapse info cpu
  lapse info ./build/lib/lapse/lapse_forward.so
  lapse info cuda --json)HELP");
    cmd->add_option("PLUGIN", opt->plugin, "Plugin name or path")->required();
    cmd->add_flag("--json", opt->json, "Print JSON");
    cmd->callback([opt] {
        Runtime runtime;
        PluginLibrary lib;
        try {
            lib = runtime.load_plugin(plugin_argument(opt->plugin));
        } catch (const std::exception& e) {
            std::cerr << "lapse info: " << terminal_text(e.what()) << '\n';
            throw CLI::RuntimeError(exit_failure);
        }
        const lapse_plugin& d = lib.descriptor();
        const std::string file = lib.path().string();

        std::vector<std::string> extra;
        std::string symbols_error;
        try {
            for (const ExportedSymbol& s : exported_symbols(lib.path()))
                if (s.name != LAPSE_ENTRY_SYMBOL) extra.push_back(s.name);
        } catch (const std::exception& e) {
            symbols_error = e.what();
        }
        std::string sha;
        try {
            sha = sha256_file(lib.path());
        } catch (const std::exception&) {
        }
        // The descriptor's strings as the core copied them (bounded), any bytes.
        const std::string& name = lib.name();
        const std::string& version = lib.version();
        const std::string& description = lib.description();
        char caps_hex[32];
        std::snprintf(caps_hex, sizeof caps_hex, "0x%llx", static_cast<unsigned long long>(d.capabilities));

        if (opt->json) {
            nlohmann::ordered_json j;
            j["file"] = file;
            j["sha256"] = sha;
            j["entry"] = LAPSE_ENTRY_SYMBOL;
            j["abi"] = {{"major", d.abi_major}, {"minor", d.abi_minor}};
            j["descriptor_size"] = d.struct_size;
            j["name"] = name;
            j["version"] = version;
            j["description"] = description;
            j["capabilities"] = capability_names(d.capabilities);
            j["capability_bits"] = d.capabilities;
            j["extensions_query"] = d.get_extension != nullptr;
            j["extra_exports"] = extra;
            std::cout << json_text(j) << '\n';
        } else {
            std::cout << "file:         " << terminal_text(file) << '\n'
                      << "sha256:       " << sha << '\n'
                      << "entry:        " << LAPSE_ENTRY_SYMBOL << '\n'
                      << "ABI:          " << d.abi_major << '.' << d.abi_minor << " (descriptor " << d.struct_size
                      << " bytes; host speaks " << LAPSE_ABI_MAJOR << '.' << LAPSE_ABI_MINOR << ")\n"
                      << "name:         " << terminal_text(name) << '\n'
                      << "version:      " << terminal_text(version) << '\n'
                      << "description:  " << terminal_text(description) << '\n'
                      << "capabilities: " << capability_names(d.capabilities) << " (" << caps_hex << ")\n";
        }
        if (!extra.empty()) {
            std::string list;
            for (const auto& s : extra) list += (list.empty() ? "" : ", ") + s;
            std::cerr << "lapse info: warning: " << terminal_text(file) << " exports " << extra.size()
                      << " symbol(s) besides " << LAPSE_ENTRY_SYMBOL << ": " << terminal_text(list)
                      << " (build with hidden visibility and the SDK's version script)\n";
        }
        if (!symbols_error.empty()) std::cerr << "lapse info: warning: cannot list exports: " << terminal_text(symbols_error) << '\n';
    });
}

}  // namespace lapse::cli
