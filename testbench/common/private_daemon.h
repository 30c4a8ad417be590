// A simnic daemon of a test's own, for the tests that drive a device through
// a real daemon (the soft engine's, the host driver context's): a private
// runtime directory, set as SIMNIC_RUNTIME_DIR for the test process, and one
// soft device on lo, added by the simnic executable that $SIMNIC_EXE names
// (`simnic link add` starts the daemon). Going out of scope, it shuts the
// daemon down and removes the directory. Header-only; Catch2 checks.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "simnic/control/client.h"

namespace simnic::test {

using control::Client;
using control::Json;
using control::runtime_paths;

class PrivateDaemon {
public:
    // `device` on lo, in a directory /tmp/simnic-`tag`.XXXXXX; `type` is the
    // engine (`simnic link add ... type`: soft or model).
    // `extra`: more of `simnic link add`'s words (" config FILE").
    PrivateDaemon(const std::string& device, const std::string& tag, const std::string& type = "soft",
                  const std::string& extra = "")
        : device_(device) {
        std::string tmpl = "/tmp/simnic-" + tag + ".XXXXXX";
        REQUIRE(mkdtemp(tmpl.data()));
        dir_ = tmpl;
        setenv("SIMNIC_RUNTIME_DIR", dir_.c_str(), 1);
        // No kept devices of the user's (simnic link add ... persist).
        setenv("SIMNIC_CONFIG_DIR", (dir_ + "/no-kept-devices").c_str(), 1);
        const char* e = std::getenv("SIMNIC_EXE");
        INFO("SIMNIC_EXE must name the simnic executable");
        REQUIRE(e);
        exe_ = e;
        const int rc = run(exe_ + " link add " + device_ + " type " + type + " netdev lo" + extra);
        if (rc != 0) {
            // The failed link add may have started a daemon: stop it, since
            // a failing constructor never reaches the destructor.
            run(exe_ + " daemon --stop");
            run("rm -rf '" + dir_ + "'");
        }
        REQUIRE(rc == 0);
    }
    ~PrivateDaemon() {
        std::string err, notice;
        Client c = Client::connect(runtime_paths(), false, err, notice);
        if (c.connected()) c.request(Json{{"op", "shutdown"}});
        run("rm -rf '" + dir_ + "'");
    }
    PrivateDaemon(const PrivateDaemon&) = delete;
    PrivateDaemon& operator=(const PrivateDaemon&) = delete;

    const std::string& exe() const { return exe_; }
    const std::string& device() const { return device_; }

    // A shell command's exit status (std::system's).
    static int run(const std::string& cmd) { return std::system(cmd.c_str()); }

    // One request to the daemon, on a connection of its own.
    Json request(const Json& req) const {
        std::string err, notice;
        Client c = Client::connect(runtime_paths(), false, err, notice);
        INFO("connecting to the daemon: " << err);
        REQUIRE(c.connected());
        return c.request(req);
    }

private:
    std::string device_, dir_, exe_;
};

}  // namespace simnic::test
