// Writes a synthetic "minor + 1" copy of the SDK headers: every struct that
// carries a struct_size gets one field appended (next_minor_field), and
// LAPSE_ABI_MINOR goes up by one; the C++ SDK headers are copied as they
// are. A plugin and a host built against the copy are what the next minor
// version will build, so the growth rules can be tested before it exists.
//
//   make_next_headers <sdk include dir> <output include dir>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {

std::string grow(const std::string& text)
{
    static const std::regex struct_open(R"(^typedef struct (\w+) \{)");
    static const std::regex struct_close(R"(^\} (\w+);)");
    static const std::regex minor(R"(^#define LAPSE_ABI_MINOR (\d+))");
    std::istringstream in(text);
    std::ostringstream out;
    std::string line;
    bool in_struct = false, has_size = false;
    std::smatch m;
    while (std::getline(in, line)) {
        if (std::regex_search(line, m, struct_open)) {
            in_struct = true;
            has_size = false;
        } else if (in_struct && line.find(" struct_size;") != std::string::npos) {
            has_size = true;
        } else if (in_struct && std::regex_search(line, m, struct_close)) {
            if (has_size) out << "    uint64_t next_minor_field; /* appended by tests/abi_growth: minor + 1 */\n";
            in_struct = false;
        } else if (std::regex_search(line, m, minor)) {
            line = "#define LAPSE_ABI_MINOR " + std::to_string(std::stoi(m[1]) + 1);
        }
        out << line << '\n';
    }
    return out.str();
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc != 3) {
        std::cerr << "usage: make_next_headers <sdk include dir> <output include dir>\n";
        return 2;
    }
    const fs::path from = fs::path(argv[1]) / "lapse";
    const fs::path to = fs::path(argv[2]) / "lapse";
    fs::create_directories(to / "sdk");
    int grown = 0;
    for (const auto& entry : fs::recursive_directory_iterator(from)) {
        if (!entry.is_regular_file()) continue;
        const fs::path relative = fs::relative(entry.path(), from);
        std::ifstream in(entry.path(), std::ios::binary);
        std::stringstream text;
        text << in.rdbuf();
        std::string body = text.str();
        if (entry.path().extension() == ".h") {
            const std::string next = grow(body);
            grown += next != body;
            body = next;
        }
        fs::create_directories((to / relative).parent_path());
        std::ofstream(to / relative, std::ios::binary) << body;
    }
    if (grown == 0) {
        std::cerr << "make_next_headers: no header under " << from << " changed\n";
        return 1;
    }
    return 0;
}
