#include "child_runner.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include <fcntl.h>
#include <poll.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/prctl.h>
#include <unistd.h>

namespace lapse::cli {
namespace {

constexpr std::size_t stderr_keep = 6000;  // bytes of the child's stderr kept for the report

void write_all(int fd, const std::string& s) noexcept
{
    const char* p = s.data();
    std::size_t left = s.size();
    while (left > 0) {
        ssize_t n = ::write(fd, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        p += n;
        left -= static_cast<std::size_t>(n);
    }
}

[[noreturn]] void child_main(const std::function<std::pair<Outcome, std::string>()>& body, int result_fd,
                             int stderr_fd, pid_t parent)
{
    // Own process group: a timeout kills whatever the plugin started too.
    setpgid(0, 0);
    // Killing `lapse validate` (SIGKILL, SIGTERM, ^C) kills the check it
    // was running: a child left alone would spin on at 100% CPU. The second
    // test covers a parent that died before the prctl took effect.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    // The plugin's logs and prints go to the report, not into the parent's
    // output (which may be JSON on stdout).
    dup2(stderr_fd, STDOUT_FILENO);
    dup2(stderr_fd, STDERR_FILENO);
    std::pair<Outcome, std::string> r{Outcome::fail, ""};
    try {
        r = body();
    } catch (const std::exception& e) {
        r = {Outcome::fail, std::string("unexpected exception: ") + e.what()};
    } catch (...) {
        r = {Outcome::fail, "unexpected non-standard exception"};
    }
    const char tag = r.first == Outcome::pass ? 'P' : r.first == Outcome::skip ? 'S' : 'F';
    write_all(result_fd, std::string(1, tag) + r.second);
    std::fflush(nullptr);
    // _exit: no static destructors or atexit handlers of a plugin that may
    // still have threads running; the check's verdict is already sent.
    _exit(0);
}

std::string signal_text(int sig)
{
    const char* abbrev = sigabbrev_np(sig);
    std::string s = abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
    const char* desc = strsignal(sig);
    if (desc != nullptr) s += std::string(" (") + desc + ")";
    return s;
}

}  // namespace

const char* to_string(Outcome outcome) noexcept
{
    switch (outcome) {
    case Outcome::pass: return "pass";
    case Outcome::skip: return "skip";
    default: return "fail";
    }
}

ChildResult run_in_child(const std::function<std::pair<Outcome, std::string>()>& body,
                         std::chrono::milliseconds timeout)
{
    using clock = std::chrono::steady_clock;
    ChildResult out;
    int result_pipe[2], err_pipe[2];
    if (pipe2(result_pipe, O_CLOEXEC) != 0) {
        out.message = std::string("cannot create a pipe: ") + std::strerror(errno);
        return out;
    }
    if (pipe2(err_pipe, O_CLOEXEC) != 0) {
        out.message = std::string("cannot create a pipe: ") + std::strerror(errno);
        close(result_pipe[0]);
        close(result_pipe[1]);
        return out;
    }
    std::fflush(nullptr);  // nothing buffered is written twice
    const auto start = clock::now();
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
        out.message = std::string("fork failed: ") + std::strerror(errno);
        for (int fd : {result_pipe[0], result_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
        return out;
    }
    if (pid == 0) {
        close(result_pipe[0]);
        close(err_pipe[0]);
        child_main(body, result_pipe[1], err_pipe[1], parent);
    }
    setpgid(pid, pid);  // also here: no race with the child's own call
    close(result_pipe[1]);
    close(err_pipe[1]);

    std::string result, err;
    bool timed_out = false;
    pollfd fds[2] = {{result_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    int open_fds = 2;
    const auto deadline = start + timeout;
    char buf[4096];
    while (open_fds > 0) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
        if (left.count() <= 0) {
            timed_out = true;
            break;
        }
        int n = poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || fds[i].revents == 0) continue;
            ssize_t got = read(fds[i].fd, buf, sizeof buf);
            if (got > 0) {
                std::string& dst = i == 0 ? result : err;
                dst.append(buf, static_cast<std::size_t>(got));
                if (i == 1 && err.size() > 2 * stderr_keep) err.erase(0, err.size() - stderr_keep);
            } else if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
                close(fds[i].fd);
                fds[i].fd = -1;
                --open_fds;
            }
        }
    }
    if (timed_out) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    for (auto& f : fds)
        if (f.fd >= 0) close(f.fd);
    out.seconds = std::chrono::duration<double>(clock::now() - start).count();
    if (err.size() > stderr_keep) err.erase(0, err.size() - stderr_keep);
    out.stderr_tail = std::move(err);

    if (timed_out) {
        out.outcome = Outcome::fail;
        out.message = "timed out after " + std::to_string(timeout.count() / 1000.0).substr(0, 5) +
                      " s (killed): a call hung or the plugin deadlocked";
        return out;
    }
    if (WIFSIGNALED(status)) {
        out.outcome = Outcome::fail;
        out.message = "crashed: " + signal_text(WTERMSIG(status));
        if (!result.empty()) out.message += " after reporting: " + result.substr(1);
        return out;
    }
    if (result.empty() && out.stderr_tail.find("Sanitizer") != std::string::npos) {
        // A sanitizer turns a deadly signal or a bad access into a report
        // and exit(1): still a crash, as far as the plugin is concerned.
        out.outcome = Outcome::fail;
        out.message = "crashed: a sanitizer reported an error (see stderr)";
        return out;
    }
    if (result.empty()) {
        out.outcome = Outcome::fail;
        out.message = "the child exited with status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                      " without reporting (the plugin called exit?)";
        return out;
    }
    out.outcome = result[0] == 'P' ? Outcome::pass : result[0] == 'S' ? Outcome::skip : Outcome::fail;
    out.message = result.substr(1);
    return out;
}

}  // namespace lapse::cli
