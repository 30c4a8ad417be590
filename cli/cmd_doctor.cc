// `simnic doctor [DEVICE] [--json]`: what is wrong, and the fix (doctor/).
// Exit status 1 when a check fails, else 0.
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "doctor/doctor.h"

namespace simnic::cli {
namespace {

struct DoctorArgs {
    doctor::Options opt;
    bool json = false;
};

int run_doctor(const DoctorArgs& a) {
    const std::vector<doctor::Check> checks = doctor::run(a.opt);
    bool failed = false;
    for (const doctor::Check& c : checks) failed |= c.status == doctor::Status::Fail;
    if (a.json) {
        control::Json arr = control::Json::array();
        for (const doctor::Check& c : checks) {
            control::Json j{{"check", c.id}, {"status", to_string(c.status)}, {"what", c.what}};
            if (!c.device.empty()) j["device"] = c.device;
            if (!c.fix.empty()) j["fix"] = c.fix;
            arr.push_back(j);
        }
        std::printf("%s\n", control::Json{{"ok", !failed}, {"checks", arr}}.dump(2).c_str());
        return failed ? 1 : 0;
    }
    for (const doctor::Check& c : checks) {
        const std::string label = c.device.empty() ? c.id : c.id + " " + c.device;
        std::printf("%-4s  %-20s %s\n", to_string(c.status), label.c_str(), c.what.c_str());
        if (!c.fix.empty() && c.status != doctor::Status::Ok)
            std::printf("      %-20s fix: %s\n", "", c.fix.c_str());
    }
    std::printf(failed ? "simnic doctor: something is wrong (FAIL above)\n" : "simnic doctor: nothing wrong\n");
    return failed ? 1 : 0;
}

}  // namespace

Runner add_doctor_command(CLI::App& app) {
    auto args = std::make_shared<DoctorArgs>();
    CLI::App* sub = app.add_subcommand(
        "doctor", "Check the daemon, a device, its netdev, GIDs, UDP 4791, simnic exec, ptrace and stale objects");
    sub->add_option("device", args->opt.device, "only this device (default: every device)");
    sub->add_flag("-j,--json", args->json, "JSON output");
    sub->add_option("--peer", args->opt.peer,
                    "another host's RoCE address: probe UDP 4791 to it and back (its CM answers a request)");
    sub->add_option("--probe-timeout", args->opt.probe_timeout_ms,
                    "how long the UDP 4791 probe waits for the device to count it, in ms (default 1000)");
    return [args] { return run_doctor(*args); };
}

}  // namespace simnic::cli
