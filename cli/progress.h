// Progress of a long operation (a sweep's runs, a large capture decoded) on
// a terminal, and nothing in scripts: shown only while stderr is a terminal
// (and SIMNIC_NO_PROGRESS is unset), at most ten times a second, on one line
// that is rewritten and erased at the end, so that what the command prints
// on stdout is the same with or without it.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace simnic::cli {

class Progress {
public:
    // `when_stdout_is_tty`: also show it while stdout is a terminal (a
    // command whose own output scrolls by as it goes needs none then).
    explicit Progress(bool when_stdout_is_tty = true)
        : on_(isatty(STDERR_FILENO) && !std::getenv("SIMNIC_NO_PROGRESS") &&
              (when_stdout_is_tty || !isatty(STDOUT_FILENO))) {}
    ~Progress() { clear(); }
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;

    bool on() const { return on_; }

    // Rewrites the line, unless the last update was less than 100 ms ago
    // (`force`: now, as before a step that takes long).
    void update(bool force, const char* fmt, ...) __attribute__((format(printf, 3, 4))) {
        if (!on_) return;
        const auto now = std::chrono::steady_clock::now();
        if (!force && shown_ && now - last_ < std::chrono::milliseconds(100)) return;
        last_ = now;
        shown_ = true;
        std::fputs("\r\033[K", stderr);
        va_list ap;
        va_start(ap, fmt);
        std::vfprintf(stderr, fmt, ap);
        va_end(ap);
        std::fflush(stderr);
    }

    // Erases the line (before the command prints on a shared terminal).
    void clear() {
        if (!on_ || !shown_) return;
        std::fputs("\r\033[K", stderr);
        std::fflush(stderr);
        shown_ = false;
    }

private:
    bool on_;
    bool shown_ = false;
    std::chrono::steady_clock::time_point last_{};
};

}  // namespace simnic::cli
