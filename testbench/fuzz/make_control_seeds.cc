// Writes the control-socket fuzzer's seed corpus into DIR: a valid request of
// every op (each field at its lower limit, from the schema), and sequences
// a client really sends, on the device the fuzzer's daemon has (fz0): a
// context and its memory object, an rdma_cm channel with IDs, a device added
// and deleted, open_context then garbage, descriptors where none belong.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "control_input.h"
#include "simnic/control/schema.h"

using namespace simnic;
using control::Json;
using fuzz::Action;
using fuzz::FdKind;

namespace {

Action send(std::uint8_t conn, const Json& j, std::vector<FdKind> fds = {}) {
    Action a;
    a.kind = Action::Send;
    a.conn = conn;
    a.fds = std::move(fds);
    a.bytes = j.dump();
    return a;
}
Action raw(std::uint8_t conn, const std::string& bytes, std::vector<FdKind> fds = {}) {
    Action a;
    a.kind = Action::Send;
    a.conn = conn;
    a.fds = std::move(fds);
    a.bytes = bytes;
    return a;
}
Action close_conn(std::uint8_t conn) {
    Action a;
    a.kind = Action::Close;
    a.conn = conn;
    return a;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    const std::string dir = argv[1];
    int n = 0;
    auto write = [&](const std::vector<Action>& seq) {
        std::ofstream out(dir + "/seed-" + std::to_string(n++), std::ios::binary);
        out << fuzz::encode(seq);
    };
    for (const control::OpSpec& op : control::op_specs()) {
        std::vector<FdKind> fds(op.min_fds, FdKind::Memfd4k);
        write({send(0, control::example_request(op), fds)});
    }
    const Json ctx{{"op", "open_context"}, {"device", "fz0"}};
    write({send(0, Json{{"op", "ping"}}), send(0, Json{{"op", "link_show"}}), send(1, Json{{"op", "resources"}})});
    write({send(0, Json{{"op", "stats"}, {"device", "fz0"}}),
           send(0, Json{{"op", "resource_counts"}, {"device", "fz0"}})});
    write({send(0, ctx), send(0, Json{{"op", "add_shm"}, {"size", 4096}}, {FdKind::Memfd4k}),
           send(0, Json{{"op", "add_shm"}, {"size", 65536}}, {FdKind::Memfd64k}), close_conn(0)});
    write({send(0, ctx), raw(0, "{\"op\":\"add_shm\",\"size\":4096"), raw(0, "\xff\xfe\x00garbage"), send(0, ctx)});
    write({send(0, ctx, {FdKind::DevNull, FdKind::PipeRead}),
           send(0, Json{{"op", "add_shm"}, {"size", 4096}}, {FdKind::Memfd4kUnsealed}),
           send(0, Json{{"op", "add_shm"}, {"size", 1u << 30}}, {FdKind::Memfd1g}),
           send(0, Json{{"op", "add_shm"}, {"size", 4097}}, {FdKind::MemfdOdd, FdKind::Socket})});
    write({send(1, Json{{"op", "link_add"}, {"name", "fz1"}, {"type", "model"}, {"netdev", "lo"}}),
           send(1, Json{{"op", "link_add"}, {"name", "fz2"}, {"type", "soft"}, {"netdev", "lo"}, {"loopback", "on"}}),
           send(2, Json{{"op", "open_context"}, {"device", "fz2"}}),
           send(1, Json{{"op", "link_del"}, {"name", "fz2"}}), close_conn(2),
           send(1, Json{{"op", "link_del"}, {"name", "fz2"}})});
    // The one netdev there is (lo) holds fz0: a device's life goes through it.
    write({send(0, Json{{"op", "link_del"}, {"name", "fz0"}}),
           send(0, Json{{"op", "link_add"}, {"name", "fz0"}, {"type", "model"}, {"netdev", "lo"},
                        {"config", "/tmp/m.toml"}, {"config_text", "[clock]\nmhz = 250\n"}}),
           send(1, ctx), send(0, Json{{"op", "link_del"}, {"name", "fz0"}}), close_conn(1),
           send(0, Json{{"op", "link_del"}, {"name", "fz0"}}),
           send(0, Json{{"op", "link_add"}, {"name", "fz0"}, {"type", "soft"}, {"netdev", "lo"},
                        {"pcap", "/nonexistent/x.pcap"}, {"loopback", "off"}})});
    write({send(1, Json{{"op", "trace"}, {"device", "fz0"}, {"stop", true}}),
           send(1, Json{{"op", "trace"}, {"device", "fz0"}, {"file", "/nonexistent/t.vcd"}, {"format", "vcd"},
                        {"from", 0}, {"cycles", 10}})});
    // rdma_cm as rping's client and server do it, on two connections each.
    const Json addr{{"addr", "00000000000000000000ffff7f000001"}, {"port", 7471}, {"v6", false}};
    const Json param{{"private_data", "0011"}, {"responder_resources", 1}, {"initiator_depth", 1},
                     {"retry_count", 7}, {"rnr_retry_count", 7}, {"qp_num", 17}};
    write({send(0, Json{{"op", "cm_channel"}}), send(1, Json{{"op", "cm_create_id"}, {"channel", 1}, {"ps", 0x106}}),
           send(1, Json{{"op", "cm_bind"}, {"id", 1}, {"addr", addr}}), send(1, Json{{"op", "cm_listen"}, {"id", 1}}),
           send(2, Json{{"op", "cm_channel"}}), send(3, Json{{"op", "cm_create_id"}, {"channel", 2}, {"ps", 0x106}}),
           send(3, Json{{"op", "cm_resolve_addr"}, {"id", 2}, {"dst", addr}}),
           send(3, Json{{"op", "cm_resolve_route"}, {"id", 2}}),
           send(3, Json{{"op", "cm_init_qp_attr"}, {"id", 2}, {"state", 1}}),
           send(3, Json{{"op", "cm_connect"}, {"id", 2}, {"param", param}}),
           send(3, Json{{"op", "cm_query"}, {"id", 2}}), send(3, Json{{"op", "cm_disconnect"}, {"id", 2}}),
           close_conn(2), send(1, Json{{"op", "cm_destroy_id"}, {"id", 1}})});
    write({send(0, Json{{"op", "cm_channel"}}), send(0, Json{{"op", "cm_channel"}}),
           send(1, Json{{"op", "cm_reject"}, {"id", 3}, {"private_data", std::string(300, 'a')}}),
           send(1, Json{{"op", "cm_accept"}, {"id", 3}, {"param", param}}),
           send(1, Json{{"op", "cm_req_defaults"}, {"id", 3}}), send(1, Json{{"op", "cm_establish"}, {"id", 3}}),
           send(1, Json{{"op", "cm_notify"}, {"id", 3}, {"event", 4}}),
           send(1, Json{{"op", "cm_reject"}, {"id", 3}, {"reason", 35}})});
    // Malformed as a person would type it.
    write({raw(0, "{\"op\":123}"), raw(0, "[]"), raw(0, "{\"op\":\"ping\",\"op\":\"shutdown\"}"), raw(0, "")});
    write({raw(0, "{\"op\":\"ping\"}", {FdKind::DevNull, FdKind::DevNull, FdKind::DevNull, FdKind::DevNull,
                                        FdKind::DevNull, FdKind::DevNull, FdKind::DevNull, FdKind::DevNull,
                                        FdKind::DevNull})});
    std::printf("wrote %d seeds\n", n);
    return 0;
}
