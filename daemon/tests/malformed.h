// Malformed control requests, generated from the protocol's schema: for
// every op, each field with a value of the wrong type, missing, out of
// range, too long or too short, with characters its kind refuses; unknown
// fields and unexpected descriptors; and the ways a message can fail to be a
// request at all (not JSON, not UTF-8, garbage, cut short, not an object, no
// op, an unknown op, too many descriptors). Each names the errno its reply
// must carry and a word its error sentence must hold. Used against the
// in-process server (test_server.cpp) and against a real daemon
// (testbench/system/test_control_socket.cpp).
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "simnic/control/schema.h"

namespace simnic::testing {

struct Malformed {
    std::string what;      // for the test's report
    std::string bytes;     // the message
    std::size_t fds = 0;   // descriptors to send with it (any kind: /dev/null will do)
    int err = EINVAL;      // the reply's errno
    std::string mentions;  // the reply's error sentence holds this
};

namespace detail {

using control::FieldKind;
using control::FieldSpec;
using control::Json;

// Variants of the field at `path` (a chain of object keys) in `base`.
inline void field_variants(const std::string& op, const Json& base, const std::vector<std::string>& path,
                           const FieldSpec& f, std::vector<Malformed>& out) {
    std::string dotted;
    for (const std::string& p : path) dotted += (dotted.empty() ? "" : ".") + p;
    auto with = [&](const Json& v) {
        Json j = base;
        Json* at = &j;
        for (std::size_t i = 0; i + 1 < path.size(); ++i) at = &(*at)[path[i]];
        (*at)[path.back()] = v;
        return j;
    };
    auto add = [&](const std::string& what, const Json& j) {
        out.push_back({op + " " + dotted + ": " + what, j.dump(), 0, EINVAL, "'" + dotted + "'"});
    };
    // Wrong JSON types: every one the kind does not take.
    const std::vector<std::pair<std::string, Json>> types = {
        {"a string", Json("7")},          {"a negative number", Json(-1)}, {"a fraction", Json(1.5)},
        {"a boolean", Json(true)},        {"null", Json(nullptr)},         {"an array", Json::array({1})},
        {"an object", Json::object()}};
    for (const auto& [name, v] : types) {
        const bool fits = (f.kind == FieldKind::Bool && v.is_boolean()) ||
                          (f.kind == FieldKind::Object && v.is_object()) ||
                          (f.kind != FieldKind::Uint && f.kind != FieldKind::Bool && f.kind != FieldKind::Object &&
                           v.is_string() && f.kind != FieldKind::Hex);
        if (!fits) add("wrong type (" + name + ")", with(v));
    }
    if (f.presence == control::Presence::Required) {
        Json j = base;
        Json* at = &j;
        for (std::size_t i = 0; i + 1 < path.size(); ++i) at = &(*at)[path[i]];
        at->erase(path.back());
        add("missing", j);
    }
    const std::size_t lo = static_cast<std::size_t>(f.lo), hi = static_cast<std::size_t>(f.hi);
    switch (f.kind) {
        case FieldKind::Uint:
            if (f.hi < std::numeric_limits<std::uint64_t>::max()) add("above its range", with(f.hi + 1));
            if (f.lo > 0) add("below its range", with(f.lo - 1));
            break;
        case FieldKind::Name:
            add("too long", with(std::string(hi + 1, 'a')));
            if (lo > 0) add("too short", with(std::string(lo - 1, 'a')));
            add("with a space", with(std::string("a b")));
            add("with a NUL", with(std::string("a\0b", 3)));
            add("not ASCII", with(std::string("d\xc3\xa9v")));
            break;
        case FieldKind::Path:
            add("too long", with("/" + std::string(hi, 'a')));
            add("relative", with(std::string("relative/path")));
            add("with a control character", with(std::string("/tmp/a\x01")));
            break;
        case FieldKind::Text:
            add("too long", with(std::string(hi + 1, 'a')));
            add("with a NUL", with(std::string("a\0b", 3)));
            break;
        case FieldKind::Hex:
            add("too long", with(std::string(2 * (hi + 1), '0')));
            if (lo > 0) add("too short", with(std::string(2 * (lo - 1), '0')));
            add("odd length", with(std::string(2 * lo + 1, '0')));
            add("not hex", with(std::string(2 * (lo > 0 ? lo : 1), 'z')));
            break;
        case FieldKind::Object: {
            // An unknown field inside the object, then each of its fields.
            Json k = base;
            Json* at = &k;
            for (const std::string& p : path) at = &(*at)[p];
            (*at)["bogus"] = 1;
            out.push_back({op + " " + dotted + ": unknown field inside", k.dump(), 0, EINVAL, "bogus"});
            for (std::size_t i = 0; i < f.nsub; ++i) {
                std::vector<std::string> sub = path;
                sub.push_back(std::string(f.sub[i].name));
                field_variants(op, base, sub, f.sub[i], out);
            }
            break;
        }
        case FieldKind::Bool:
            break;
    }
}

}  // namespace detail

inline std::vector<Malformed> malformed_requests() {
    using control::Json;
    std::vector<Malformed> out;
    // Messages that are no request at all.
    const std::string link = Json{{"op", "link_add"}, {"name", "x"}, {"type", "soft"}, {"netdev", "lo"}}.dump();
    out.push_back({"not JSON", "hello, daemon", 0, EINVAL, "JSON"});
    out.push_back({"invalid UTF-8", std::string("{\"op\":\"ping\",\"x\":\"\xff\xfe\"}"), 0, EINVAL, "JSON"});
    out.push_back({"garbage bytes", std::string("\x00\x01\x80\xff{{\x7f\x00", 8), 0, EINVAL, "JSON"});
    out.push_back({"a truncated request", link.substr(0, link.size() / 2), 0, EINVAL, "JSON"});
    out.push_back({"a JSON array", "[\"ping\"]", 0, EINVAL, "object"});
    out.push_back({"a JSON number", "123", 0, EINVAL, "object"});
    out.push_back({"a JSON string", "\"ping\"", 0, EINVAL, "object"});
    out.push_back({"JSON null", "null", 0, EINVAL, "object"});
    out.push_back({"no op", "{}", 0, EINVAL, "'op'"});
    out.push_back({"op a number", "{\"op\":123}", 0, EINVAL, "'op'"});
    out.push_back({"op a boolean", "{\"op\":true}", 0, EINVAL, "'op'"});
    out.push_back({"op an object", "{\"op\":{\"op\":\"ping\"}}", 0, EINVAL, "'op'"});
    out.push_back({"an unknown op", "{\"op\":\"format_disk\"}", 0, EOPNOTSUPP, "format_disk"});
    out.push_back({"an empty op", "{\"op\":\"\"}", 0, EOPNOTSUPP, "unknown request"});
    out.push_back({"an op of control characters", "{\"op\":\"\\u0001\\n\"}", 0, EOPNOTSUPP, "unknown request"});
    out.push_back({"more descriptors than a message may carry", "{\"op\":\"ping\"}", control::kMaxFdsPerMessage + 1,
                   EINVAL, "file descriptors"});
    // Every op: each field, unknown fields, descriptors.
    for (const control::OpSpec& op : control::op_specs()) {
        const std::string name(op.name);
        const Json base = control::example_request(op);
        for (std::size_t i = 0; i < op.nfields; ++i)
            detail::field_variants(name, base, {std::string(op.fields[i].name)}, op.fields[i], out);
        Json u = base;
        u["bogus"] = "x";
        out.push_back({name + ": an unknown field", u.dump(), op.min_fds, EINVAL, "'bogus'"});
        if (op.max_fds == 0) {
            out.push_back({name + ": an unexpected descriptor", base.dump(), 1, EINVAL, "file descriptor"});
        } else {
            out.push_back({name + ": too many descriptors", base.dump(), op.max_fds + 1u, EINVAL, "file descriptor"});
            if (op.min_fds > 0)
                out.push_back(
                    {name + ": a descriptor missing", base.dump(), op.min_fds - 1u, EINVAL, "file descriptor"});
        }
    }
    return out;
}

}  // namespace simnic::testing
