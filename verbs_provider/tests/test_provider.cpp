// The verbs provider's translation layer on an in-process device: a
// fw::Firmware on a fake netdev, reached through open_local_context. What an
// application sees through libibverbs' public structs is checked against the
// firmware's block images and rxe's values (facts.md 3, hw-spec 2.3-2.5).
#include <endian.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

#include "local_device.h"

namespace sv = simnic::verbs;
namespace host = simnic::host;
using simnic::fw::test::FakeNetdev;
using simnic::fw::test::Mbox;
namespace fw = simnic::fw;

namespace {

// One device "sim0" bound to a fake eth0, installed as the provider's device
// source; rxe_limits: the default CAP_BLOCK (rxe's values), otherwise small
// tables.
struct Rig : simnic::verbs::test::LocalDevice {
    explicit Rig(bool rxe_limits = false) : LocalDevice("sim0", rxe_limits) {}
};

verbs_context* vctx_of(ibv_context* c) { return verbs_get_ctx(c); }

std::string gid_hex(const ibv_gid& g) {
    char b[64];
    std::snprintf(b, sizeof b,
                  "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
                  g.raw[0], g.raw[1], g.raw[2], g.raw[3], g.raw[4], g.raw[5], g.raw[6], g.raw[7],
                  g.raw[8], g.raw[9], g.raw[10], g.raw[11], g.raw[12], g.raw[13], g.raw[14],
                  g.raw[15]);
    return b;
}

}  // namespace

TEST_CASE("simnic devices as ibv_device objects", "[verbs][device]") {
    Rig rig;
    std::vector<ibv_device*> devs;
    REQUIRE(sv::current_devices(devs) == 0);
    REQUIRE(devs.size() == 1);
    ibv_device* d = devs[0];
    CHECK(sv::is_device(d));
    CHECK(std::string(sv::device_name(d)) == "sim0");
    CHECK(std::string(d->name) == "sim0");
    CHECK(d->node_type == IBV_NODE_CA);
    CHECK(d->transport_type == IBV_TRANSPORT_IB);
    CHECK(std::string(d->ibdev_path) == "/sys/class/infiniband/sim0");
    CHECK(std::string(d->dev_path).rfind("/sys/class/infiniband_verbs/", 0) == 0);

    // The same object on every listing; a vanished device stays valid.
    std::vector<ibv_device*> again;
    REQUIRE(sv::current_devices(again) == 0);
    REQUIRE(again.size() == 1);
    CHECK(again[0] == d);
    rig.listed = false;
    REQUIRE(sv::current_devices(again) == 0);
    CHECK(again.empty());
    CHECK(sv::is_device(d));

    ibv_device foreign{};
    CHECK_FALSE(sv::is_device(&foreign));
    CHECK_FALSE(sv::is_device(nullptr));

    // Node GUID: the EUI-64 of 52:54:00:12:34:56, network order; cached.
    rig.listed = true;
    const int opens = rig.opens;
    CHECK(be64toh(sv::device_guid(d)) == 0x505400FFFE123456ull);
    CHECK(be64toh(sv::device_guid(d)) == 0x505400FFFE123456ull);
    CHECK(rig.opens == opens + 1);
    CHECK_FALSE(rig.firmware->has_context(1));  // the probe context is gone
}

TEST_CASE("a source that fails lists nothing", "[verbs][device]") {
    Rig rig;
    rig.list_err = ECONNREFUSED;
    std::vector<ibv_device*> devs;
    CHECK(sv::current_devices(devs) == ECONNREFUSED);
    CHECK(devs.empty());
}

TEST_CASE("open_device gives a public verbs_context", "[verbs][context]") {
    Rig rig;
    ibv_context* ctx = rig.open();
    CHECK(sv::is_context(ctx));
    CHECK(ctx->device == rig.device());
    CHECK(ctx->abi_compat == __VERBS_ABI_IS_EXTENDED);
    CHECK(ctx->cmd_fd == -1);
    CHECK(ctx->async_fd >= 0);
    CHECK(ctx->num_comp_vectors == 1);
    verbs_context* v = vctx_of(ctx);
    REQUIRE(v != nullptr);
    CHECK(v->sz == sizeof(verbs_context));
    CHECK(verbs_get_ctx_op(ctx, query_port) != nullptr);
    CHECK(verbs_get_ctx_op(ctx, query_device_ex) != nullptr);
    CHECK(rig.firmware->has_context(1));

    ibv_context foreign{};
    CHECK_FALSE(sv::is_context(&foreign));
    CHECK_FALSE(sv::is_context(nullptr));
    CHECK(sv::close_device(&foreign) == EINVAL);

    REQUIRE(sv::close_device(ctx) == 0);
    CHECK_FALSE(rig.firmware->has_context(1));

    // A device the source cannot open.
    ibv_device* d = rig.device();
    rig.dev_name = "other";
    errno = 0;
    CHECK(sv::open_device(d) == nullptr);
    CHECK(errno == ENODEV);
}

TEST_CASE("query_device: CAP_BLOCK and ID_BLOCK, rxe's values", "[verbs][query]") {
    Rig rig(/*rxe_limits=*/true);
    ibv_context* ctx = rig.open();
    ibv_device_attr a;
    std::memset(&a, 0xA5, sizeof a);
    REQUIRE(sv::query_device(ctx, &a) == 0);
    CHECK(std::string(a.fw_ver) == "0.1.0");  // ID_BLOCK: firmware 0.1.0 (hw-spec 2.3)
    CHECK(be64toh(a.node_guid) == 0x505400FFFE123456ull);
    CHECK(a.sys_image_guid == a.node_guid);
    CHECK(a.vendor_id == 0xFFFFFF);
    CHECK(a.vendor_part_id == 0);
    CHECK(a.hw_ver == 1);
    CHECK(a.max_mr_size == 0xFFFFFFFFFFFFFFFFull);
    CHECK(a.page_size_cap == 0xFFFFF000ull);
    CHECK(a.max_qp == 1048560);
    CHECK(a.max_qp_wr == 1048576);
    // rxe's flags simnic has, MEM_WINDOW and MEM_WINDOW_TYPE_2B included.
    CHECK(a.device_cap_flags == (0x1C06 | IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B));
    CHECK(a.max_sge == 32);
    CHECK(a.max_sge_rd == 32);
    CHECK(a.max_cq == 1048576);
    CHECK(a.max_cqe == 32767);
    CHECK(a.max_mr == 524287);
    CHECK(a.max_pd == 1048576);
    CHECK(a.max_qp_rd_atom == 128);
    CHECK(a.max_qp_init_rd_atom == 128);
    CHECK(a.max_res_rd_atom == 258048);
    CHECK(a.max_ee_rd_atom == 0);
    CHECK(a.atomic_cap == IBV_ATOMIC_HCA);
    CHECK(a.max_ee == 0);
    CHECK(a.max_mw == 524287);
    CHECK(a.max_mcast_grp == 8192);
    CHECK(a.max_mcast_qp_attach == 56);
    CHECK(a.max_total_mcast_qp_attach == 458752);
    CHECK(a.max_ah == 32767);
    CHECK(a.max_fmr == 0);
    CHECK(a.max_srq == 917503);
    CHECK(a.max_srq_wr == 1048576);
    CHECK(a.max_srq_sge == 27);
    CHECK(a.max_pkeys == 64);
    CHECK(a.local_ca_ack_delay == 15);
    CHECK(a.phys_port_cnt == 1);

    // query_device_ex through the ops table, as verbs.h's inline does.
    verbs_context* v = verbs_get_ctx_op(ctx, query_device_ex);
    REQUIRE(v != nullptr);
    ibv_device_attr_ex ex;
    std::memset(&ex, 0xA5, sizeof ex);
    REQUIRE(v->query_device_ex(ctx, nullptr, &ex, sizeof ex) == 0);
    CHECK(std::memcmp(&ex.orig_attr, &a, sizeof a) == 0);
    CHECK(ex.comp_mask == 0);
    // Bits 38, 39 and 40: FLUSH_GLOBAL, FLUSH_PERSISTENT and ATOMIC_WRITE
    // (the kernel's IB_UVERBS_DEVICE_*; rdma-core 44 has no names for them).
    CHECK(ex.device_cap_flags_ex ==
          (0x1C06 | IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B | (7ull << 38)));
    // On-demand paging: the newest rxe's transport bits, UC's and IMPLICIT.
    CHECK(ex.odp_caps.general_caps == (IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT));
    CHECK(ex.odp_caps.per_transport_caps.uc_odp_caps ==
          (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_SRQ_RECV));
    CHECK(ex.completion_timestamp_mask == 0);
    CHECK(ex.hca_core_clock == 0);
    CHECK(ex.max_dm_size == 0);
    CHECK(ex.phys_port_cnt_ex == 1);
    ibv_query_device_ex_input in{};
    in.comp_mask = 1;
    CHECK(v->query_device_ex(ctx, &in, &ex, sizeof ex) == EINVAL);
    // An older, shorter struct: nothing written past it.
    std::vector<std::uint8_t> shorter(sizeof(ibv_device_attr) + 8 + 16, 0xEE);
    REQUIRE(v->query_device_ex(ctx, nullptr, reinterpret_cast<ibv_device_attr_ex*>(shorter.data()),
                               sizeof(ibv_device_attr) + 8) == 0);
    CHECK(shorter[sizeof(ibv_device_attr) + 8] == 0xEE);
    CHECK(shorter.back() == 0xEE);
    // The compat slot of the context ops.
    ibv_device_attr b;
    REQUIRE(ctx->ops._compat_query_device(ctx, &b) == 0);
    CHECK(std::memcmp(&a, &b, sizeof a) == 0);
    sv::close_device(ctx);
}

TEST_CASE("GIDs: a changed table is read at once, though entries are kept between changes", "[verbs][query][gid]") {
    Rig rig;
    ibv_context* ctx = rig.open();
    ibv_gid g;
    // Read (and kept) before the change.
    REQUIRE(sv::query_gid(ctx, 1, 1, &g) == 0);
    CHECK(gid_hex(g) == "0000:0000:0000:0000:0000:ffff:0a01:0203");
    REQUIRE(sv::query_gid(ctx, 1, 2, &g) == 0);
    const std::string two = gid_hex(g);
    // The address at index 1 goes and another comes: the lowest free index
    // (1) takes it, as rxe's table does. The next query sees it, with no
    // event taken in between.
    rig.netdev.snap.ipv4 = {{192, 168, 7, 1}};
    rig.firmware->refresh_netdev();
    REQUIRE(sv::query_gid(ctx, 1, 1, &g) == 0);
    CHECK(gid_hex(g) == "0000:0000:0000:0000:0000:ffff:c0a8:0701");
    ibv_gid_entry e;
    REQUIRE(sv::query_gid_ex(ctx, 1, 1, &e, 0, sizeof e) == 0);
    CHECK(gid_hex(e.gid) == "0000:0000:0000:0000:0000:ffff:c0a8:0701");
    REQUIRE(sv::query_gid(ctx, 1, 2, &g) == 0);
    CHECK(gid_hex(g) == two);
    // Gone without a replacement: unused from the next query on.
    rig.netdev.snap.ipv4.clear();
    rig.firmware->refresh_netdev();
    CHECK(sv::query_gid_ex(ctx, 1, 1, &e, 0, sizeof e) == ENODATA);
    // A second context sees the same, and its queries do not disturb the first's.
    ibv_context* other = rig.open();
    REQUIRE(sv::query_gid(other, 1, 1, &g) == 0);
    CHECK(gid_hex(g) == "0000:0000:0000:0000:0000:0000:0000:0000");
    rig.netdev.snap.ipv4 = {{10, 1, 2, 3}};
    rig.firmware->refresh_netdev();
    REQUIRE(sv::query_gid(ctx, 1, 1, &g) == 0);
    CHECK(gid_hex(g) == "0000:0000:0000:0000:0000:ffff:0a01:0203");
    REQUIRE(sv::query_gid(other, 1, 1, &g) == 0);
    CHECK(gid_hex(g) == "0000:0000:0000:0000:0000:ffff:0a01:0203");
    sv::close_device(other);
    sv::close_device(ctx);
}

TEST_CASE("query_port: PORT_BLOCK, netdev state and MTU", "[verbs][query]") {
    Rig rig;
    ibv_context* ctx = rig.open();
    verbs_context* v = verbs_get_ctx_op(ctx, query_port);
    REQUIRE(v != nullptr);
    ibv_port_attr p;
    std::memset(&p, 0xA5, sizeof p);
    REQUIRE(v->query_port(ctx, 1, &p, sizeof p) == 0);
    CHECK(p.state == IBV_PORT_ACTIVE);
    CHECK(p.phys_state == 5);  // LinkUp
    CHECK(p.max_mtu == IBV_MTU_4096);
    CHECK(p.active_mtu == IBV_MTU_1024);  // 1500 - 80 -> 1024, as rxe
    CHECK(p.link_layer == IBV_LINK_LAYER_ETHERNET);
    CHECK(p.gid_tbl_len == 1024);
    CHECK(p.pkey_tbl_len == 1);
    CHECK(p.port_cap_flags == 0x00010000u);
    CHECK(p.max_msg_sz == 0x800000u);
    CHECK(p.lid == 0);
    CHECK(p.sm_lid == 0);
    CHECK(p.lmc == 0);
    CHECK(p.max_vl_num == 1);
    CHECK(p.active_width == 1);
    CHECK(p.active_speed == 1);
    CHECK(p.bad_pkey_cntr == 0);
    CHECK(p.qkey_viol_cntr == 0);
    CHECK(p.flags == 0);
    CHECK(p.port_cap_flags2 == 0);

    CHECK(v->query_port(ctx, 2, &p, sizeof p) == EINVAL);
    CHECK(v->query_port(ctx, 0, &p, sizeof p) == EINVAL);

    // The compat entry point writes only the old struct.
    std::vector<std::uint8_t> buf(sizeof(ibv_port_attr), 0xEE);
    REQUIRE(ctx->ops._compat_query_port(ctx, 1, reinterpret_cast<_compat_ibv_port_attr*>(buf.data())) == 0);
    CHECK(reinterpret_cast<ibv_port_attr*>(buf.data())->state == IBV_PORT_ACTIVE);
    CHECK(buf[sv::kCompatPortAttrSize] == 0xEE);

    // Netdev down, then up with a jumbo MTU.
    rig.netdev.snap.up = false;
    rig.firmware->refresh_netdev();
    REQUIRE(v->query_port(ctx, 1, &p, sizeof p) == 0);
    CHECK(p.state == IBV_PORT_DOWN);
    CHECK(p.phys_state == 2);  // Polling
    rig.netdev.snap.up = true;
    rig.netdev.snap.mtu = 9000;
    rig.firmware->refresh_netdev();
    REQUIRE(v->query_port(ctx, 1, &p, sizeof p) == 0);
    CHECK(p.state == IBV_PORT_ACTIVE);
    CHECK(p.active_mtu == IBV_MTU_4096);
    sv::close_device(ctx);
}

TEST_CASE("GIDs: rxe's table, RoCE v2, unused and out-of-range indices", "[verbs][query][gid]") {
    Rig rig;
    ibv_context* ctx = rig.open();
    ibv_gid g;
    REQUIRE(sv::query_gid(ctx, 1, 0, &g) == 0);
    CHECK(gid_hex(g) == "fe80:0000:0000:0000:5054:00ff:fe12:3456");
    REQUIRE(sv::query_gid(ctx, 1, 1, &g) == 0);
    CHECK(gid_hex(g) == "0000:0000:0000:0000:0000:ffff:0a01:0203");
    int type = -1;
    REQUIRE(sv::query_gid_type(ctx, 1, 0, &type) == 0);
    CHECK(type == sv::kGidTypeSysfsRoceV2);
    REQUIRE(sv::query_gid_type(ctx, 1, 1, &type) == 0);
    CHECK(type == sv::kGidTypeSysfsRoceV2);

    // An unused index: zeros, success (libibverbs' ibv_query_gid behaviour).
    std::memset(&g, 0xA5, sizeof g);
    REQUIRE(sv::query_gid(ctx, 1, 700, &g) == 0);
    CHECK(gid_hex(g) == "0000:0000:0000:0000:0000:0000:0000:0000");
    errno = 0;
    CHECK(sv::query_gid(ctx, 1, 1024, &g) == -1);
    CHECK(errno == EINVAL);
    errno = 0;
    CHECK(sv::query_gid(ctx, 2, 0, &g) == -1);
    CHECK(errno == EINVAL);

    ibv_gid_entry e;
    REQUIRE(sv::query_gid_ex(ctx, 1, 1, &e, 0, sizeof e) == 0);
    CHECK(e.gid_index == 1);
    CHECK(e.port_num == 1);
    CHECK(e.gid_type == IBV_GID_TYPE_ROCE_V2);
    CHECK(e.ndev_ifindex == 2);
    CHECK(sv::query_gid_ex(ctx, 1, 700, &e, 0, sizeof e) == ENODATA);
    CHECK(sv::query_gid_ex(ctx, 1, 1, &e, 1, sizeof e) == EINVAL);  // flags
    CHECK(sv::query_gid_ex(ctx, 1, 1, &e, 0, sizeof e - 1) == EINVAL);

    // The table: every valid entry once; too small a buffer is EINVAL.
    std::vector<ibv_gid_entry> t(1024);
    const ssize_t n = sv::query_gid_table(ctx, t.data(), t.size(), 0, sizeof(ibv_gid_entry));
    REQUIRE(n >= 2);
    CHECK(t[0].gid_index == 0);
    CHECK(t[1].gid_index == 1);
    for (ssize_t i = 0; i < n; ++i) {
        ibv_gid_entry one;
        CHECK(sv::query_gid_ex(ctx, 1, t[static_cast<std::size_t>(i)].gid_index, &one, 0, sizeof one) == 0);
        CHECK(std::memcmp(&one, &t[static_cast<std::size_t>(i)], sizeof one) == 0);
    }
    CHECK(sv::query_gid_table(ctx, t.data(), 1, 0, sizeof(ibv_gid_entry)) == -EINVAL);
    sv::close_device(ctx);
}

TEST_CASE("P_Keys: one entry, 0xFFFF", "[verbs][query]") {
    Rig rig;
    ibv_context* ctx = rig.open();
    __be16 k = 0;
    REQUIRE(sv::query_pkey(ctx, 1, 0, &k) == 0);
    CHECK(be16toh(k) == 0xFFFF);
    errno = 0;
    CHECK(sv::query_pkey(ctx, 1, 1, &k) == -1);
    CHECK(errno == EINVAL);
    CHECK(sv::get_pkey_index(ctx, 1, htobe16(0xFFFF)) == 0);
    errno = 0;
    CHECK(sv::get_pkey_index(ctx, 1, htobe16(0x8001)) == -1);
    CHECK(errno == ENOENT);
    sv::close_device(ctx);
}

TEST_CASE("PDs through ALLOC_PD / DEALLOC_PD, status to errno", "[verbs][pd]") {
    Rig rig;
    ibv_context* ctx = rig.open();
    ibv_pd* pd = sv::alloc_pd(ctx);
    REQUIRE(pd != nullptr);
    CHECK(pd->context == ctx);
    CHECK(pd->handle == sv::pd_number(pd));
    CHECK(rig.firmware->counts(1).pds == 1);
    ibv_pd* pd2 = sv::alloc_pd(ctx);
    REQUIRE(pd2 != nullptr);
    CHECK(sv::pd_number(pd2) != sv::pd_number(pd));

    // A PD with an MR on it: BUSY -> EBUSY, and the PD stays.
    host::Context* hc = sv::host_context(ctx);
    REQUIRE(hc != nullptr);
    namespace m = simnic::hw::cmd_reg_mr_in;
    Mbox mr = Mbox(m::kSize)
                  .set(m::pdn, sv::pd_number(pd))
                  .set(m::access, simnic::hw::access::kLocalWrite)
                  .set(m::domain_id, hc->boot_domain())
                  .set(m::iova, 0x7000)
                  .set(m::length, 4096)
                  .set(m::host_addr, 0x7000);
    host::CmdOutcome r;
    REQUIRE(hc->command(simnic::hw::CmdOpcode::RegMr, mr.b.data(), mr.b.size(), 64, r) == 0);
    REQUIRE(r.status == simnic::hw::CmdStatus::Ok);
    CHECK(sv::dealloc_pd(pd) == EBUSY);
    CHECK(rig.firmware->counts(1).pds == 2);

    CHECK(sv::dealloc_pd(pd2) == 0);
    CHECK(rig.firmware->counts(1).pds == 1);
    ibv_pd foreign{};
    CHECK(sv::dealloc_pd(&foreign) == EINVAL);

    // Closing the context frees what it still owns (MR, then PD).
    sv::close_device(ctx);
    CHECK(rig.firmware->counts().pds == 0);
    CHECK(rig.firmware->counts().mrs == 0);
}

TEST_CASE("a full object table: EINVAL as rxe's full pool, ENOMEM for an MR", "[verbs][limits]") {
    // Tables of one or two objects each. rxe's __rxe_add_to_pool answers
    // EINVAL for a PD, CQ, SRQ, QP and MW past the advertised count; 6.1's
    // rxe_alloc answers ENOMEM for an MR. The firmware says NO_RESOURCES for
    // all of them (simnic_fw_tests "Limits: ...").
    simnic::verbs::test::LocalDevice dev("sim0", true, [](auto& cap) {
        namespace cb = simnic::hw::cap_block;
        simnic::hw::set(cap.data(), cap.size(), cb::max_pd, 2);
        simnic::hw::set(cap.data(), cap.size(), cb::max_cq, 1);
        simnic::hw::set(cap.data(), cap.size(), cb::max_srq, 1);
        simnic::hw::set(cap.data(), cap.size(), cb::max_qp, 1);
        simnic::hw::set(cap.data(), cap.size(), cb::max_mr, 1);
        simnic::hw::set(cap.data(), cap.size(), cb::max_mw, 1);
    });
    ibv_context* ctx = dev.open();
    ibv_device_attr attr{};
    REQUIRE(sv::query_device(ctx, &attr) == 0);
    CHECK(attr.max_pd == 2);
    ibv_pd* pd = sv::alloc_pd(ctx);
    ibv_pd* pd2 = sv::alloc_pd(ctx);
    REQUIRE(pd != nullptr);
    REQUIRE(pd2 != nullptr);
    errno = 0;
    CHECK(sv::alloc_pd(ctx) == nullptr);
    CHECK(errno == EINVAL);
    ibv_cq* cq = sv::create_cq(ctx, 1, nullptr, nullptr, 0);
    REQUIRE(cq != nullptr);
    errno = 0;
    CHECK(sv::create_cq(ctx, 1, nullptr, nullptr, 0) == nullptr);
    CHECK(errno == EINVAL);
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 1;
    sa.attr.max_sge = 1;
    ibv_srq* srq = sv::create_srq(pd, &sa);
    REQUIRE(srq != nullptr);
    errno = 0;
    CHECK(sv::create_srq(pd, &sa) == nullptr);
    CHECK(errno == EINVAL);
    ibv_qp_init_attr qa{};
    qa.send_cq = qa.recv_cq = cq;
    qa.qp_type = IBV_QPT_RC;
    qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
    qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
    ibv_qp* qp = sv::create_qp(pd, &qa);
    REQUIRE(qp != nullptr);
    errno = 0;
    CHECK(sv::create_qp(pd, &qa) == nullptr);
    CHECK(errno == EINVAL);
    ibv_mw* mw = sv::alloc_mw(pd, IBV_MW_TYPE_2);
    REQUIRE(mw != nullptr);
    errno = 0;
    CHECK(sv::alloc_mw(pd, IBV_MW_TYPE_2) == nullptr);
    CHECK(errno == EINVAL);
    static char buf[2][4096];
    ibv_mr* mr = sv::reg_mr(pd, buf[0], sizeof buf[0], reinterpret_cast<std::uintptr_t>(buf[0]), IBV_ACCESS_LOCAL_WRITE);
    REQUIRE(mr != nullptr);
    errno = 0;
    CHECK(sv::reg_mr(pd, buf[1], sizeof buf[1], reinterpret_cast<std::uintptr_t>(buf[1]), IBV_ACCESS_LOCAL_WRITE) ==
          nullptr);
    CHECK(errno == ENOMEM);
    // Each freed: one more fits again.
    CHECK(sv::dereg_mr(mr) == 0);
    CHECK(sv::dealloc_mw(mw) == 0);
    CHECK(sv::destroy_qp(qp) == 0);
    CHECK(sv::destroy_srq(srq) == 0);
    CHECK(sv::destroy_cq(cq) == 0);
    cq = sv::create_cq(ctx, 1, nullptr, nullptr, 0);
    REQUIRE(cq != nullptr);
    CHECK(sv::destroy_cq(cq) == 0);
    CHECK(sv::dealloc_pd(pd2) == 0);
    CHECK(sv::dealloc_pd(pd) == 0);
    sv::close_device(ctx);
    CHECK(dev.firmware->counts().pds == 0);
}

TEST_CASE("verbs this device lacks fail cleanly", "[verbs][ops]") {
    Rig rig;
    ibv_context* ctx = rig.open();
    verbs_context* v = verbs_get_ctx(ctx);
    errno = 0;
    CHECK(v->alloc_dm(ctx, nullptr) == nullptr);
    CHECK(errno == EOPNOTSUPP);
    errno = 0;
    CHECK(ctx->ops.alloc_mw(nullptr, IBV_MW_TYPE_1) == nullptr);  // implemented: no PD is EINVAL
    CHECK(errno == EINVAL);
    errno = 0;
    CHECK(v->create_cq_ex(ctx, nullptr) == nullptr);  // implemented: no attributes is EINVAL
    CHECK(errno == EINVAL);
    errno = 0;
    CHECK(v->create_qp_ex(ctx, nullptr) == nullptr);
    CHECK(errno == EINVAL);
    CHECK(v->modify_cq(nullptr, nullptr) == EINVAL);  // implemented: no CQ is EINVAL
    CHECK(v->query_rt_values(ctx, nullptr) == EOPNOTSUPP);
    sv::close_device(ctx);
}

TEST_CASE("sysfs files as rxe has them", "[verbs][sysfs]") {
    Rig rig;
    ibv_device* d = rig.device();
    char buf[64];
    int ret = 0;
    REQUIRE(sv::read_sysfs_file(d->ibdev_path, "node_type", buf, sizeof buf, ret));
    CHECK(ret == 5);
    CHECK(std::string(buf) == "1: CA");
    REQUIRE(sv::read_sysfs_file(d->ibdev_path, "fw_ver", buf, sizeof buf, ret));
    CHECK(std::string(buf) == "0.1.0");
    REQUIRE(sv::read_sysfs_file((std::string(d->ibdev_path) + "/").c_str(), "node_guid", buf,
                                sizeof buf, ret));
    CHECK(std::string(buf) == "5054:00ff:fe12:3456");
    REQUIRE(sv::read_sysfs_file(d->dev_path, "ibdev", buf, sizeof buf, ret));
    CHECK(std::string(buf) == "sim0");
    errno = 0;
    REQUIRE(sv::read_sysfs_file(d->ibdev_path, "board_id", buf, sizeof buf, ret));
    CHECK(ret == -1);
    CHECK(errno == ENOENT);
    // Truncation keeps the terminator.
    char small[3];
    REQUIRE(sv::read_sysfs_file(d->ibdev_path, "node_type", small, sizeof small, ret));
    CHECK(ret == 2);
    CHECK(std::string(small) == "1:");
    // Not ours: passed on.
    CHECK_FALSE(sv::read_sysfs_file("/sys/class/infiniband/mlx5_0", "fw_ver", buf, sizeof buf, ret));
    CHECK_FALSE(sv::read_sysfs_file("/sys/class/infiniband/sim00", "fw_ver", buf, sizeof buf, ret));
}

// A firmware with fw_test_util.h's small limits on a fake netdev, whose
// events go to `sink`: the device behind the local contexts below.
struct SmallFirmware {
    static fw::FwConfig config() {
        fw::FwConfig c;
        c.cap = fw::default_cap_block(fw::test::small_limits());
        return c;
    }
    FakeNetdev netdev;
    host::LocalEventSink sink;
    fw::FwConfig cfg = config();
    fw::MemTableStore store{fw::table_capacities(cfg.cap.data(), cfg.gid_tbl_len)};
    fw::Firmware firmware{cfg, store, netdev, sink};
};

TEST_CASE("local context: BAR0 global area, commands, events", "[host][local]") {
    SmallFirmware dev;
    fw::Firmware& firmware = dev.firmware;
    host::LocalEventSink& sink = dev.sink;
    auto hc = host::open_local_context(firmware, sink, "sim0", 3, 77, 5);
    REQUIRE(hc);
    CHECK(hc->device_name() == "sim0");
    CHECK(firmware.has_context(3));
    CHECK_FALSE(host::open_local_context(firmware, sink, "sim0", 3, 77));  // id in use

    namespace hw = simnic::hw;
    std::array<std::uint8_t, hw::id_block::kSize> id{};
    REQUIRE(hc->read_bar(hw::kBar0IdBlock, id.data(), id.size()));
    CHECK(hw::get(id.data(), id.size(), hw::id_block::magic) == hw::kMagic);
    CHECK(hw::get(id.data(), id.size(), hw::id_block::device_index) == 5);
    std::array<std::uint8_t, hw::cap_block::kSize> cap{};
    REQUIRE(hc->read_bar(hw::kBar0CapBlock, cap.data(), cap.size()));
    CHECK(cap == firmware.cap_block());
    std::array<std::uint8_t, hw::port_block::kSize> port{};
    REQUIRE(hc->read_bar(hw::kBar0PortBlock, port.data(), port.size()));
    CHECK(port == firmware.port_block());
    std::array<std::uint8_t, hw::ctxwin_block::kSize> win{};
    REQUIRE(hc->read_bar(hw::kBar0CtxWinBlock, win.data(), win.size()));
    CHECK(hw::get(win.data(), win.size(), hw::reg_block_header::type) ==
          static_cast<std::uint32_t>(hw::BlockType::CtxWin));
    CHECK(hw::get(win.data(), win.size(), hw::ctxwin_block::ctx_count) == 8);
    // The chain from ID_BLOCK: the firmware's three blocks, then every block
    // the device writes, with its type and length, and then its end.
    std::vector<std::uint32_t> chain, want{hw::kBar0IdBlock, hw::kBar0CapBlock, hw::kBar0PortBlock};
    for (const hw::GlobalBlock& g : hw::kBar0DeviceBlocks) want.push_back(g.at);
    std::uint32_t at = hw::kBar0IdBlock;  // 0: a `next` of 0 ends the chain after it
    do {
        std::array<std::uint8_t, hw::reg_block_header::kSize> h{};
        REQUIRE(hc->read_bar(at, h.data(), h.size()));
        for (const hw::GlobalBlock& g : hw::kBar0DeviceBlocks)
            if (g.at == at) {
                CHECK(hw::get(h.data(), h.size(), hw::reg_block_header::type) == static_cast<std::uint32_t>(g.type));
                CHECK(hw::get(h.data(), h.size(), hw::reg_block_header::length) == g.length);
            }
        chain.push_back(at);
        at = static_cast<std::uint32_t>(hw::get(h.data(), h.size(), hw::reg_block_header::next));
    } while (at != 0 && chain.size() <= want.size());
    CHECK(chain == want);
    std::uint8_t b = 0;
    CHECK(hc->read_bar(hw::kBar0CtxBase - 1, &b, 1));
    CHECK_FALSE(hc->read_bar(hw::kBar0CtxBase - 1, &b, 2));
    CHECK_FALSE(hc->read_bar(hw::kBar0CtxBase, &b, 1));

    host::CmdOutcome r;
    REQUIRE(hc->command(hw::CmdOpcode::Nop, nullptr, 0, 0, r) == 0);
    CHECK(r.status == hw::CmdStatus::Ok);
    REQUIRE(hc->command(hw::CmdOpcode::QueryDevice, nullptr, 0, 255, r) == 0);
    CHECK(r.status == hw::CmdStatus::BadMbox);
    CHECK(r.out.empty());

    // Events: nothing signalled until armed; one wake-up per arm.
    auto readable = [&hc] {
        pollfd p{hc->event_fd(), POLLIN, 0};
        return ::poll(&p, 1, 0) == 1;
    };
    auto drain = [&hc] {
        std::uint64_t v;
        while (::read(hc->event_fd(), &v, sizeof v) == static_cast<ssize_t>(sizeof v)) {
        }
    };
    hw::Eqe e;
    CHECK_FALSE(hc->next_event(e));
    dev.netdev.snap.running = false;
    firmware.refresh_netdev();  // PORT_ERR to every context
    CHECK_FALSE(readable());
    hc->arm_events();
    CHECK(readable());
    drain();
    REQUIRE(hc->next_event(e));
    CHECK(e.event_type == hw::EventType::PortErr);
    CHECK(e.obj_num == 1);
    CHECK_FALSE(hc->next_event(e));
    dev.netdev.snap.running = true;
    firmware.refresh_netdev();  // disarmed: queued, no wake-up
    CHECK_FALSE(readable());
    hc->arm_events();  // pending at arm time: wakes at once
    CHECK(readable());
    drain();
    REQUIRE(hc->next_event(e));
    CHECK(e.event_type == hw::EventType::PortActive);

    hc.reset();
    CHECK_FALSE(firmware.has_context(3));
    dev.netdev.snap.running = false;
    firmware.refresh_netdev();  // no receiver any more: dropped, no crash
}

// A sealed memfd of `n` bytes (unsealed: `seal` false), or -1.
static int memfd_of(std::size_t n, bool seal = true) {
    const int fd = memfd_create("local-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return -1;
    if (ftruncate(fd, static_cast<off_t>(n)) != 0 ||
        (seal && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)) {
        close(fd);
        return -1;
    }
    return fd;
}

TEST_CASE("local context: SHM objects only where the device offers them, by the daemon's rules", "[host][local]") {
    namespace hw = simnic::hw;
    SmallFirmware dev;
    host::LocalEventSink& sink = dev.sink;
    auto hc = host::open_local_context(dev.firmware, sink, "sim0", 3, 77);
    REQUIRE(hc);
    constexpr std::size_t kLen = 64 * 1024;
    const int fd = memfd_of(kLen);
    REQUIRE(fd >= 0);
    std::uint32_t handle = 0;
    // No engine that reaches SHM objects: a driver keeps its memory in the
    // process (the provider's queue arena falls back).
    CHECK(hc->share_memory(fd, kLen, handle) == EOPNOTSUPP);

    sink.offer_shm();
    const int loose = memfd_of(kLen, false);
    REQUIRE(loose >= 0);
    CHECK(hc->share_memory(loose, kLen, handle) == EPERM);  // may shrink under the device
    close(loose);
    CHECK(hc->share_memory(fd, kLen / 2, handle) == EINVAL);  // not its size
    REQUIRE(hc->share_memory(fd, kLen, handle) == 0);

    // The device's mapping is the same memory as the host's.
    std::uint64_t size = 0;
    std::uint8_t* mapped = sink.shm_object(3, handle, size);
    REQUIRE(mapped != nullptr);
    CHECK(size == kLen);
    CHECK(sink.shm_object(4, handle, size) == nullptr);  // another context's
    void* host_map = mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    REQUIRE(host_map != MAP_FAILED);
    static_cast<std::uint8_t*>(host_map)[kLen - 1] = 0x5c;
    CHECK(mapped[kLen - 1] == 0x5c);

    // The firmware knows the handle: ATTACH_DOMAIN takes it, and refuses a
    // mapping longer than the object.
    namespace ad = hw::cmd_attach_domain_in;
    std::uint8_t in[ad::kSize] = {};
    hw::set(in, ad::kind, static_cast<std::uint8_t>(hw::DomainKind::Shm));
    hw::set(in, ad::shm_handle, handle);
    hw::set(in, ad::map_base, reinterpret_cast<std::uintptr_t>(host_map));
    hw::set(in, ad::map_len, kLen + 4096);
    host::CmdOutcome o;
    REQUIRE(hc->command(hw::CmdOpcode::AttachDomain, in, sizeof in, hw::cmd_handle::kSize, o) == 0);
    CHECK(o.status == hw::CmdStatus::BadParam);
    hw::set(in, ad::map_len, kLen);
    REQUIRE(hc->command(hw::CmdOpcode::AttachDomain, in, sizeof in, hw::cmd_handle::kSize, o) == 0);
    CHECK(o.status == hw::CmdStatus::Ok);

    // The context's end takes the device's mappings with it.
    hc.reset();
    CHECK(sink.shm_object(3, handle, size) == nullptr);
    munmap(host_map, kLen);
    close(fd);
}
