#include "simnic/control/schema.h"

#include <errno.h>

#include <cassert>
#include <limits>

namespace simnic::control {
namespace {

constexpr auto Req = Presence::Required;
constexpr auto Opt = Presence::Optional;
constexpr std::uint64_t kU16 = 0xFFFF;
constexpr std::uint64_t kU32 = 0xFFFFFFFF;
constexpr std::uint64_t kU64 = std::numeric_limits<std::uint64_t>::max();

constexpr FieldSpec uint_f(std::string_view n, Presence p, std::uint64_t lo, std::uint64_t hi) {
    return {n, FieldKind::Uint, p, lo, hi};
}
constexpr FieldSpec bool_f(std::string_view n, Presence p) { return {n, FieldKind::Bool, p}; }
constexpr FieldSpec name_f(std::string_view n, Presence p, std::uint64_t hi) {
    return {n, FieldKind::Name, p, 1, hi};
}
constexpr FieldSpec path_f(std::string_view n, Presence p) {
    return {n, FieldKind::Path, p, 1, kMaxPathBytes};
}
constexpr FieldSpec text_f(std::string_view n, Presence p, std::uint64_t hi) {
    return {n, FieldKind::Text, p, 0, hi};
}
constexpr FieldSpec hex_f(std::string_view n, Presence p, std::uint64_t lo, std::uint64_t hi) {
    return {n, FieldKind::Hex, p, lo, hi};
}
template <std::size_t N>
constexpr FieldSpec object_f(std::string_view n, Presence p, const FieldSpec (&sub)[N]) {
    return {n, FieldKind::Object, p, 0, 0, sub, N};
}
template <std::size_t N>
OpSpec op(std::string_view n, const FieldSpec (&f)[N], std::uint8_t min_fds = 0, std::uint8_t max_fds = 0) {
    return {n, f, N, min_fds, max_fds};
}
OpSpec op(std::string_view n) { return {n, nullptr, 0, 0, 0}; }

// ---- the daemon's own requests (protocol.h) ----
constexpr FieldSpec kLinkAdd[] = {
    name_f("name", Req, kMaxDeviceNameBytes),
    name_f("type", Req, 16),  // soft | model: the handler names the choices
    name_f("netdev", Opt, kMaxNetdevBytes),  // netdev or wire, one of them (the handler checks)
    name_f("wire", Opt, 64),                 // HOST:PORT of a wire of frames
    name_f("addr", Opt, 1024),               // a wire device's addresses, comma-separated (A.B.C.D/N,X::Y/N)
    name_f("mac", Opt, 17),
    name_f("mtu", Opt, 5),
    path_f("pcap", Opt),
    name_f("loopback", Opt, 3),  // on | off
    name_f("ack_hold_us", Opt, 3),  // 0 to 100
    path_f("config", Opt),
    text_f("config_text", Opt, kMaxConfigTextBytes),
};
// `simnic fabric add`: the topology's file (for messages) and its text,
// every device's model configuration, and the links' capture.
constexpr FieldSpec kFabricAdd[] = {
    name_f("name", Req, kMaxDeviceNameBytes),
    path_f("topology", Req),
    text_f("topology_text", Req, kMaxConfigTextBytes),
    path_f("config", Opt),
    text_f("config_text", Opt, kMaxConfigTextBytes),
    path_f("pcap", Opt),
};
// `simnic fabric hold` (hold true) and `release` (false).
constexpr FieldSpec kFabricHold[] = {name_f("name", Req, kMaxDeviceNameBytes), bool_f("hold", Req)};
// `simnic fabric rates`: the bin, µs (at most a second).
constexpr FieldSpec kFabricRates[] = {name_f("name", Req, kMaxDeviceNameBytes), uint_f("bin_us", Opt, 1, 1'000'000)};
constexpr FieldSpec kName[] = {name_f("name", Req, kMaxDeviceNameBytes)};
constexpr FieldSpec kOptName[] = {name_f("name", Opt, kMaxDeviceNameBytes)};
constexpr FieldSpec kDevice[] = {name_f("device", Req, kMaxDeviceNameBytes)};
// "qps_after": a later page of the per-QP congestion list (after that QPN).
constexpr FieldSpec kStats[] = {name_f("device", Req, kMaxDeviceNameBytes), bool_f("reset", Opt),
                                uint_f("qps_after", Opt, 0, kU32)};
// `resources` in pages (resources.h): the lists wanted, and where the last
// page ended.
constexpr FieldSpec kResourceCursor[] = {
    name_f("device", Req, kMaxDeviceNameBytes),
    name_f("list", Req, 16),
    uint_f("key", Req, 0, kU64),
};
constexpr FieldSpec kResources[] = {
    name_f("device", Opt, kMaxDeviceNameBytes),
    text_f("lists", Opt, 128),
    object_f("after", Opt, kResourceCursor),
};
constexpr FieldSpec kTrace[] = {
    name_f("device", Req, kMaxDeviceNameBytes),
    bool_f("stop", Opt),
    path_f("file", Opt),
    name_f("format", Opt, 8),  // vcd | fst
    uint_f("from", Opt, 0, kU64),
    uint_f("cycles", Opt, 0, kU64),
};
constexpr FieldSpec kAddShm[] = {uint_f("size", Req, 1, kMaxShmBytes)};

// ---- the connection manager's (cm_service.h) ----
constexpr FieldSpec kAddr[] = {
    hex_f("addr", Req, 16, 16),  // a GID: IPv4 as ::ffff:a.b.c.d
    uint_f("port", Opt, 0, kU16),
    bool_f("v6", Opt),
};
constexpr FieldSpec kConnParam[] = {
    hex_f("private_data", Opt, 0, kMaxPrivateDataBytes),  // the agent checks each MAD's own limit
    uint_f("responder_resources", Opt, 0, 0xFF),
    uint_f("initiator_depth", Opt, 0, 0xFF),
    uint_f("flow_control", Opt, 0, 0xFF),
    uint_f("retry_count", Opt, 0, 7),
    uint_f("rnr_retry_count", Opt, 0, 7),
    bool_f("srq", Opt),
    uint_f("qp_num", Opt, 0, 0xFFFFFF),
    uint_f("ece_vendor_id", Opt, 0, kU32),  // ucma's ece: the REQ/REP keeps 24 bits
    uint_f("ece_options", Opt, 0, kU32),
};
constexpr FieldSpec kCreateId[] = {
    uint_f("channel", Req, 1, kU64),
    uint_f("ps", Req, 0, kU16),
};
constexpr FieldSpec kId[] = {uint_f("id", Req, 0, kU32)};
// rdma_migrate_id: "hold" keeps the daemon's events for the ID's old and
// new channels back until cm_release, while the process puts the ID's unread
// events on the new channel (cm_requeue, cm_service.h).
constexpr FieldSpec kMigrate[] = {uint_f("id", Req, 0, kU32), uint_f("channel", Req, 1, kU64), bool_f("hold", Opt)};
constexpr FieldSpec kRequeue[] = {uint_f("channel", Req, 1, kU64), text_f("message", Req, kMaxEventBytes)};
constexpr FieldSpec kRelease[] = {uint_f("from", Req, 1, kU64), uint_f("to", Req, 1, kU64)};
constexpr FieldSpec kBind[] = {uint_f("id", Req, 0, kU32), object_f("addr", Req, kAddr)};
constexpr FieldSpec kResolveAddr[] = {
    uint_f("id", Req, 0, kU32),
    object_f("dst", Req, kAddr),
    object_f("src", Opt, kAddr),
    uint_f("timeout_ms", Opt, 0, kU32),  // rdma_resolve_addr's timeout
};
constexpr FieldSpec kConnect[] = {uint_f("id", Req, 0, kU32), object_f("param", Req, kConnParam)};
constexpr FieldSpec kReject[] = {
    uint_f("id", Req, 0, kU32),
    hex_f("private_data", Opt, 0, kMaxPrivateDataBytes),
    uint_f("reason", Opt, 0, 0xFF),  // ucma's: 0 (consumer defined) or 35 (rdma_reject_ece); the agent checks
};
// rdma_notify: an enum ibv_event_type.
constexpr FieldSpec kNotify[] = {uint_f("id", Req, 0, kU32), uint_f("event", Req, 0, kU32)};
// rdma_set_option's RDMA_OPTION_ID options, by their number in rdma_cma.h
// (0 TOS, 1 REUSEADDR, 2 AFONLY, 3 ACK_TIMEOUT) and the value ucma passes
// on (the ToS's or the timeout's byte, an int made 0 or 1); the agent checks.
constexpr FieldSpec kSetOption[] = {uint_f("id", Req, 0, kU32), uint_f("option", Req, 0, 3),
                                    uint_f("value", Req, 0, 0xFF)};
// RDMA_OPTION_IB_PATH: the primary bidirectional record's RoCE fields.
constexpr FieldSpec kSetIbPath[] = {
    uint_f("id", Req, 0, kU32),        hex_f("dgid", Req, 16, 16),        hex_f("sgid", Req, 16, 16),
    uint_f("flow_label", Req, 0, 0xFFFFF), uint_f("hop_limit", Req, 0, 0xFF), uint_f("tclass", Req, 0, 0xFF),
    uint_f("mtu", Req, 0, 0x3F),       uint_f("packet_life_time", Req, 0, 0x3F),
};
constexpr FieldSpec kInitQpAttr[] = {uint_f("id", Req, 0, kU32), uint_f("state", Req, 0, 6)};  // RESET..ERR

const std::vector<OpSpec> kOps = {
    op("ping"),
    op("shutdown"),
    op("link_add", kLinkAdd),
    op("link_del", kName),
    op("link_show", kOptName),
    op("fabric_add", kFabricAdd),
    op("fabric_del", kName),
    op("fabric_show", kOptName),
    op("fabric_hold", kFabricHold),
    op("fabric_rates", kFabricRates),
    op("fabric_dcqcn", kFabricRates),  // the same fields
    op("fabric_depth", kFabricRates),
    op("resource_counts", kDevice),
    op("resources", kResources),
    op("stats", kStats),
    op("trace", kTrace),
    op("open_context", kDevice),
    op("add_shm", kAddShm, 1, 1),  // the sealed memfd
    op("cm_channel"),
    op("cm_create_id", kCreateId),
    op("cm_bind", kBind),
    op("cm_resolve_addr", kResolveAddr),
    op("cm_resolve_route", kId),
    op("cm_join", kBind),  // rdma_join_multicast: the ID and the group's address
    op("cm_set_option", kSetOption),
    op("cm_set_ib_path", kSetIbPath),
    op("cm_listen", kId),
    op("cm_connect", kConnect),
    op("cm_accept", kConnect),
    op("cm_reject", kReject),
    op("cm_establish", kId),
    op("cm_notify", kNotify),
    op("cm_disconnect", kId),
    op("cm_destroy_id", kId),
    op("cm_query", kId),
    op("cm_migrate", kMigrate),
    op("cm_requeue", kRequeue),
    op("cm_release", kRelease),
    op("cm_init_qp_attr", kInitQpAttr),
    op("cm_req_defaults", kId),
};

const char* kind_text(FieldKind k) {
    switch (k) {
        case FieldKind::Uint: return "an unsigned integer";
        case FieldKind::Bool: return "true or false";
        case FieldKind::Name: return "a string of printable ASCII without spaces";
        case FieldKind::Path: return "an absolute path";
        case FieldKind::Text: return "text";
        case FieldKind::Hex: return "a string of hex digits";
        case FieldKind::Object: return "an object";
    }
    return "?";
}

// A non-negative integer: parsed JSON holds one as unsigned, JSON built in
// C++ from an int as signed.
bool as_uint(const Json& v, std::uint64_t& out) {
    if (v.is_number_unsigned()) {
        out = v.get<std::uint64_t>();
        return true;
    }
    if (v.is_number_integer() && v.get<std::int64_t>() >= 0) {
        out = static_cast<std::uint64_t>(v.get<std::int64_t>());
        return true;
    }
    return false;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Empty, or what is wrong with string `s` as a field of kind `f.kind`.
std::string check_string(const FieldSpec& f, const std::string& s) {
    const std::uint64_t len = f.kind == FieldKind::Hex ? s.size() / 2 : s.size();
    if (f.kind == FieldKind::Hex && s.size() % 2 != 0) return "must be an even number of hex digits";
    if (len < f.lo || len > f.hi) {
        const char* unit = f.kind == FieldKind::Hex ? " bytes (in hex)" : " bytes";
        if (f.lo == f.hi) return "must be " + std::to_string(f.lo) + unit;
        return "must be " + std::to_string(f.lo) + " to " + std::to_string(f.hi) + unit;
    }
    for (char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        switch (f.kind) {
            case FieldKind::Name:
                if (c <= 0x20 || c >= 0x7F) return "must be printable ASCII without spaces";
                break;
            case FieldKind::Path:
                if (c < 0x20 || c == 0x7F) return "must not hold control characters";
                break;
            case FieldKind::Text:
                if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F)
                    return "must not hold control characters other than tab and line ends";
                break;
            case FieldKind::Hex:
                if (hex_digit(ch) < 0) return "must be hex digits";
                break;
            default:
                break;
        }
    }
    if (f.kind == FieldKind::Path && s[0] != '/') return "must be an absolute path";
    return {};
}

[[maybe_unused]] bool is_string_kind(FieldKind k) {
    return k == FieldKind::Name || k == FieldKind::Path || k == FieldKind::Text || k == FieldKind::Hex;
}

// Checks object `j` against `fields`; `where` prefixes nested names (param.).
std::string check_object(const Json& j, const FieldSpec* fields, std::size_t n, const std::string& where,
                         bool top) {
    for (const auto& [key, value] : j.items()) {
        if (top && key == "op") continue;
        if (!find_field(fields, n, key)) return "unknown field '" + where + key + "'";
    }
    for (std::size_t i = 0; i < n; ++i) {
        const FieldSpec& f = fields[i];
        const std::string name = where + std::string(f.name);
        const auto it = j.find(std::string(f.name));
        if (it == j.end()) {
            if (f.presence == Presence::Required) return "missing field '" + name + "'";
            continue;
        }
        const Json& v = *it;
        std::string bad;
        switch (f.kind) {
            case FieldKind::Uint: {
                std::uint64_t u = 0;
                if (!as_uint(v, u) || u < f.lo || u > f.hi)
                    bad = "must be an unsigned integer from " + std::to_string(f.lo) + " to " + std::to_string(f.hi);
                break;
            }
            case FieldKind::Bool:
                if (!v.is_boolean()) bad = "must be true or false";
                break;
            case FieldKind::Object:
                if (!v.is_object()) {
                    bad = "must be an object";
                    break;
                }
                if (std::string sub = check_object(v, f.sub, f.nsub, name + ".", false); !sub.empty()) return sub;
                break;
            default:
                if (!v.is_string()) bad = std::string("must be ") + kind_text(f.kind);
                else bad = check_string(f, v.get_ref<const std::string&>());
                break;
        }
        if (!bad.empty()) return "field '" + name + "' " + bad;
    }
    return {};
}

}  // namespace

const std::vector<OpSpec>& op_specs() { return kOps; }

const OpSpec* find_op(std::string_view name) {
    for (const OpSpec& o : kOps)
        if (o.name == name) return &o;
    return nullptr;
}

const FieldSpec* find_field(const FieldSpec* fields, std::size_t n, std::string_view name) {
    for (std::size_t i = 0; i < n; ++i)
        if (fields[i].name == name) return &fields[i];
    return nullptr;
}

const OpSpec* check_request(const Json& msg, std::size_t nfds, std::string& why, int& err) {
    err = EINVAL;
    if (!msg.is_object()) {
        why = "the request is not a JSON object";
        return nullptr;
    }
    const auto it = msg.find("op");
    if (it == msg.end()) {
        why = "missing field 'op'";
        return nullptr;
    }
    if (!it->is_string()) {
        why = "field 'op' must be a string naming the request";
        return nullptr;
    }
    const std::string& name = it->get_ref<const std::string&>();
    const OpSpec* op = find_op(name);
    if (!op) {
        // The name goes back to the client: only if it is a plain word.
        const FieldSpec word{"op", FieldKind::Name, Presence::Required, 1, 64};
        why = check_string(word, name).empty() ? "unknown request '" + name + "'" : "unknown request";
        err = EOPNOTSUPP;
        return nullptr;
    }
    const std::string prefix = std::string(op->name) + ": ";
    if (std::string bad = check_object(msg, op->fields, op->nfields, "", true); !bad.empty()) {
        why = prefix + bad;
        return nullptr;
    }
    if (nfds < op->min_fds || nfds > op->max_fds) {
        why = prefix + "carries " + std::to_string(nfds) + " file descriptor" + (nfds == 1 ? "" : "s") + "; it takes ";
        if (op->max_fds == 0) why += "none";
        else if (op->min_fds == op->max_fds) why += "exactly " + std::to_string(op->min_fds);
        else why += std::to_string(op->min_fds) + " to " + std::to_string(op->max_fds);
        return nullptr;
    }
    return op;
}

namespace {

Json example_object(const FieldSpec* fields, std::size_t n) {
    Json j = Json::object();
    for (std::size_t i = 0; i < n; ++i) {
        const FieldSpec& f = fields[i];
        const std::string name(f.name);
        const std::size_t len = static_cast<std::size_t>(f.lo);
        switch (f.kind) {
            case FieldKind::Uint: j[name] = f.lo; break;
            case FieldKind::Bool: j[name] = false; break;
            case FieldKind::Name: j[name] = std::string(len, 'a'); break;
            case FieldKind::Path: j[name] = "/" + std::string(len > 1 ? len - 1 : 0, 'a'); break;
            case FieldKind::Text: j[name] = std::string(len, 'a'); break;
            case FieldKind::Hex: j[name] = std::string(2 * len, '0'); break;
            case FieldKind::Object: j[name] = example_object(f.sub, f.nsub); break;
        }
    }
    return j;
}

}  // namespace

Json example_request(const OpSpec& op) {
    Json j = example_object(op.fields, op.nfields);
    j["op"] = std::string(op.name);
    return j;
}

// ---------------------------------------------------------------------------
// Request
// ---------------------------------------------------------------------------
Request::Request(const Json& msg, const OpSpec& op) : Request(&msg, op.fields, op.nfields, op.name) {}

Request::Request(const Json* j, const FieldSpec* fields, std::size_t n, std::string_view op)
    : j_(j), fields_(fields), n_(n), op_(op) {}

const Json* Request::field(std::string_view name, FieldKind kind) const {
    [[maybe_unused]] const FieldSpec* f = find_field(fields_, n_, name);
    assert(f && (f->kind == kind || (is_string_kind(f->kind) && is_string_kind(kind) && kind != FieldKind::Hex &&
                                     f->kind != FieldKind::Hex)) &&
           "a handler read a field its op does not declare");
    if (j_ == nullptr || !j_->is_object()) return nullptr;
    const auto it = j_->find(std::string(name));
    if (it == j_->end()) return nullptr;
    switch (kind) {
        case FieldKind::Uint: {
            std::uint64_t u = 0;
            return as_uint(*it, u) ? &*it : nullptr;
        }
        case FieldKind::Bool: return it->is_boolean() ? &*it : nullptr;
        case FieldKind::Object: return it->is_object() ? &*it : nullptr;
        default: return it->is_string() ? &*it : nullptr;
    }
}

bool Request::has(std::string_view name) const {
    return j_ != nullptr && j_->is_object() && j_->contains(std::string(name));
}

std::uint64_t Request::uint(std::string_view name, std::uint64_t absent) const {
    std::uint64_t u = absent;
    const Json* v = field(name, FieldKind::Uint);
    return v && as_uint(*v, u) ? u : absent;
}

bool Request::flag(std::string_view name, bool absent) const {
    const Json* v = field(name, FieldKind::Bool);
    return v ? v->get<bool>() : absent;
}

const std::string& Request::str(std::string_view name) const {
    static const std::string kEmpty;
    const Json* v = field(name, FieldKind::Text);
    return v ? v->get_ref<const std::string&>() : kEmpty;
}

std::vector<std::uint8_t> Request::bytes(std::string_view name) const {
    std::vector<std::uint8_t> out;
    const Json* v = field(name, FieldKind::Hex);
    if (!v) return out;
    const std::string& s = v->get_ref<const std::string&>();
    out.reserve(s.size() / 2);
    for (std::size_t i = 0; i + 1 < s.size(); i += 2) {
        const int hi = hex_digit(s[i]), lo = hex_digit(s[i + 1]);
        if (hi < 0 || lo < 0) return {};
        out.push_back(static_cast<std::uint8_t>(hi << 4 | lo));
    }
    return out;
}

Request Request::object(std::string_view name) const {
    const FieldSpec* f = find_field(fields_, n_, name);
    const Json* v = field(name, FieldKind::Object);
    return Request(v, f ? f->sub : nullptr, f ? f->nsub : 0, op_);
}

}  // namespace simnic::control
