// Misuse through the C++ API: ending a window twice, after abandon, on the
// wrong device; resolving twice; closing a device with windows still open;
// every call after the device is closed. Each answers with a clear status
// (a FAILED Duration or a thrown lapse::Error, as documented), and none
// crashes, leaks (LeakSanitizer in the asan build) or hangs (ctest timeout).
// Runs on the CPU plugin and, when built, on forward over cpu.
#include "support.hpp"

#include <catch2/catch.hpp>

namespace {

lapse::Device open_case(lapse::Runtime& runtime, const hardening::BackendCase& c)
{
    return runtime.open(lapse::Config::from_string(c.toml, "<" + c.label + ">", {}));
}

// What is logged when a device is closed with two windows open. Under
// forward, each open window is an open window of the cpu below it, and the
// cpu reports them when forward closes it.
std::string close_warning(const std::string& /*label*/)
{
    return "[warning] [cpu] closed with 2 window(s) still open; they were abandoned (close or abandon every "
           "window you open)";
}

void require_ready(lapse::Duration& d)
{
    auto interval = d.resolve();
    INFO("state " << lapse::to_string(d.state()) << ": " << d.error_message());
    REQUIRE(interval.has_value());
    CHECK(interval->ns() >= 0);
}

}  // namespace

TEST_CASE("ending a window twice or after abandon gives a failed duration, not a crash", "[misuse][api]")
{
    for (const auto& c : hardening::backend_cases()) {
        DYNAMIC_SECTION(c.label)
        {
            lapse::Runtime runtime;
            lapse::Device dev = open_case(runtime, c);

            lapse::Window w = dev.profile_start(0);
            REQUIRE(w.kind() == lapse::Window::Kind::device);
            lapse::Duration first = dev.profile_end(w);
            lapse::Duration second = dev.profile_end(w);
            CHECK(second.failed());
            CHECK(second.error_status() == LAPSE_ERROR_INVALID_TOKEN);
            CHECK(second.error_message() == "profile_end: the window is not open (already ended or abandoned)");
            require_ready(first);

            lapse::Window abandoned = dev.profile_start(1);
            dev.profile_abandon(abandoned);
            dev.profile_abandon(abandoned);  // twice: still nothing to do
            lapse::Duration after = dev.profile_end(abandoned);
            CHECK(after.failed());
            CHECK(after.error_status() == LAPSE_ERROR_INVALID_TOKEN);
            CHECK(after.error_message() == "profile_end: the window is not open (already ended or abandoned)");

            // A moved-from window is closed, too.
            lapse::Window moved_to = dev.profile_start(0);
            lapse::Window moved_from_end = std::move(moved_to);
            lapse::Duration from_moved = dev.profile_end(moved_to);  // NOLINT(bugprone-use-after-move): the point
            CHECK(from_moved.error_status() == LAPSE_ERROR_INVALID_TOKEN);
            lapse::Duration real = dev.profile_end(moved_from_end);
            require_ready(real);
        }
    }
}

TEST_CASE("ending a window on the wrong device is refused and leaves it open for its own", "[misuse][api]")
{
    for (const auto& c : hardening::backend_cases()) {
        DYNAMIC_SECTION(c.label)
        {
            lapse::Runtime runtime;
            lapse::Device a = open_case(runtime, c);
            lapse::Device b = open_case(runtime, c);
            lapse::Window w = a.profile_start(0);
            lapse::Duration wrong = b.profile_end(w);
            CHECK(wrong.failed());
            CHECK(wrong.error_status() == LAPSE_ERROR_INVALID_ARGUMENT);
            CHECK(wrong.error_message() == "profile_end: the window belongs to another device");
            CHECK(w.open());
            lapse::Duration right = a.profile_end(w);
            require_ready(right);
        }
    }
}

TEST_CASE("resolving a duration again answers the same, and batches skip final ones", "[misuse][api]")
{
    for (const auto& c : hardening::backend_cases()) {
        DYNAMIC_SECTION(c.label)
        {
            lapse::Runtime runtime;
            lapse::Device dev = open_case(runtime, c);
            lapse::Duration d = dev.profile(0, [] {});
            auto once = d.resolve();
            auto twice = d.resolve();
            REQUIRE(once.has_value());
            REQUIRE(twice.has_value());
            CHECK(once->start_ns == twice->start_ns);
            CHECK(once->end_ns == twice->end_ns);

            std::vector<lapse::Duration> batch;
            batch.push_back(std::move(d));
            batch.push_back(dev.profile(1, [] {}));
            CHECK(dev.resolve(batch));
            CHECK(dev.resolve(batch));  // all final already: nothing to ask the plugin
            CHECK(batch[0].interval()->start_ns == once->start_ns);
            CHECK(batch[1].ready());
        }
    }
}

TEST_CASE("a bad stream gives a failed window and still runs the work", "[misuse][api]")
{
    for (const auto& c : hardening::backend_cases()) {
        DYNAMIC_SECTION(c.label)
        {
            lapse::Runtime runtime;
            lapse::Device dev = open_case(runtime, c);
            bool ran = false;
            lapse::Duration d = dev.profile(7, [&] { ran = true; });
            CHECK(ran);
            CHECK(d.failed());
            CHECK(d.error_status() == LAPSE_ERROR_INVALID_ARGUMENT);
            CHECK_THAT(std::string(d.error_message()), Catch::Contains("stream 7 does not exist (the device has 2)"));

            lapse::Error e = hardening::error_of([&] { dev.sync(7); });
            CHECK(e.status() == LAPSE_ERROR_INVALID_ARGUMENT);
            CHECK_THAT(e.what(), Catch::Contains("sync: stream 7 does not exist (the device has 2)"));
        }
    }
}

TEST_CASE("closing a device with windows still open abandons them and says so in the log", "[misuse][api][log]")
{
    for (const auto& c : hardening::backend_cases()) {
        DYNAMIC_SECTION(c.label)
        {
            hardening::CapturedLog log;
            lapse::Runtime runtime({{}, log.logger});
            lapse::Device dev = open_case(runtime, c);
            // Windows of the C++ API must not outlive their device (as
            // iterators their container), so the forgotten windows are
            // opened through the raw ABI: that is what a careless host does.
            const lapse_plugin& p = dev.plugin();
            lapse_token t1{}, t2{};
            REQUIRE(p.profile_start(dev.handle(), 0, &t1, nullptr) == LAPSE_OK);
            REQUIRE(p.profile_start(dev.handle(), 1, &t2, nullptr) == LAPSE_OK);
            dev.close();
            CHECK_FALSE(dev);
            INFO(log.all());
            CHECK(log.contains(close_warning(c.label)));
        }
    }
}

TEST_CASE("every call after the device is closed answers LAPSE_ERROR_CLOSED", "[misuse][api]")
{
    for (const auto& c : hardening::backend_cases()) {
        DYNAMIC_SECTION(c.label)
        {
            lapse::Runtime runtime;
            lapse::Device dev = open_case(runtime, c);
            dev.close();
            dev.close();  // idempotent

            auto closed = [](const std::function<void()>& fn, const std::string& message) {
                lapse::Error e = hardening::error_of(fn);
                CHECK(e.status() == LAPSE_ERROR_CLOSED);
                CHECK(std::string(e.what()) == message);
            };
            closed([&] { (void)dev.info(); }, "info: the device is closed");
            closed([&] { (void)dev.plugin(); }, "plugin: the device is closed");
            closed([&] { (void)dev.handle(); }, "handle: the device is closed");
            closed([&] { dev.sync(); }, "sync: the device is closed");
            closed([&] { dev.record_into(std::make_shared<lapse::Session>()); }, "record_into: the device is closed");

            // submit refuses and destroys the work it was handed: nothing leaks.
            auto owned = std::make_shared<int>(42);
            std::weak_ptr<int> watch = owned;
            closed([&] { dev.submit(0, [keep = std::move(owned)] { (void)keep; }); }, "submit: the device is closed");
            CHECK(watch.expired());

            // Windows: a failed window, and profile() still runs the closure.
            lapse::Window w = dev.profile_start(0, "after close");
            CHECK(w.kind() == lapse::Window::Kind::failed);
            CHECK(w.error_status() == LAPSE_ERROR_CLOSED);
            CHECK(w.error_message() == "profile_start: the device is closed");
            lapse::Duration d = dev.profile_end(w);
            CHECK(d.failed());
            CHECK(d.error_status() == LAPSE_ERROR_CLOSED);
            CHECK(d.name() == "after close");
            bool ran = false;
            lapse::Duration p = dev.profile(0, [&] { ran = true; });
            CHECK(ran);
            CHECK(p.error_status() == LAPSE_ERROR_CLOSED);

            CHECK(dev.extension("lapse.cpu.anything/1") == nullptr);
            std::vector<lapse::Duration> none;
            CHECK(dev.resolve(none));

            // A default-constructed Device behaves the same.
            lapse::Device empty;
            closed([&] { empty.sync(); }, "sync: the device is closed");
        }
    }
}

TEST_CASE("a device outlives the runtime that opened it", "[misuse][api]")
{
    lapse::Device dev;
    {
        lapse::Runtime runtime;
        dev = runtime.open(lapse::Config::from_string("[backend]\nplugin = \"cpu\"\n", "<outlive>", {}));
    }
    lapse::Duration d = dev.profile(0, [] {});
    require_ready(d);
}
