// `simnic link add|show|delete` and `simnic daemon`: the device commands,
// shaped like iproute2's `rdma link` so that the tutorial's commands carry
// over (rdma link add rxe_lo type rxe netdev lo -> simnic link add rxe_lo
// type soft netdev lo).
//
// A device on a wire of frames instead of a netdev names the wire where
// `netdev` names the interface, and then the addresses the interface would
// have had, in `ip addr add`'s form (one keyword for both families: the
// address says which):
//   simnic link add sim0 type soft wire 127.0.0.1:47000 addr 10.0.0.10/24 [addr fd00::10/64]
//                        [mac 02:00:00:00:00:10] [mtu 1500]
// `persist` (a word of its own, anywhere after NAME) keeps the device: every
// daemon that starts later creates it again (control/persisted.h), until
// `simnic link delete NAME`.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "object_command.h"
#include "daemon_call.h"
#include "kept.h"
#include "simnic/control/persisted.h"
#include "simnic/control/runtime.h"
#include "simnic/daemon/daemon.h"
#include "simnic/model/config.h"

namespace simnic::cli {
namespace {

using control::Json;

using LinkArgs = ObjectArgs;  // NAME and keyword/value pairs

constexpr const char* kAddUsage =
    "usage: simnic link add NAME type soft|model netdev IFACE [pcap FILE] [config FILE] [loopback on|off]\n"
    "                       [ack_hold_us N] [persist]\n"
    "       simnic link add NAME type soft|model wire HOST:PORT addr A.B.C.D/N [addr X::Y/N] [mac M] [mtu N]\n"
    "                       [pcap FILE] [config FILE] [ack_hold_us N] [persist]\n"
    "  ack_hold_us: how long an RC ACK may wait for its QP's reply, to leave with it in one system\n"
    "          call (0 to 100, default 50; only QPs seen to reply within it hold one; 0: never)\n"
    "  config: a model device's TOML configuration (docs/model-config.toml); a soft device's holds\n"
    "          [congestion] only (congestion control: enable = 1 and the DCQCN parameters)\n"
    "  persist: create the device again whenever a daemon starts, until `simnic link delete NAME`\n"
    "  (model devices on a fabric with a switch, one per host of a topology: simnic fabric add)\n";

// True if the running daemon (started now if none runs, which re-creates
// the kept devices) has a device `name`.
bool daemon_has(const std::string& name) {
    Json reply;
    if (call_daemon(Json{{"op", "link_show"}}, true, reply) != CallResult::Ok) return false;
    for (const Json& l : reply.value("links", Json::array()))
        if (l.value("ifname", "") == name) return true;
    return false;
}

int link_add(const LinkArgs& a) {
    if (a.words.empty()) {
        std::fputs(kAddUsage, stderr);
        return 2;
    }
    Json req{{"op", "link_add"}, {"name", a.words[0]}};
    bool persist = false;
    std::string config_origin;
    for (size_t i = 1; i < a.words.size(); i += 2) {
        const std::string& k = a.words[i];
        if (k == "persist") {
            persist = true;
            --i;  // a word without a value
            continue;
        }
        if (i + 1 >= a.words.size()) {
            std::fprintf(stderr, "simnic link add: '%s' needs a value\n", k.c_str());
            return 2;
        }
        const std::string& v = a.words[i + 1];
        // The daemon runs elsewhere: give it absolute paths.
        char buf[4096];
        const std::string abs = (v.empty() || v[0] == '/' || !getcwd(buf, sizeof buf)) ? v : std::string(buf) + "/" + v;
        if (k == "type" || k == "netdev" || k == "loopback" || k == "wire" || k == "mac" || k == "mtu" ||
            k == "ack_hold_us") {
            if (req.contains(k)) {
                std::fprintf(stderr, "simnic link add: '%s' given twice\n", k.c_str());
                return 2;
            }
            req[k] = v;
        } else if (k == "addr") {
            // One keyword per address, as `ip addr add` takes them; the
            // request carries them comma-separated, in order.
            if (v.find(',') != std::string::npos) {
                std::fprintf(stderr, "simnic link add: one address per 'addr' (%s)\n", v.c_str());
                return 2;
            }
            req[k] = req.contains(k) ? req[k].get<std::string>() + "," + v : v;
        } else if (k == "pcap") req[k] = abs;
        else if (k == "config") {
            // Checked here, so that a mistake is reported with its line
            // before anything starts; the daemon gets the text.
            std::ifstream in(v);
            if (!in) {
                std::fprintf(stderr, "simnic link add: cannot read config %s: %s\n", v.c_str(), std::strerror(errno));
                return 1;
            }
            std::stringstream ss;
            ss << in.rdbuf();
            // Checked once the type is known (after the loop).
            req["config"] = abs;
            req["config_text"] = ss.str();
            config_origin = v;
        } else {
            std::fprintf(stderr,
                         "simnic link add: unknown keyword '%s' (type, netdev, wire, addr, mac, mtu, pcap, config, "
                         "loopback, ack_hold_us)\n",
                         k.c_str());
            return 2;
        }
    }
    if (req.contains("config")) {
        // A model device's whole configuration; a soft device's [congestion]
        // table only (congestion control, docs/model.md).
        std::string err;
        const std::string text = req["config_text"].get<std::string>();
        bool ok = true;
        if (req.value("type", "") == "model") {
            model::ModelConfig cfg;
            ok = model::parse_config(text, config_origin, cfg, err);
        } else {
            model::CongestionConfig cc;
            ok = model::parse_soft_config(text, config_origin, cc, err);
        }
        if (!ok) {
            std::fprintf(stderr, "simnic link add: %s\n", err.c_str());
            return 1;
        }
    }
    if (!req.contains("type") || req.contains("netdev") == req.contains("wire")) {
        std::fprintf(stderr, "simnic link add: 'type' and one of 'netdev' or 'wire' are required\n%s", kAddUsage);
        return 2;
    }
    if (req.contains("netdev")) {
        for (const char* k : {"addr", "mac", "mtu"})
            if (req.contains(k)) {
                std::fprintf(stderr, "simnic link add: '%s' applies to a device on a wire (a netdev has its own)\n", k);
                return 2;
            }
    } else if (!req.contains("addr")) {
        std::fprintf(stderr, "simnic link add: a device on a wire needs its IPv4 address: addr A.B.C.D/N\n");
        return 2;
    }
    if (persist) {
        // The same device kept before: a daemon starting now creates it
        // from the list, and asking again changes nothing.
        if (control::is_persisted(req) && daemon_has(a.words[0])) return 0;
    }
    Json reply;
    if (call_daemon(req, true, reply) != CallResult::Ok) return 1;
    return persist ? keep_created("device", req) : 0;
}

int link_show(const LinkArgs& a) {
    if (a.words.size() > 1) {
        std::fprintf(stderr, "usage: simnic link show [NAME]\n");
        return 2;
    }
    Json req{{"op", "link_show"}};
    if (!a.words.empty()) {
        // `rdma link show rxe_lo/1` names a port; accept it too.
        std::string name = a.words[0];
        if (auto slash = name.find('/'); slash != std::string::npos) name.resize(slash);
        req["name"] = name;
    }
    Json reply;
    // Showing links starts no daemon: with none running there is nothing to show.
    switch (call_daemon(req, false, reply)) {
        case CallResult::Ok: break;
        case CallResult::Failed: return 1;
        case CallResult::NoDaemon:
            if (a.words.empty()) {
                if (a.json) std::printf("[]\n");
                return 0;
            }
            std::fprintf(stderr, "simnic: no device %s\n", req["name"].get<std::string>().c_str());
            return 1;
    }
    if (a.json) {
        std::printf("%s\n", reply["links"].dump().c_str());
        return 0;
    }
    for (const Json& l : reply["links"]) {
        std::printf("link %s/%d state %s physical_state %s", l["ifname"].get<std::string>().c_str(),
                    l["port"].get<int>(), l["state"].get<std::string>().c_str(),
                    l["physical_state"].get<std::string>().c_str());
        if (l.contains("fabric")) {
            // A fabric's host (simnic fabric add): its fabric, then its addresses.
            std::printf(" fabric %s host %s mac %s", l["fabric"].get<std::string>().c_str(),
                        l.value("host", "").c_str(), l.value("mac", "").c_str());
            for (const Json& ad : l.value("addr", Json::array())) std::printf(" addr %s", ad.get<std::string>().c_str());
            std::printf("\n");
        } else if (l.contains("wire")) {
            // The wire, then the port's own link address and addresses.
            std::printf(" wire %s mac %s mtu %u", l["wire"].get<std::string>().c_str(),
                        l.value("mac", "").c_str(), l.value("mtu", 0u));
            for (const Json& ad : l.value("addr", Json::array())) std::printf(" addr %s", ad.get<std::string>().c_str());
            std::printf("\n");
        } else {
            std::printf(" netdev %s\n", l.value("netdev", "").c_str());
        }
    }
    return 0;
}

int link_delete(const LinkArgs& a) {
    if (a.words.size() != 1) {
        std::fprintf(stderr, "usage: simnic link delete NAME\n");
        return 2;
    }
    // A kept device is forgotten whether or not it runs now (not if in use).
    return delete_kept("device", "link_add", Json{{"op", "link_del"}, {"name", a.words[0]}},
                       "no simnic daemon is running (simnic link add starts one)");
}

}  // namespace

Runner add_link_command(CLI::App& app) {
    return add_object_command(
        app,
        {"link", "Add, show and delete simnic devices (like `rdma link`)",
         "Add a device: NAME type soft|model netdev IFACE | wire HOST:PORT addr A.B.C.D/N [...]", kAddUsage,
         "NAME and keyword/value pairs", "Show devices: [NAME]", "device name", "Delete a device: NAME",
         "device name"},
        {link_add, link_show, link_delete, {}});
}

Runner add_daemon_command(CLI::App& app) {
    auto opt = std::make_shared<daemon::DaemonOptions>();
    auto stop = std::make_shared<bool>(false);
    auto start = std::make_shared<bool>(false);
    auto status = std::make_shared<bool>(false);
    CLI::App* sub = app.add_subcommand("daemon", "Run the simnic daemon (normally started on demand by simnic link add)");
    sub->add_flag("-f,--foreground", opt->foreground, "stay in the foreground and log to stderr");
    sub->add_flag("--stop", *stop, "stop the running daemon (its devices go with it)");
    sub->add_flag("--start", *start,
                  "start a daemon in the background unless one runs, and return once it answers "
                  "(with its kept devices and fabrics created)");
    sub->add_flag("--status", *status,
                  "print the running daemon's pid, version and heap (bytes in use, bytes held from the "
                  "kernel), one `name value` per line; exit 1 if none runs");
    sub->get_option("--status")->excludes("--stop")->excludes("--start")->excludes("--foreground");
    sub->get_option("--stop")->excludes("--start")->excludes("--foreground");
    return [opt, stop, start, status] {
        if (*status) {
            Json reply;
            const CallResult r = call_daemon(Json{{"op", "ping"}}, false, reply);
            if (r == CallResult::NoDaemon) std::fprintf(stderr, "simnic: no simnic daemon is running\n");
            if (r != CallResult::Ok) return 1;
            std::printf("pid %u\nversion %s\n", reply.value("pid", 0u), reply.value("version", std::string("?")).c_str());
            for (const char* k : {"heap_in_use", "heap_held"})
                std::printf("%s %llu\n", k, static_cast<unsigned long long>(reply.value(k, uint64_t(0))));
            return 0;
        }
        if (*start) {
            Json reply;
            return call_daemon(Json{{"op", "ping"}}, true, reply) == CallResult::Ok ? 0 : 1;
        }
        if (*stop) {
            Json reply;  // nothing running is nothing to stop
            const CallResult r = call_daemon(Json{{"op", "shutdown"}}, false, reply);
            if (r != CallResult::Ok) return r == CallResult::Failed ? 1 : 0;
            // The daemon answers before it has told its applications and
            // exited: wait until it is gone (its lock free), so that the next
            // command starts a fresh daemon instead of reaching the stopping
            // one ("lost the simnic daemon: connection closed", seen in
            // daemon_death.write_bw_stop under load).
            const control::RuntimePaths paths = control::runtime_paths();
            for (int i = 0; i < 1000 && control::daemon_lock_held(paths); ++i) usleep(10000);
            if (control::daemon_lock_held(paths)) {
                std::fprintf(stderr, "simnic: the daemon was asked to stop and still runs after 10 s\n");
                return 1;
            }
            return 0;
        }
        int ready_fd = -1;
        if (const char* s = std::getenv("SIMNIC_READY_FD")) {
            ready_fd = std::atoi(s);
            unsetenv("SIMNIC_READY_FD");
        }
        return daemon::run_daemon(*opt, ready_fd);
    };
}

}  // namespace simnic::cli
