// The checks of `simnic doctor`, in the order the tutorial walks them: the
// environment (runtime directory, daemon), the device and its port (3.1,
// 6.3), the netdev under it (2.3, 6.3), the GID table (3.3, 6.4 step 3), UDP
// 4791 on the real path (6.4 step 2), how applications reach the device
// (1.1: simnic's uverbs is the preload), what lets the device reach memory
// (Yama), and objects left by processes that are gone (6.5). Before the
// devices: the kept devices and fabrics (persist) a daemon could not create
// again, which are otherwise only in its log.
#include "doctor.h"

#include <arpa/inet.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "simnic/control/client.h"
#include "simnic/control/persisted.h"
#include "simnic/control/resources.h"
#include "simnic/control/runtime.h"
#include "simnic/fw/linux_netdev.h"
#include "simnic/roce/rules.h"

namespace simnic::cli::doctor {

using control::Json;

const char* to_string(Status s) {
    switch (s) {
        case Status::Ok: return "OK";
        case Status::Note: return "NOTE";
        case Status::Warn: return "WARN";
        case Status::Fail: return "FAIL";
        case Status::Skip: return "SKIP";
    }
    return "?";
}

bool ask(const Json& req, Json& reply, std::string& err) {
    std::string notice;
    control::Client c = control::Client::connect(control::runtime_paths(), false, err, notice);
    if (!c.connected()) {
        if (err.empty()) err = "no simnic daemon is running";
        return false;
    }
    reply = c.request(req, 3000);
    if (!reply.value("ok", false)) {
        err = reply.value("error", std::string("request failed"));
        return false;
    }
    return true;
}

// Every page of a `resources` request: the device records, merged.
static bool resources(const Json& req, Json& devices, std::string& err) {
    return control::fetch_resources(
        req, [&err](const Json& r, Json& reply) { return ask(r, reply, err); }, devices, err);
}

namespace {

std::string mib(uint64_t bytes) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f MiB", double(bytes) / (1024.0 * 1024.0));
    return b;
}

std::string dotted(const std::array<uint8_t, 4>& a) {
    return std::to_string(a[0]) + "." + std::to_string(a[1]) + "." + std::to_string(a[2]) + "." +
           std::to_string(a[3]);
}

std::string read_line(const std::string& path) {
    std::ifstream in(path);
    std::string s;
    std::getline(in, s);
    return s;
}

bool process_exists(uint32_t pid) { return pid != 0 && (kill(pid_t(pid), 0) == 0 || errno == EPERM); }

class Doctor {
public:
    explicit Doctor(const Options& opt) : opt_(opt) {}

    std::vector<Check> run() {
        const bool daemon_ok = runtime_dir() && daemon();
        std::vector<Json> links;
        if (daemon_ok) kept();
        if (daemon_ok) links = devices();
        else skip("device", "", "no daemon to ask");
        for (const Json& l : links) device_checks(l);
        exec();
        ptrace();
        if (daemon_ok) stale();
        else skip("stale", "", "no daemon to ask");
        return std::move(out_);
    }

private:
    Check& add(const std::string& id, const std::string& dev, Status s, const std::string& what,
               const std::string& fix = {}) {
        out_.push_back(Check{id, dev, s, what, fix});
        return out_.back();
    }
    void skip(const std::string& id, const std::string& dev, const std::string& why) {
        add(id, dev, Status::Skip, why);
    }

    // The tutorial's 2.4 (device nodes under /dev/infiniband) for simnic:
    // the runtime directory holds the daemon's socket.
    bool runtime_dir() {
        paths_ = control::runtime_paths();
        const char* from = std::getenv("SIMNIC_RUNTIME_DIR")  ? "$SIMNIC_RUNTIME_DIR"
                           : std::getenv("XDG_RUNTIME_DIR")   ? "$XDG_RUNTIME_DIR/simnic"
                           : geteuid() == 0                   ? "root's /run/simnic"
                                                              : "the private fallback";
        if (!paths_.error.empty()) {
            add("runtime_dir", "", Status::Fail, paths_.error,
                "remove or fix the directory, or set SIMNIC_RUNTIME_DIR (or XDG_RUNTIME_DIR) to a directory of "
                "your own");
            return false;
        }
        struct stat st{};
        if (stat(paths_.dir.c_str(), &st) != 0) {
            add("runtime_dir", "", Status::Ok,
                paths_.dir + " (" + from + ") does not exist yet: no daemon has run; simnic link add creates it");
            return true;
        }
        if (std::string why = control::check_private_dir(paths_.dir, true); !why.empty() && paths_.private_fallback) {
            add("runtime_dir", "", Status::Fail, why, "remove " + paths_.dir + " and let simnic create it again");
            return false;
        }
        add("runtime_dir", "", Status::Ok, paths_.dir + " (" + from + ")");
        return true;
    }

    bool daemon() {
        std::string err, notice;
        control::Client c = control::Client::connect(paths_, false, err, notice);
        if (!c.connected()) {
            struct stat st{};
            const bool socket_left = stat(paths_.socket.c_str(), &st) == 0;
            if (control::daemon_lock_held(paths_)) {
                add("daemon", "", Status::Fail,
                    "a daemon holds " + paths_.lock + " but its socket does not take connections" +
                        (err.empty() ? "" : " (" + err + ")"),
                    "simnic daemon --stop, or kill the daemon (its pid is in " + paths_.state +
                        "), then simnic link add again");
            } else if (socket_left) {
                add("daemon", "", Status::Fail,
                    "the daemon that ran here is gone (its socket " + paths_.socket + " is left)" +
                        (notice.empty() ? "" : ": " + notice),
                    "simnic link add NAME type soft netdev IFACE starts a new one (and removes the stale socket); "
                    "its devices must be added again");
            } else {
                add("daemon", "", Status::Fail, "no simnic daemon is running, so there is no simnic device",
                    "simnic link add rxe_lo type soft netdev lo (starts the daemon)");
            }
            return false;
        }
        const Json r = c.request(Json{{"op", "ping"}}, 2000);
        if (!r.value("ok", false)) {
            add("daemon", "", Status::Fail,
                "the daemon takes connections but does not answer: " + r.value("error", std::string("no reply")),
                "simnic daemon --stop (or kill its pid, in " + paths_.state + ") and add the devices again");
            return false;
        }
        daemon_pid_ = r.value("pid", 0u);
        add("daemon", "", Status::Ok,
            "pid " + std::to_string(daemon_pid_) + " answers (" + r.value("version", std::string("?")) +
                "), heap " + mib(r.value("heap_in_use", uint64_t(0))) + " in use of " +
                mib(r.value("heap_held", uint64_t(0))) + " held");
        return true;
    }

    // The kept devices and fabrics (control/persisted.h): each should run,
    // since a daemon creates them all when it starts; one that does not is
    // one it could not create, and its log says why. Nothing to say (no
    // line) when nothing is kept; with a device, only what makes it.
    void kept() {
        std::string bad;
        const std::vector<Json> entries = control::load_persisted(bad);
        if (!bad.empty()) add("kept", "", Status::Warn, bad, "remove or fix the line(s) in " + control::persisted_devices_path());
        std::map<std::string, bool> running;  // "link_add NAME" / "fabric_add NAME"
        Json reply;
        std::string err;
        if (ask(Json{{"op", "link_show"}}, reply, err))
            for (const Json& l : reply["links"]) running["link_add " + l.value("ifname", std::string())] = true;
        if (ask(Json{{"op", "fabric_show"}}, reply, err))
            for (const Json& f : reply["fabrics"]) running["fabric_add " + f.value("name", std::string())] = true;
        unsigned ok = 0, failed = 0;
        for (const Json& e : entries) {
            const std::string op = e.value("op", std::string()), name = e.value("name", std::string());
            const bool fabric = op == "fabric_add";
            if (!opt_.device.empty() && opt_.device != name && !(fabric && opt_.device.rfind(name + "_", 0) == 0))
                continue;
            if (running.count(op + " " + name)) {
                ++ok;
                continue;
            }
            ++failed;
            const std::string what = fabric ? "fabric" : "device";
            const std::string why = kept_failure(what, name);
            add("kept", name, Status::Fail,
                "kept " + what + " " + name + " is not running: the daemon could not create it again (" +
                    (why.empty() ? "its log says why" : why) + ")",
                std::string("fix that and restart the daemon (simnic daemon --stop; simnic daemon --start), or "
                            "forget it: simnic ") +
                    (fabric ? "fabric" : "link") + " delete " + name);
        }
        if (ok > 0 && failed == 0) add("kept", "", Status::Ok, std::to_string(ok) + " kept device(s) and fabric(s), all running");
    }

    // Why the daemon last failed to create kept `what` `name`, from its
    // log in the runtime directory (a daemon in the foreground logs
    // elsewhere: empty).
    std::string kept_failure(const std::string& what, const std::string& name) const {
        std::ifstream in(paths_.dir + "/simnicd.log");
        const std::string key = "kept " + what + " " + name + " not created: ";
        std::string line, why;
        while (std::getline(in, line))
            if (auto at = line.find(key); at != std::string::npos) why = line.substr(at + key.size());
        return why;
    }

    std::vector<Json> devices() {
        Json reply;
        std::string err;
        std::vector<Json> links;
        if (!ask(Json{{"op", "link_show"}}, reply, err)) {
            add("device", opt_.device, Status::Fail, "cannot list devices: " + err);
            return links;
        }
        std::string names;
        for (const Json& l : reply["links"]) {
            names += (names.empty() ? "" : ", ") + l.value("ifname", std::string());
            if (opt_.device.empty() || l.value("ifname", std::string()) == opt_.device) links.push_back(l);
        }
        if (!opt_.device.empty() && links.empty()) {
            add("device", opt_.device, Status::Fail,
                "no simnic device " + opt_.device + " (devices: " + (names.empty() ? "none" : names) + ")",
                "simnic link add " + opt_.device + " type soft netdev IFACE");
        } else if (links.empty()) {
            add("device", "", Status::Fail, "the daemon has no device",
                "simnic link add rxe_lo type soft netdev lo (or netdev eth0 for another host to reach it)");
        }
        for (const Json& l : links)
            add("device", l.value("ifname", std::string()), Status::Ok,
                "type " + l.value("type", std::string("?")) +
                    (l.contains("fabric") ? ", host " + l.value("host", std::string()) + " of fabric " +
                                                l.value("fabric", std::string())
                     : l.contains("wire") ? ", on wire " + l.value("wire", std::string())
                                          : ", on netdev " + l.value("netdev", std::string())));
        return links;
    }

    void device_checks(const Json& l) {
        const std::string dev = l.value("ifname", std::string());
        const std::string state = l.value("state", std::string());
        // On a wire or a fabric: a NIC with addresses of its own, no netdev.
        const bool fabric = l.contains("fabric");
        const bool wire = l.contains("wire") || fabric;
        std::optional<fw::NetdevSnapshot> nd;
        const std::string netdev = l.value("netdev", std::string());
        if (!wire) nd = fw::LinuxNetdev(netdev).query();

        // Port: as rxe's, it follows the netdev (tutorial 4.1, 6.3).
        if (state == "ACTIVE") {
            add("port", dev, Status::Ok, dev + "/1 state ACTIVE physical_state LINK_UP");
        } else {
            add("port", dev, Status::Fail,
                dev + "/1 state " + state + " physical_state " + l.value("physical_state", std::string()) +
                    " (ibv_devinfo: PORT_DOWN): the netdev under it is down or gone (see netdev)",
                "bring the netdev up (below); the port follows it");
        }

        if (wire) {
            std::string addrs;
            for (const Json& a : l.value("addr", Json::array())) addrs += " " + a.get<std::string>();
            add("netdev", dev, Status::Ok,
                (fabric ? "none: the device is host " + l.value("host", std::string()) + " of fabric " +
                              l.value("fabric", std::string())
                        : "none: the device is a NIC of its own on wire " + l.value("wire", std::string())) +
                    " (mac " + l.value("mac", std::string()) + ")");
            add("address", dev, Status::Ok, "its own:" + addrs);
            mtu_check(dev, l.value("mtu", 1500u), fabric ? "the fabric's" : "the wire's");
        } else if (!nd) {
            add("netdev", dev, Status::Fail, "netdev " + netdev + " does not exist (any more)",
                "simnic link delete " + dev + "; simnic link add " + dev + " type " +
                    l.value("type", std::string("soft")) + " netdev IFACE with an interface of `ip link show`");
            skip("address", dev, "no netdev");
            skip("mtu", dev, "no netdev");
        } else {
            if (!nd->up) {
                add("netdev", dev, Status::Fail, "netdev " + netdev + " is DOWN", "ip link set " + netdev + " up");
            } else if (!nd->running) {
                add("netdev", dev, Status::Fail, "netdev " + netdev + " is UP but has no carrier (NO-CARRIER)",
                    "connect the cable or the veth's peer; ip link show " + netdev);
            } else {
                add("netdev", dev, Status::Ok, "netdev " + netdev + " is UP with carrier");
            }
            if (nd->ipv4.empty()) {
                add("address", dev, Status::Fail,
                    "netdev " + netdev + " has no IPv4 address: the GID table has no RoCE v2 IPv4 entry and "
                    "connections through it cannot be made (tutorial 6.3)",
                    "ip addr add A.B.C.D/N dev " + netdev + ", then simnic link delete " + dev +
                        " and simnic link add it again");
            } else {
                std::string a;
                for (const auto& v4 : nd->ipv4) a += (a.empty() ? "" : ", ") + dotted(v4);
                add("address", dev, Status::Ok,
                    "netdev " + netdev + " has " + a + ": connect to it (there is no address to give " + dev + ")");
            }
            mtu_check(dev, nd->mtu, "netdev " + netdev + "'s");
        }

        gid_check(dev, nd);
        if (fabric) {
            add("udp4791", dev, Status::Ok, "on a fabric: frames cross its switch in simulated time, not the kernel");
        } else if (wire) {
            add("udp4791", dev, Status::Ok, "on a wire: frames do not go through the kernel's UDP stack");
        } else if (!nd || nd->ipv4.empty() || state != "ACTIVE") {
            skip("udp4791", dev, "needs an active port on a netdev with an IPv4 address");
        } else {
            Check& c = add("udp4791", dev, Status::Skip, "");
            const auto& a = nd->ipv4[0];
            const unsigned self = (unsigned(a[0]) << 24) | (unsigned(a[1]) << 16) | (unsigned(a[2]) << 8) | a[3];
            probe_udp4791(dev, self, 0, opt_.probe_timeout_ms, c);
            if (c.status == Status::Ok && l.value("loopback", std::string()) == "on")
                c.what += " (loopback on: its frames to itself skip the kernel)";
            if (c.status == Status::Ok && netdev != "lo" && opt_.peer.empty())
                c.what += "; a firewall rule for " + netdev + " alone is not on this path: --peer ADDR probes "
                          "the way to another host";
            in_addr pa{};
            if (!opt_.peer.empty() && inet_pton(AF_INET, opt_.peer.c_str(), &pa) == 1) {
                Check& pc = add("udp4791", dev, Status::Skip, "");
                probe_udp4791(dev, self, ntohl(pa.s_addr), opt_.probe_timeout_ms, pc);
            } else if (!opt_.peer.empty()) {
                add("udp4791", dev, Status::Fail, "--peer " + opt_.peer + " is not an IPv4 address",
                    "give the peer's address on its RoCE netdev, e.g. --peer 192.168.1.11");
            }
        }
        if (!fabric) overflow_check(dev, wire);
    }

    // Datagrams the kernel dropped at the device's sockets (RX_STATS_BLOCK,
    // hw-spec 2.6.4): listed only when there are some, since they are lost
    // before the device could see them (a peer's retransmits, a UC message
    // that never completes). The device asks for 8 MiB of receive buffer,
    // which net.core.rmem_max caps.
    void overflow_check(const std::string& dev, bool wire) {
        Json reply;
        std::string err;
        if (!ask(Json{{"op", "stats"}, {"device", dev}}, reply, err)) return;
        const uint64_t n = reply["stats"].value("rx_overflow_drops", uint64_t{0});
        if (n == 0) return;
        long rmem_max = 0;
        if (FILE* f = std::fopen("/proc/sys/net/core/rmem_max", "re")) {
            if (std::fscanf(f, "%ld", &rmem_max) != 1) rmem_max = 0;
            std::fclose(f);
        }
        std::string what = "the kernel dropped " + std::to_string(n) + " datagram" + (n == 1 ? "" : "s") +
                           " at the device's " + (wire ? "socket from the wire" : "UDP 4791 sockets") +
                           " for want of buffer room (UDP RcvbufErrors in /proc/net/snmp): the device never saw them";
        if (rmem_max > 0) what += "; net.core.rmem_max is " + std::to_string(rmem_max);
        const std::string fix =
            rmem_max > 0 && rmem_max < (8 << 20)
                ? "as root: sysctl -w net.core.rmem_max=8388608, then simnic link delete " + dev +
                      " and add it again (the device asks for 8 MiB); or have the senders send less at once"
                : "have the senders send less at once, or give the engine a CPU of its own";
        add("rx_overflow", dev, Status::Warn, what, fix);
    }

    void mtu_check(const std::string& dev, unsigned mtu, const std::string& whose) {
        const auto ib = roce::ib_mtu_from_netdev_mtu(int(mtu));
        const unsigned active = roce::ib_mtu_bytes(roce::rxe_active_mtu(int(mtu)));
        if (!ib) {
            add("mtu", dev, Status::Warn,
                whose + " MTU " + std::to_string(mtu) + " is too small for any IB MTU; active_mtu is 256 and "
                "full-sized packets will not fit",
                "ip link set DEV mtu 1500 (or larger)");
            return;
        }
        add("mtu", dev, Status::Ok,
            whose + " MTU " + std::to_string(mtu) + " gives active_mtu " + std::to_string(active) +
                " (ibv_devinfo); two hosts use the smaller of their active MTUs");
    }

    // The GID table (tutorial 3.3, 6.4 step 3). Returns the index of the
    // first RoCE v2 GID over IPv4 (IPv4-mapped, ::ffff:a.b.c.d), or -1.
    int gid_check(const std::string& dev, const std::optional<fw::NetdevSnapshot>& nd) {
        Json devs;
        std::string err;
        if (!resources(Json{{"op", "resources"}, {"device", dev}, {"lists", "gids"}}, devs, err) || devs.empty()) {
            add("gid", dev, Status::Fail, "cannot read the GID table: " + err);
            return -1;
        }
        const Json& gids = devs[0]["gids"];
        if (gids.empty()) {
            add("gid", dev, Status::Fail,
                "the GID table is empty: nothing can connect (rping and perftest stop at the handshake)",
                "give the netdev an address (ip addr add), then simnic link delete/add " + dev);
            return -1;
        }
        int v4 = -1;
        std::string v4gid;
        for (const Json& g : gids) {
            const std::string s = g.value("gid", std::string());
            if (s.rfind("::ffff:", 0) == 0 && s.find('.') != std::string::npos) {
                v4 = g.value("index", -1);
                v4gid = s;
                break;
            }
        }
        if (v4 < 0) {
            add("gid", dev, Status::Fail,
                std::to_string(gids.size()) + " GID(s), none RoCE v2 over IPv4 (::ffff:A.B.C.D): tools given an "
                "IPv4 address or -g/-x of an IPv4 GID cannot connect",
                "give the netdev an IPv4 address (ip addr add), then simnic link delete/add " + dev);
            return -1;
        }
        // A GID whose address the netdev no longer has answers nothing.
        if (nd) {
            bool present = false;
            for (const auto& a : nd->ipv4) present |= "::ffff:" + dotted(a) == v4gid;
            if (!present) {
                add("gid", dev, Status::Warn,
                    "GID index " + std::to_string(v4) + " is " + v4gid + ", an address netdev " + nd->name +
                        " no longer has",
                    "simnic link delete " + dev + " and add it again, so that its GIDs follow the netdev");
                return v4;
            }
        }
        add("gid", dev, Status::Ok,
            std::to_string(gids.size()) + " GID(s); RoCE v2 over IPv4 is index " + std::to_string(v4) + " (" +
                v4gid + "): ibv_rc_pingpong -g " + std::to_string(v4) + ", perftest -x " + std::to_string(v4) +
                " (simnic resource show gid lists them)");
        return v4;
    }

    // Applications reach simnic devices through the preloaded provider
    // (simnic exec); without it libibverbs finds only kernel devices.
    void exec() {
        const bool under = maps_of("self").find("libsimnic-verbs") != std::string::npos;
        if (under) {
            add("exec", "", Status::Ok,
                "this doctor runs under simnic exec (libsimnic-verbs.so is loaded): a program started the same "
                "way sees simnic devices");
        } else {
            add("exec", "", Status::Note,
                "this doctor was not started under simnic exec: a program started this way sees no simnic device "
                "(ibv_devices lists none, tools say 'No IB devices found' or 'No such device')",
                "start RDMA programs as simnic exec -- PROGRAM ARGS, or eval \"$(simnic exec --print-env)\" first");
        }
    }

    static std::string maps_of(const std::string& pid) {
        std::ifstream in("/proc/" + pid + "/maps");
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }

    // The device reads and writes registered memory with process_vm_readv/
    // writev, which Yama's ptrace_scope governs (docs/architecture.md).
    void ptrace() {
        const std::string scope = read_line("/proc/sys/kernel/yama/ptrace_scope");
        if (scope.empty()) {
            add("ptrace", "", Status::Ok,
                "no Yama: the daemon reaches registered memory of your processes as any process of your uid may");
        } else if (scope == "0" || scope == "1") {
            add("ptrace", "", Status::Ok,
                "Yama ptrace_scope " + scope +
                    (scope == "1" ? ": the provider calls prctl(PR_SET_PTRACER, daemon) for each context" : ""));
        } else if (scope == "2") {
            add("ptrace", "", Status::Fail,
                "Yama ptrace_scope 2: only CAP_SYS_PTRACE may reach another process's memory; every RDMA "
                "transfer fails (local protection or remote access errors)",
                "sysctl kernel.yama.ptrace_scope=1 (as root), or run the daemon with CAP_SYS_PTRACE");
        } else {
            add("ptrace", "", Status::Fail,
                "Yama ptrace_scope " + scope + ": no process may reach another's memory until reboot",
                "set kernel.yama.ptrace_scope=1 in /etc/sysctl.d and reboot");
        }
        // process_vm_* also needs a dumpable target: a process that made
        // itself not dumpable, or runs a set-user-ID program, is out of
        // reach whatever ptrace_scope says.
        if (prctl(PR_GET_DUMPABLE) != 1)
            add("ptrace", "", Status::Fail,
                "this process is not dumpable (a set-user-ID or set-group-ID program, or prctl(PR_SET_DUMPABLE, "
                "0)): the daemon cannot reach the memory of a program in this state, so its transfers fail",
                "run RDMA programs without set-user-ID bits, and do not clear PR_SET_DUMPABLE in them");
        // process_vm_* also needs the same uid.
        if (daemon_pid_ != 0) {
            std::ifstream in("/proc/" + std::to_string(daemon_pid_) + "/status");
            std::string line;
            while (std::getline(in, line))
                if (line.rfind("Uid:", 0) == 0) {
                    unsigned uid = ~0u;
                    std::istringstream(line.substr(4)) >> uid;
                    if (uid != geteuid() && uid != 0)
                        add("ptrace", "", Status::Fail,
                            "the daemon runs as uid " + std::to_string(uid) + ", you as uid " +
                                std::to_string(geteuid()) + ": it cannot reach your memory",
                            "each user runs a daemon of their own: unset SIMNIC_RUNTIME_DIR and simnic link add");
                }
        }
    }

    // Objects whose owner is gone (tutorial 6.5). The daemon frees a
    // process's objects when the last descriptor of its connection closes;
    // a child that inherited the descriptor keeps them after its parent
    // died.
    void stale() {
        Json records;
        std::string err;
        Json req{{"op", "resources"}, {"lists", "qp_list,cq_list,mr_list,mw_list,pd_list,srq_list"}};
        if (!opt_.device.empty()) req["device"] = opt_.device;
        if (!resources(req, records, err)) {
            skip("stale", opt_.device, "cannot list objects: " + err);
            return;
        }
        // pid -> device -> kind -> count
        std::map<uint32_t, std::map<std::string, std::map<std::string, unsigned>>> gone;
        for (const Json& d : records) {
            const std::string dev = d.value("name", std::string());
            for (const auto& [list, kind] : std::map<std::string, std::string>{
                     {"qp_list", "QP"}, {"cq_list", "CQ"}, {"mr_list", "MR"}, {"mw_list", "MW"},
                     {"pd_list", "PD"}, {"srq_list", "SRQ"}}) {
                if (!d.contains(list)) continue;
                for (const Json& o : d[list]) {
                    const uint32_t pid = o.value("pid", 0u);
                    if (!process_exists(pid)) ++gone[pid][dev][kind];
                }
            }
        }
        if (gone.empty()) {
            add("stale", opt_.device, Status::Ok, "every QP, CQ, MR, MW, PD and SRQ belongs to a running process");
            return;
        }
        for (const auto& [pid, devs] : gone)
            for (const auto& [dev, kinds] : devs) {
                std::string what;
                for (const auto& [kind, n] : kinds) what += (what.empty() ? "" : ", ") + std::to_string(n) + " " + kind;
                add("stale", dev, Status::Fail,
                    "pid " + std::to_string(pid) + " is gone but " + what + " of it remain on " + dev +
                        ": a process it started still holds its connection to the daemon",
                    "find and end that process (ss -xp | grep simnicd.sock); or simnic daemon --stop and add the "
                    "devices again");
            }
    }

    const Options& opt_;
    control::RuntimePaths paths_;
    uint32_t daemon_pid_ = 0;
    std::vector<Check> out_;
};

}  // namespace

std::vector<Check> run(const Options& opt) { return Doctor(opt).run(); }

}  // namespace simnic::cli::doctor
