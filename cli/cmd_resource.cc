// `simnic resource show [qp|cq|mr|mw|pd|srq|cm_id|gid] [-d DEV] [-j]` and
// `simnic stats NAME`: what the devices hold and count, shaped like iproute2's
// `rdma resource` (its field names, in its order, for the fields simnic has).
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "commands.h"
#include "daemon_call.h"
#include "simnic/control/resources.h"
#include "simnic/hw/verbs.h"

namespace simnic::cli {
namespace {

using control::Json;

struct ResourceArgs {
    std::string what;  // empty: summary
    std::string device;
    bool json = false;
};

// The daemon reports QP types and states as their verbs numbers; "?" for a
// number outside the vocabulary.
const char* qp_type_name(int t) { return t >= 0 && t <= 0xFF ? hw::to_string(hw::QpType(t)) : "?"; }
const char* qp_state_name(int s) { return s >= 0 && s <= 0xFF ? hw::to_string(hw::QpState(s)) : "?"; }
// The process's name from /proc/PID/comm; empty if it cannot be read.
// Read once per process and command: a listing's objects mostly share a few
// owners, and 30,000 MRs of one process were 30,000 opens of one file, more
// of the command's time than the daemon's pages.
std::string read_comm(uint32_t pid) {
    static std::unordered_map<uint32_t, std::string> known;
    if (auto it = known.find(pid); it != known.end()) return it->second;
    std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
    std::string c;
    std::getline(in, c);
    return known.emplace(pid, std::move(c)).first->second;
}
std::string comm_of(uint32_t pid) {
    const std::string c = read_comm(pid);
    return c.empty() ? "[gone]" : c;
}

// QPNs as the kernel hands them to rdma: runs of consecutive numbers as
// "first-last", joined by commas.
std::string qpn_ranges(const Json& qpns) {
    std::string s;
    size_t i = 0;
    while (i < qpns.size()) {
        const unsigned first = qpns[i].get<unsigned>();
        unsigned last = first;
        while (i + 1 < qpns.size() && qpns[i + 1].get<unsigned>() == last + 1) last = qpns[++i].get<unsigned>();
        ++i;
        if (!s.empty()) s += ',';
        s += std::to_string(first);
        if (last != first) s += '-' + std::to_string(last);
    }
    return s;
}

// One object of a kind: its fields in rdma's order, printed as
// `dev NAME field value ... pid PID comm COMM` or gathered as a JSON object.
// comm is left out when /proc/PID/comm cannot be read (the process is gone).
class Line {
public:
    explicit Line(const std::string& dev) : text_("dev " + dev) { j_["ifname"] = dev; }
    // An object of a port, not of the device: `link DEV/PORT`.
    static Line link(const std::string& dev, unsigned port) {
        Line l(dev);
        l.text_ = "link " + dev + "/" + std::to_string(port);
        l.j_["port"] = port;
        return l;
    }
    Line& num(const char* k, uint64_t v) {
        j_[k] = v;
        text_ += std::string(" ") + k + " " + std::to_string(v);
        return *this;
    }
    Line& hex(const char* k, uint64_t v) {
        char b[32];
        std::snprintf(b, sizeof b, "0x%" PRIx64, v);
        j_[k] = v;
        text_ += std::string(" ") + k + " " + b;
        return *this;
    }
    Line& str(const char* k, const std::string& v, const Json& jv) {
        j_[k] = jv;
        text_ += std::string(" ") + k + " " + v;
        return *this;
    }
    Line& owner(uint32_t pid) {
        num("pid", pid);
        const std::string c = read_comm(pid);
        if (!c.empty()) str("comm", c, c);
        return *this;
    }
    const std::string& text() const { return text_; }
    const nlohmann::ordered_json& json() const { return j_; }

private:
    std::string text_;
    nlohmann::ordered_json j_;
};

// `resource show cq|mr|mw|pd|srq`: one line (or JSON object) per object.
void list_objects(const std::string& what, const std::string& dev, const Json& d, std::vector<Line>& out) {
    const Json& objs = d.contains(what + "_list") ? d[what + "_list"] : Json::array();
    for (const Json& o : objs) {
        Line l(dev);
        if (what == "cq") {
            l.num("cqn", o["cqn"].get<uint32_t>()).num("cqe", o["cqe"].get<uint32_t>());
            l.num("users", o["users"].get<uint32_t>()).num("ctxn", o["ctxn"].get<uint32_t>());
        } else if (what == "mr") {
            l.num("mrn", o["mrn"].get<uint32_t>()).hex("rkey", o["rkey"].get<uint32_t>());
            l.hex("lkey", o["lkey"].get<uint32_t>()).hex("iova", o["iova"].get<uint64_t>());
            l.num("mrlen", o["mrlen"].get<uint64_t>()).num("pdn", o["pdn"].get<uint32_t>());
        } else if (what == "mw") {
            static const char* const states[] = {"INVALID", "FREE", "VALID"};
            const auto st = o["state"].get<uint32_t>();
            l.num("mwn", o["mwn"].get<uint32_t>()).hex("rkey", o["rkey"].get<uint32_t>());
            l.num("type", o["type"].get<uint32_t>());
            l.str("state", st < 3 ? states[st] : "?", st < 3 ? states[st] : "?");
            l.num("pdn", o["pdn"].get<uint32_t>());
            if (o["mr_key"].get<uint32_t>() != 0) {
                l.hex("mrkey", o["mr_key"].get<uint32_t>()).hex("addr", o["addr"].get<uint64_t>());
                l.num("length", o["length"].get<uint64_t>());
            }
            if (o["qpn"].get<uint32_t>() != 0) l.num("lqpn", o["qpn"].get<uint32_t>());
        } else if (what == "pd") {
            l.num("pdn", o["pdn"].get<uint32_t>()).num("users", o["users"].get<uint32_t>());
            l.num("ctxn", o["ctxn"].get<uint32_t>());
        } else {  // srq
            l.num("srqn", o["srqn"].get<uint32_t>()).str("type", "BASIC", "BASIC");
            if (!o["lqpn"].empty()) l.str("lqpn", qpn_ranges(o["lqpn"]), o["lqpn"]);
            l.num("pdn", o["pdn"].get<uint32_t>()).num("max_wr", o["max_wr"].get<uint32_t>());
            l.num("max_sge", o["max_sge"].get<uint32_t>()).num("limit", o["limit"].get<uint32_t>());
        }
        l.owner(o["pid"].get<uint32_t>());
        out.push_back(l);
    }
}

// rdma_cm's port spaces by name, as iproute2 prints them.
const char* ps_name(unsigned ps) {
    switch (ps) {
        case 0x0002: return "IPOIB";
        case 0x0106: return "TCP";
        case 0x0111: return "UDP";
        case 0x013F: return "IB";
        default: return "?";
    }
}

// `resource show cm_id`: rdma_cm's IDs, as `rdma resource show cm_id` lists
// them (link, cm-idn, lqpn and qp-type once the ID has a QP, state, ps,
// pid, comm, src-addr, dst-addr).
void list_cm_ids(const std::string& dev, const Json& d, std::vector<Line>& out) {
    if (!d.contains("cm_id_list")) return;
    for (const Json& o : d["cm_id_list"]) {
        Line l = Line::link(dev, 1);
        l.num("cm-idn", o["cm-idn"].get<uint32_t>());
        if (o.contains("lqpn")) {
            l.num("lqpn", o["lqpn"].get<uint32_t>());
            const char* t = o["ps"].get<unsigned>() == 0x0111 ? "UD" : "RC";
            l.str("qp-type", t, t);
        }
        const std::string st = o["state"].get<std::string>();
        l.str("state", st, st);
        const char* ps = ps_name(o["ps"].get<unsigned>());
        l.str("ps", ps, ps);
        l.owner(o["pid"].get<uint32_t>());
        for (const char* end : {"src", "dst"}) {
            const std::string a = o[std::string(end) + "-addr"].get<std::string>();
            const unsigned port = o[std::string(end) + "-port"].get<unsigned>();
            const std::string text = (a.find(':') != std::string::npos ? "[" + a + "]" : a) + ":" + std::to_string(port);
            l.str((std::string(end) + "-addr").c_str(), text, text);
        }
        out.push_back(l);
    }
}

// Ask the running daemon; none running means no devices, not an error.
bool ask(const Json& req, Json& reply) {
    switch (call_daemon(req, false, reply)) {
        case CallResult::Ok: return true;
        case CallResult::Failed: return false;
        case CallResult::NoDaemon: break;
    }
    reply = Json{{"ok", true}, {"devices", Json::array()}};
    return true;
}

int run_resource(const ResourceArgs& a) {
    static const char* const kinds[] = {"", "qp", "cq", "mr", "mw", "pd", "srq", "cm_id", "gid"};
    bool known = false;
    for (const char* k : kinds) known |= a.what == k;
    if (!known) {
        std::fprintf(stderr, "simnic resource show: unknown resource '%s' (qp, cq, mr, mw, pd, srq, cm_id, gid)\n",
                     a.what.c_str());
        return 2;
    }
    const bool listing =
        a.what == "cq" || a.what == "mr" || a.what == "mw" || a.what == "pd" || a.what == "srq" || a.what == "cm_id";
    Json req{{"op", "resources"}};
    if (!a.device.empty()) req["device"] = a.device;
    // Only the lists this view shows: the daemon makes no others, and a
    // device with many objects answers in fewer pages. The JSON of the
    // summary, qp and gid views is the device records with qp_list and gids.
    if (listing) req["lists"] = a.what + "_list";
    else if (a.json) req["lists"] = "qp_list,gids";
    else if (a.what == "qp") req["lists"] = "qp_list";
    else if (a.what == "gid") req["lists"] = "gids";
    else req["lists"] = "";
    Json devs;
    std::string err;
    if (!control::fetch_resources(req, [](const Json& r, Json& reply) { return ask(r, reply); }, devs, err)) {
        if (!err.empty()) std::fprintf(stderr, "simnic: %s\n", err.c_str());
        return 1;
    }
    if (listing) {
        std::vector<Line> lines;
        for (const Json& d : devs) {
            if (a.what == "cm_id") list_cm_ids(d["name"].get<std::string>(), d, lines);
            else list_objects(a.what, d["name"].get<std::string>(), d, lines);
        }
        if (a.json) {
            nlohmann::ordered_json arr = nlohmann::ordered_json::array();
            for (const Line& l : lines) arr.push_back(l.json());
            std::printf("%s\n", arr.dump().c_str());
        } else {
            for (const Line& l : lines) std::printf("%s\n", l.text().c_str());
        }
        return 0;
    }
    if (a.json) {
        std::printf("%s\n", devs.dump().c_str());
        return 0;
    }
    int idx = 0;
    for (const Json& d : devs) {
        const std::string name = d["name"].get<std::string>();
        if (a.what.empty()) {
            std::printf("%d: %s: pd %u cq %u qp %u mr %u srq %u ah %u ctx %u\n", idx, name.c_str(),
                        d["pds"].get<unsigned>(), d["cqs"].get<unsigned>(), d["qps"].get<unsigned>(),
                        d["mrs"].get<unsigned>(), d["srqs"].get<unsigned>(), d["ahs"].get<unsigned>(),
                        d["contexts"].get<unsigned>());
        } else if (a.what == "qp") {
            for (const Json& q : d["qp_list"]) {
                const uint32_t pid = q["pid"].get<uint32_t>();
                std::printf("link %s/1 lqpn %u rqpn %u type %s state %s rq-psn %u sq-psn %u pid %u comm %s\n",
                            name.c_str(), q["qpn"].get<unsigned>(), q["dest_qpn"].get<unsigned>(),
                            qp_type_name(q["type"].get<int>()), qp_state_name(q["state"].get<int>()),
                            q["rq_psn"].get<unsigned>(), q["sq_psn"].get<unsigned>(), pid, comm_of(pid).c_str());
            }
        } else if (a.what == "gid") {
            for (const Json& g : d["gids"])
                std::printf("link %s/1 index %u gid %s type RoCEv2\n", name.c_str(), g["index"].get<unsigned>(),
                            g["gid"].get<std::string>().c_str());
        }
        ++idx;
    }
    return 0;
}

int run_stats(const std::string& device, bool json, bool reset) {
    Json reply;
    Json req{{"op", "stats"}, {"device", device}};
    if (reset) req["reset"] = true;
    if (!ask(req, reply)) return 1;
    if (!reply.contains("stats")) {
        std::fprintf(stderr, "simnic: no device %s\n", device.c_str());
        return 1;
    }
    // The per-QP congestion list of a device with thousands of QPs comes in
    // pages (without "reset": the figures were reset once, with the first).
    std::string err;
    if (!control::fetch_stats_pages(device, reply, [](const Json& r, Json& page) { return ask(r, page); }, err)) {
        if (!err.empty()) std::fprintf(stderr, "simnic: %s\n", err.c_str());
        return 1;
    }
    if (json) {
        Json j = reply["stats"];
        if (reply.contains("model")) j["model"] = reply["model"];
        if (reply.contains("congestion")) j["congestion"] = reply["congestion"];
        std::printf("%s\n", j.dump().c_str());
        return 0;
    }
    std::printf("%s:\n", device.c_str());
    for (const auto& [k, v] : reply["stats"].items()) std::printf("  %-22s %s\n", k.c_str(), v.dump().c_str());
    if (reply.contains("congestion")) {
        // Congestion control (docs/model.md): the counters are in the list
        // above (ce_packets, cnp_sent, cnp_received, ...); each QP's
        // reaction point here.
        const Json& cc = reply["congestion"];
        const bool on = cc.value("enabled", false);
        std::printf("congestion control: %s\n", on ? "on (DCQCN)" : "off");
        for (const Json& q : cc.value("qps", Json::array()))
            std::printf("  qp %-6u Rc %.3f Gb/s  Rt %.3f Gb/s  alpha %.4f  %s  rate-limited %.1f us  cnps %llu\n",
                        q.value("qpn", 0u), q.value("rate_gbps", 0.0), q.value("target_rate_gbps", 0.0),
                        q.value("alpha", 0.0), q.value("rate_limited", false) ? "limited" : "line-rate",
                        q.value("rate_limited_us", 0.0), (unsigned long long)q.value("cnps_received", uint64_t{0}));
    }
    if (reply.contains("model") && reply["model"].is_array()) {
        // A model device: its pipeline, in simulated time.
        std::printf("model (simulated time):\n");
        for (const Json& m : reply["model"]) {
            const double v = m.value("value", 0.0);
            const std::string unit = m.value("unit", "");
            char num[64];
            if (v == double(uint64_t(v)) && v < 1e15) std::snprintf(num, sizeof num, "%llu", (unsigned long long)v);
            else std::snprintf(num, sizeof num, "%.3f", v);
            std::printf("  %-36s %s%s%s\n", m.value("name", "").c_str(), num, unit.empty() ? "" : " ", unit.c_str());
        }
        if (reply.contains("trace")) std::printf("  %-36s %s\n", "trace", reply["trace"].get<std::string>().c_str());
        if (reset) std::printf("  (the model's figures were reset after this reading)\n");
    }
    return 0;
}

}  // namespace

Runner add_resource_command(CLI::App& app) {
    auto args = std::make_shared<ResourceArgs>();
    CLI::App* sub = app.add_subcommand("resource", "Show what simnic devices hold (like `rdma resource`)");
    sub->require_subcommand(1);
    CLI::App* show = sub->add_subcommand("show", "Show resources: [qp|cq|mr|mw|pd|srq|cm_id|gid]");
    show->add_option("what", args->what, "resource kind");
    show->add_option("-d,--dev", args->device, "only this device");
    show->add_flag("-j,--json", args->json, "JSON output");
    return [args] { return run_resource(*args); };
}

Runner add_stats_command(CLI::App& app) {
    auto device = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    auto reset = std::make_shared<bool>(false);
    CLI::App* sub = app.add_subcommand("stats", "Show a device's counters: packets, bytes, retransmits, NAKs, ICRC errors");
    sub->add_option("name", *device, "device name")->required();
    sub->add_flag("-j,--json", *json, "JSON output");
    sub->add_flag("--reset", *reset,
                  "a model device: reset its pipeline figures right after reading them (the STATS_BLOCK "
                  "counters, like rxe's hw counters, run on)");
    return [device, json, reset] { return run_stats(*device, *json, *reset); };
}

}  // namespace simnic::cli
