// The control protocol's requests, each declared once: its op, its fields
// with their types and limits, and how many file descriptors it may carry
// beside the JSON (schema.cc holds the one table).
//
// The daemon checks every request against its op's entry before anything
// acts on it (check_request), and its handlers read the fields only through
// Request, whose getters test a field's type before reading it, so no
// handler can throw on a type. A request that fails the check is answered
// {"ok":false,"errno":EINVAL,"error":"<op>: field '<name>' ..."} and the
// daemon goes on serving everyone else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "simnic/control/protocol.h"

namespace simnic::control {

// What a field holds. Strings are UTF-8 (the JSON parser checks that), and
// none may hold a control character a C API would cut them at.
enum class FieldKind : std::uint8_t {
    Uint,    // a non-negative integer in [lo, hi]
    Bool,    // true or false
    Name,    // lo..hi bytes of printable ASCII without spaces: device and netdev names, keywords
    Path,    // an absolute path: lo..hi bytes, the first '/', no control characters
    Text,    // lo..hi bytes of text; of the control characters only tab, LF and CR
    Hex,     // hex digits spelling lo..hi bytes (to_hex in cm_protocol.h)
    Object,  // an object whose fields are `sub`
};

enum class Presence : std::uint8_t { Required, Optional };

struct FieldSpec {
    std::string_view name;
    FieldKind kind;
    Presence presence;
    std::uint64_t lo = 0, hi = 0;      // Uint: the value; strings: bytes (Hex: decoded bytes)
    const FieldSpec* sub = nullptr;    // Object: its fields
    std::size_t nsub = 0;
};

struct OpSpec {
    std::string_view name;
    const FieldSpec* fields = nullptr;
    std::size_t nfields = 0;
    // SCM_RIGHTS descriptors the request carries (kMaxFdsPerMessage at most).
    std::uint8_t min_fds = 0, max_fds = 0;
};

// Limits the table uses, for the tests and the daemon's own messages.
inline constexpr std::size_t kMaxDeviceNameBytes = 63;  // IB_DEVICE_NAME_MAX - 1
inline constexpr std::size_t kMaxNetdevBytes = 15;      // IFNAMSIZ - 1
inline constexpr std::size_t kMaxPathBytes = 4095;      // PATH_MAX - 1
inline constexpr std::size_t kMaxConfigTextBytes = 64 * 1024;
inline constexpr std::size_t kMaxPrivateDataBytes = 255;  // rdma_conn_param's private_data_len is a u8
inline constexpr std::size_t kMaxEventBytes = 8192;       // one rdma_cm event message, as the daemon writes it
inline constexpr std::uint64_t kMaxShmBytes = std::uint64_t{1} << 40;

// Every op the daemon serves.
const std::vector<OpSpec>& op_specs();
const OpSpec* find_op(std::string_view name);
const FieldSpec* find_field(const FieldSpec* fields, std::size_t n, std::string_view name);

// Checks one request: `msg` as parsed, `nfds` descriptors beside it. Returns
// the request's op, or null with `why` (a sentence naming the op and the
// field) and `err` (EINVAL; EOPNOTSUPP for a well-formed request of an op
// nobody serves). Unknown fields are errors, so a misspelt optional field is
// not silently ignored.
const OpSpec* check_request(const Json& msg, std::size_t nfds, std::string& why, int& err);

// A request of `op` that passes check_request: every field, required and
// optional, at its lower limit (strings of the fewest bytes allowed). The
// tests build their malformed variants from it, one field at a time.
Json example_request(const OpSpec& op);

// A request that passed check_request, or one of its objects: the fields by
// name, read as their declared kind. A getter returns `absent` (or empty)
// when the field is missing, so optional fields need no separate test; it
// never throws. Asking for a field the op does not declare, or as another
// kind, is a bug that asserts in debug builds.
class Request {
public:
    Request(const Json& msg, const OpSpec& op);

    std::string_view op() const { return op_; }
    bool has(std::string_view field) const;
    std::uint64_t uint(std::string_view field, std::uint64_t absent = 0) const;
    bool flag(std::string_view field, bool absent = false) const;
    // Name, Path and Text fields.
    const std::string& str(std::string_view field) const;
    // A Hex field's bytes.
    std::vector<std::uint8_t> bytes(std::string_view field) const;
    // An Object field (an empty one when absent).
    Request object(std::string_view field) const;

private:
    Request(const Json* j, const FieldSpec* fields, std::size_t n, std::string_view op);
    const Json* field(std::string_view name, FieldKind kind) const;

    const Json* j_;
    const FieldSpec* fields_;
    std::size_t n_;
    std::string_view op_;
};

}  // namespace simnic::control
