// The control protocol's schema: what check_request accepts and refuses,
// and how Request reads fields (never throwing, defaults for absent ones).
#include <catch2/catch.hpp>

#include <cerrno>
#include <string>

#include "simnic/control/schema.h"

using namespace simnic::control;

namespace {

// The error sentence for `msg` with `nfds` descriptors (empty if accepted).
std::string why(const Json& msg, size_t nfds = 0, int* err = nullptr) {
    std::string w;
    int e = 0;
    const OpSpec* op = check_request(msg, nfds, w, e);
    if (err) *err = e;
    return op ? std::string() : w;
}

}  // namespace

TEST_CASE("every op's example passes and names its op", "[schema]") {
    CHECK(op_specs().size() >= 26);
    for (const OpSpec& op : op_specs()) {
        INFO(op.name);
        const Json ex = example_request(op);
        std::string w;
        int e = 0;
        const OpSpec* got = check_request(ex, op.min_fds, w, e);
        INFO(w);
        REQUIRE(got == &op);
        CHECK(find_op(op.name) == &op);
        CHECK(op.max_fds <= kMaxFdsPerMessage);
        // Field names are unique within an object.
        for (size_t i = 0; i < op.nfields; ++i) CHECK(find_field(op.fields, op.nfields, op.fields[i].name) == &op.fields[i]);
    }
}

TEST_CASE("check_request says which field is wrong and how", "[schema]") {
    int e = 0;
    CHECK(why(Json::array(), 0, &e) == "the request is not a JSON object");
    CHECK(e == EINVAL);
    CHECK(why(Json{{"op", 123}}) == "field 'op' must be a string naming the request");
    CHECK(why(Json::object()) == "missing field 'op'");
    CHECK(why(Json{{"op", "frobnicate"}}, 0, &e) == "unknown request 'frobnicate'");
    CHECK(e == EOPNOTSUPP);
    CHECK(why(Json{{"op", "x y\n"}}) == "unknown request");  // not echoed back
    CHECK(why(Json{{"op", "ping"}}).empty());
    CHECK(why(Json{{"op", "ping"}, {"extra", 1}}) == "ping: unknown field 'extra'");
    CHECK(why(Json{{"op", "ping"}}, 1) == "ping: carries 1 file descriptor; it takes none");
    CHECK(why(Json{{"op", "add_shm"}, {"size", 4096}}) == "add_shm: carries 0 file descriptors; it takes exactly 1");
    CHECK(why(Json{{"op", "add_shm"}, {"size", 4096}}, 1).empty());
    CHECK(why(Json{{"op", "add_shm"}, {"size", 0}}, 1) == "add_shm: field 'size' must be an unsigned integer from 1 to 1099511627776");
    CHECK(why(Json{{"op", "add_shm"}, {"size", -4096}}, 1).find("field 'size'") != std::string::npos);
    CHECK(why(Json{{"op", "add_shm"}, {"size", 4096.0}}, 1).find("field 'size'") != std::string::npos);
    CHECK(why(Json{{"op", "add_shm"}}, 1) == "add_shm: missing field 'size'");
    CHECK(why(Json{{"op", "open_context"}, {"device", std::string(64, 'd')}}) ==
          "open_context: field 'device' must be 1 to 63 bytes");
    CHECK(why(Json{{"op", "open_context"}, {"device", "a b"}}) ==
          "open_context: field 'device' must be printable ASCII without spaces");
    CHECK(why(Json{{"op", "open_context"}, {"device", std::string("lo\0x", 4)}}) ==
          "open_context: field 'device' must be printable ASCII without spaces");
    CHECK(why(Json{{"op", "link_add"}, {"name", "a"}, {"type", "soft"}, {"netdev", "lo"}, {"pcap", "x.pcap"}}) ==
          "link_add: field 'pcap' must be an absolute path");
    CHECK(why(Json{{"op", "link_add"}, {"name", "a"}, {"type", "soft"}, {"netdev", "lo"}, {"config_text", "a=1\n\tb=2\r\n"}})
              .empty());
    CHECK(why(Json{{"op", "cm_bind"}, {"id", 1}, {"addr", {{"addr", "0011"}}}}) ==
          "cm_bind: field 'addr.addr' must be 16 bytes (in hex)");
    CHECK(why(Json{{"op", "cm_bind"}, {"id", 1}, {"addr", {{"addr", std::string(32, 'g')}}}}) ==
          "cm_bind: field 'addr.addr' must be hex digits");
    CHECK(why(Json{{"op", "cm_bind"}, {"id", 1}, {"addr", "::1"}}) == "cm_bind: field 'addr' must be an object");
    CHECK(why(Json{{"op", "cm_connect"}, {"id", 1}, {"param", {{"rnr_retry_count", 8}}}}) ==
          "cm_connect: field 'param.rnr_retry_count' must be an unsigned integer from 0 to 7");
    CHECK(why(Json{{"op", "cm_connect"}, {"id", 1}, {"param", {{"qp_num", 1}, {"mtu", 1}}}}) ==
          "cm_connect: unknown field 'param.mtu'");
    CHECK(why(Json{{"op", "cm_init_qp_attr"}, {"id", 1}, {"state", 7}}).find("field 'state'") != std::string::npos);
}

TEST_CASE("Request reads checked fields, and absent ones as their defaults", "[schema]") {
    const Json msg{{"op", "cm_connect"},
                   {"id", 42},
                   {"param", {{"private_data", "00ff10"}, {"srq", true}, {"qp_num", 0x123456}}}};
    std::string w;
    int e = 0;
    const OpSpec* op = check_request(msg, 0, w, e);
    REQUIRE(op);
    const Request r(msg, *op);
    CHECK(r.op() == "cm_connect");
    CHECK(r.uint("id") == 42);
    CHECK(r.has("param"));
    const Request p = r.object("param");
    CHECK(p.bytes("private_data") == std::vector<uint8_t>{0x00, 0xff, 0x10});
    CHECK(p.flag("srq"));
    CHECK(p.uint("qp_num") == 0x123456);
    CHECK(p.uint("retry_count", 7) == 7);  // absent: the default
    CHECK(p.uint("responder_resources") == 0);
    CHECK_FALSE(p.has("flow_control"));

    const Json bind{{"op", "cm_resolve_addr"}, {"id", 1}, {"dst", {{"addr", std::string(32, '0')}}}};
    REQUIRE(check_request(bind, 0, w, e));
    const Request b(bind, *find_op("cm_resolve_addr"));
    CHECK_FALSE(b.has("src"));
    CHECK(b.object("src").bytes("addr").empty());  // an absent object reads as empty
    CHECK(b.object("dst").bytes("addr").size() == 16);
    CHECK(b.object("dst").flag("v6") == false);

    const Json show{{"op", "link_show"}};
    const Request s(show, *find_op("link_show"));
    CHECK(s.str("name").empty());
}
