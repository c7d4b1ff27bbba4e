// The session archive: a Boost.Serialization text archive (portable text,
// versioned classes), the body of a session file (session_file.cpp adds the
// header that carries its checksum). Loading reads an untrusted file, so nothing is
// allocated from a count or size in the file before it is checked: strings
// carry their length first (capped), windows are appended one by one after
// a capped count, and every enum is range-checked.
#include "session_archive.hpp"

#include <lapse/core/error.hpp>

#include <boost/archive/archive_exception.hpp>
#include <boost/archive/text_iarchive.hpp>
#include <boost/archive/text_oarchive.hpp>
#include <boost/serialization/binary_object.hpp>
#include <boost/serialization/split_free.hpp>
#include <boost/serialization/tracking.hpp>
#include <boost/serialization/version.hpp>

#include <cctype>
#include <istream>
#include <streambuf>
#include <string_view>
#include <ostream>

namespace lapse::detail {

namespace {

constexpr const char* session_magic = "lapse.session";

// Thrown inside the load; turned into an Error naming the file.
struct BadArchive : std::runtime_error {
    using std::runtime_error::runtime_error;
};

template <class Archive>
void save_string(Archive& ar, const std::string& s)
{
    uint32_t size = static_cast<uint32_t>(std::min<std::size_t>(s.size(), Session::max_string));
    ar << size;
    if (size > 0) {
        const auto bytes = boost::serialization::make_binary_object(const_cast<char*>(s.data()), size);
        ar << bytes;
    }
}

template <class Archive>
void load_string(Archive& ar, std::string& s, const char* what)
{
    uint32_t size = 0;
    ar >> size;
    if (size > Session::max_string)
        throw BadArchive(std::string(what) + " is " + std::to_string(size) + " bytes, more than the limit of " +
                         std::to_string(Session::max_string));
    s.assign(size, '\0');
    if (size > 0) {
        auto bytes = boost::serialization::make_binary_object(s.data(), size);
        ar >> bytes;
    }
}

// Boost hands load() the class version the file claims and does not refuse
// a newer one itself: a file written by a newer lapse must not be read as
// if its fields meant what they mean today.
inline void check_version(unsigned version, unsigned known, const char* what)
{
    if (version > known)
        throw BadArchive(std::string(what) + " version " + std::to_string(version) +
                         " is newer than this build reads (" + std::to_string(known) + ")");
}

template <class E, class Archive>
void load_enum(Archive& ar, E& out, uint32_t max, const char* what)
{
    uint32_t v = 0;
    ar >> v;
    if (v > max) throw BadArchive(std::string(what) + " has the unknown value " + std::to_string(v));
    out = static_cast<E>(v);
}

}  // namespace

}  // namespace lapse::detail

namespace boost::serialization {

template <class Archive>
void save(Archive& ar, const lapse::BackendRecord& b, unsigned /*version*/)
{
    lapse::detail::save_string(ar, b.plugin);
    lapse::detail::save_string(ar, b.plugin_version);
    lapse::detail::save_string(ar, b.device_name);
    ar << b.stream_count << b.capabilities;
}

template <class Archive>
void load(Archive& ar, lapse::BackendRecord& b, unsigned version)
{
    lapse::detail::check_version(version, 1, "backend record");
    lapse::detail::load_string(ar, b.plugin, "backend plugin name");
    lapse::detail::load_string(ar, b.plugin_version, "backend plugin version");
    lapse::detail::load_string(ar, b.device_name, "backend device name");
    ar >> b.stream_count >> b.capabilities;
}

template <class Archive>
void save(Archive& ar, const lapse::WindowRecord& w, unsigned /*version*/)
{
    lapse::detail::save_string(ar, w.name);
    uint32_t method = static_cast<uint32_t>(w.method), state = static_cast<uint32_t>(w.state),
             domain = static_cast<uint32_t>(w.domain);
    int32_t failure = w.failure;
    ar << w.thread << w.stream << method << state << w.start_ns << w.end_ns << domain << failure;
}

template <class Archive>
void load(Archive& ar, lapse::WindowRecord& w, unsigned version)
{
    lapse::detail::check_version(version, 1, "window record");
    lapse::detail::load_string(ar, w.name, "window name");
    ar >> w.thread >> w.stream;
    lapse::detail::load_enum(ar, w.method, LAPSE_TIMING_DEVICE, "window timing method");
    lapse::detail::load_enum(ar, w.state, LAPSE_DURATION_FAILED, "window state");
    ar >> w.start_ns >> w.end_ns;
    lapse::detail::load_enum(ar, w.domain, LAPSE_CLOCK_DEVICE, "window clock domain");
    int32_t failure = 0;
    ar >> failure;
    w.failure = failure;
    if (w.state == lapse::DurationState::ready && w.end_ns < w.start_ns)
        throw lapse::detail::BadArchive("window '" + w.name + "' ends before it starts");
}

template <class Archive>
void save(Archive& ar, const lapse::detail::SessionData& s, unsigned /*version*/)
{
    lapse::detail::save_string(ar, lapse::detail::session_magic);
    ar << s.backend;
    uint64_t count = s.windows.size();
    ar << count;
    for (const auto& w : s.windows) ar << w;
}

template <class Archive>
void load(Archive& ar, lapse::detail::SessionData& s, unsigned version)
{
    lapse::detail::check_version(version, 1, "session");
    std::string magic;
    lapse::detail::load_string(ar, magic, "session tag");
    if (magic != lapse::detail::session_magic) throw lapse::detail::BadArchive("not a lapse session archive");
    ar >> s.backend;
    uint64_t count = 0;
    ar >> count;
    if (count > lapse::Session::max_windows)
        throw lapse::detail::BadArchive("claims " + std::to_string(count) + " windows, more than the limit of " +
                                        std::to_string(lapse::Session::max_windows));
    for (uint64_t i = 0; i < count; ++i) {
        lapse::WindowRecord w;
        ar >> w;
        s.windows.push_back(std::move(w));  // grows with what was actually read
    }
}

}  // namespace boost::serialization

BOOST_SERIALIZATION_SPLIT_FREE(lapse::BackendRecord)
BOOST_SERIALIZATION_SPLIT_FREE(lapse::WindowRecord)
BOOST_SERIALIZATION_SPLIT_FREE(lapse::detail::SessionData)
BOOST_CLASS_VERSION(lapse::BackendRecord, 1)
BOOST_CLASS_VERSION(lapse::WindowRecord, 1)
BOOST_CLASS_VERSION(lapse::detail::SessionData, 1)
// Values, never shared: no object tracking (which would also let a file
// refer to objects by id).
BOOST_CLASS_TRACKING(lapse::BackendRecord, boost::serialization::track_never)
BOOST_CLASS_TRACKING(lapse::WindowRecord, boost::serialization::track_never)
BOOST_CLASS_TRACKING(lapse::detail::SessionData, boost::serialization::track_never)

namespace lapse::detail {

void write_archive(const SessionData& data, std::ostream& out)
{
    try {
        boost::archive::text_oarchive ar(out);
        ar << data;
    } catch (const std::exception& e) {
        throw Error(LAPSE_ERROR_INVALID_ARGUMENT, std::string("saving the session: ") + e.what());
    }
}

namespace {

// The text archive starts with the length of its signature string, which
// Boost reads and allocates before anything of ours runs: a hostile first
// number is a multi-gigabyte allocation. So the core reads that token
// itself, checks it, and hands Boost a stream that replays it.
constexpr std::string_view archive_signature_length = "22";  // strlen("serialization::archive")

class ReplayBuffer : public std::streambuf {
public:
    ReplayBuffer(std::string prefix, std::streambuf* rest) : prefix_(std::move(prefix)), rest_(rest)
    {
        setg(prefix_.data(), prefix_.data(), prefix_.data() + prefix_.size());
    }

protected:
    int_type underflow() override
    {
        if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
        const int_type c = rest_->sbumpc();
        if (traits_type::eq_int_type(c, traits_type::eof())) return c;
        one_ = traits_type::to_char_type(c);
        setg(&one_, &one_, &one_ + 1);
        return c;
    }

private:
    std::string prefix_;
    std::streambuf* rest_;
    char one_ = 0;
};

// Reads the leading token (at most a few bytes) and refuses anything but
// the signature length Boost writes.
std::string read_signature_length(std::istream& in)
{
    std::string token;
    std::streambuf* buf = in.rdbuf();
    int c = buf->sbumpc();
    while (c != EOF && std::isspace(c)) c = buf->sbumpc();
    while (c != EOF && !std::isspace(c) && token.size() <= archive_signature_length.size()) {
        token.push_back(static_cast<char>(c));
        c = buf->sbumpc();
    }
    if (token != archive_signature_length)
        throw boost::archive::archive_exception(boost::archive::archive_exception::invalid_signature);
    if (c != EOF) token.push_back(static_cast<char>(c));
    return token;
}

}  // namespace

SessionData read_archive(std::istream& in, const std::string& source_name)
{
    SessionData data;
    try {
        ReplayBuffer replay(read_signature_length(in), in.rdbuf());
        std::istream checked(&replay);
        boost::archive::text_iarchive ar(checked);
        ar >> data;
    } catch (const BadArchive& e) {
        throw Error(LAPSE_ERROR_INVALID_ARGUMENT, source_name + ": not a valid lapse session: " + e.what());
    } catch (const boost::archive::archive_exception& e) {
        throw Error(LAPSE_ERROR_INVALID_ARGUMENT, source_name + ": not a readable lapse session: " + e.what());
    } catch (const std::bad_alloc&) {
        throw Error(LAPSE_ERROR_OUT_OF_MEMORY, source_name + ": out of memory while loading the session");
    } catch (const std::exception& e) {
        throw Error(LAPSE_ERROR_INVALID_ARGUMENT, source_name + ": not a readable lapse session: " + e.what());
    }
    return data;
}

}  // namespace lapse::detail
