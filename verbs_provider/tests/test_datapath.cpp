// The verbs provider's data path on an in-process device (a fw::Firmware
// behind open_local_context, wrapped so every command and doorbell is
// recorded): command mailboxes per verb, WQEs per hw-spec 6 as the device
// decodes them, CQE translation per 7, doorbells, completion channels and
// async events (8). Mailboxes are read through hwspec's field descriptors,
// WQEs, CQEs and EQEs through its codec.
#include <endian.h>
#include <poll.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <unistd.h>

#include <thread>

#include <cstring>
#include <string>
#include <memory>
#include <vector>

#include "local_device.h"
#include "provider_internal.h"
#include "simnic/host/user_pages.h"
#include "simnic/hw/cqe.h"
#include "simnic/hw/field.h"
#include "simnic/hw/layout.h"
#include "simnic/hw/wqe.h"

namespace sv = simnic::verbs;
namespace host = simnic::host;
namespace hw = simnic::hw;
namespace fw = simnic::fw;

namespace {

struct Cmd {
    hw::CmdOpcode op;
    std::vector<std::uint8_t> in;
    hw::CmdStatus status;
    std::uint64_t get(hw::Field f) const { return hw::get(in.data(), in.size(), f); }
};
struct Db {
    hw::DbKind kind;
    std::uint32_t num, index;
    std::uint8_t cmd;
};

// A host::Context that records what passes through it.
class Recorder final : public host::Context {
public:
    explicit Recorder(std::unique_ptr<host::Context> in) : in_(std::move(in)) {}
    const std::string& device_name() const override { return in_->device_name(); }
    int command(hw::CmdOpcode op, const std::uint8_t* in, std::size_t len, std::size_t cap,
                host::CmdOutcome& r) override {
        const int e = in_->command(op, in, len, cap, r);
        cmds.push_back({op, std::vector<std::uint8_t>(in, in + len), r.status});
        return e;
    }
    bool read_bar(std::uint32_t o, std::uint8_t* d, std::size_t n) override {
        return in_->read_bar(o, d, n);
    }
    int event_fd() const override { return in_->event_fd(); }
    bool next_event(hw::Eqe& e) override {
        return in_->next_event(e);
    }
    void arm_events() override { in_->arm_events(); }
    std::uint16_t boot_domain() const override { return in_->boot_domain(); }
    void ring_doorbell(hw::DbKind k, std::uint32_t n, std::uint32_t i, std::uint8_t c, std::uint32_t s) override {
        dbs.push_back({k, n, i, c});
        in_->ring_doorbell(k, n, i, c, s);
    }
    const Cmd& last(hw::CmdOpcode op) const {
        for (auto it = cmds.rbegin(); it != cmds.rend(); ++it)
            if (it->op == op) return *it;
        FAIL("command not seen");
        return cmds.front();
    }
    std::vector<Cmd> cmds;
    std::vector<Db> dbs;

private:
    std::unique_ptr<host::Context> in_;
};

// Device "simdp" with small tables, its context (id 3) recorded, opened,
// with a PD.
struct Rig : simnic::verbs::test::LocalDevice {
    Rig() : LocalDevice("simdp", false) {
        next_ctx = ctx_id;
        wrap = [this](std::unique_ptr<host::Context> c) -> std::unique_ptr<host::Context> {
            auto r = std::make_unique<Recorder>(std::move(c));
            rec = r.get();
            return r;
        };
        ctx = open();
        pd = sv::alloc_pd(ctx);
        REQUIRE(pd != nullptr);
    }
    ~Rig() {
        if (pd) sv::dealloc_pd(pd);
        sv::close_device(ctx);
    }
    void post_eqe(hw::EventType t, std::uint32_t obj, std::uint32_t aux = 0) {
        std::array<std::uint8_t, hw::kEqeSize> e{};
        hw::Eqe v;
        v.event_type = t;
        v.obj_num = obj;
        v.aux = aux;
        hw::encode_eqe(v, e.data());
        sink.post_eqe(ctx_id, e.data(), e.size());
    }

    static constexpr std::uint16_t ctx_id = 3;
    Recorder* rec = nullptr;
    ibv_context* ctx = nullptr;
    ibv_pd* pd = nullptr;
};

bool readable(int fd, int ms) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

// A CQE as the device would write it.
hw::Cqe make_cqe(std::uint64_t wr_id, std::uint32_t qpn, bool is_send, std::uint32_t wqe_index,
                 hw::WcStatus st = hw::WcStatus::Success, hw::WcOpcode op = hw::WcOpcode::Send,
                 std::uint8_t flags = 0, std::uint32_t imm = 0, std::uint32_t byte_len = 0) {
    hw::Cqe c;
    c.wr_id = wr_id;
    c.status = st;
    c.opcode = op;
    c.wc_flags = flags;
    c.vendor_err = st == hw::WcStatus::Success ? 0 : 3;
    c.byte_len = byte_len;
    c.imm_inv = imm;
    c.qp_num = qpn;
    c.src_qp = is_send ? 0 : 0x99;
    c.is_send = is_send;
    c.wqe_index = wqe_index;
    return c;
}

// CQE number `p` of `cq`'s ring, with its phase bit (7.2).
void put_cqe(ibv_cq* cq, std::uint32_t p, const hw::Cqe& c) {
    const sv::QueueView v = sv::cq_view(cq);
    std::uint8_t log = 0;
    while ((1u << log) < v.entries) ++log;
    hw::encode_cqe(c, p, log, v.base + hw::ring_entry_offset(hw::kCqRing, p, log));
}
void put_cqe(ibv_cq* cq, std::uint32_t p, std::uint64_t wr_id, std::uint32_t qpn, bool is_send,
             std::uint32_t wqe_index, hw::WcStatus st = hw::WcStatus::Success,
             hw::WcOpcode op = hw::WcOpcode::Send, std::uint8_t flags = 0, std::uint32_t imm = 0,
             std::uint32_t byte_len = 0) {
    put_cqe(cq, p, make_cqe(wr_id, qpn, is_send, wqe_index, st, op, flags, imm, byte_len));
}

// The WQE in slot `slot` of a send queue, as the device decodes it (hw-spec
// 6.2). The limits are the format's: only a malformed WQE is refused.
hw::SendWqe sent(const sv::QueueView& sq, std::uint32_t slot, hw::QpType t = hw::QpType::Rc) {
    hw::SendWqe w;
    const hw::SqLimits lim{t, sq.stride, hw::kMaxSge, hw::kMaxInline};
    REQUIRE(hw::decode_send(sq.base + std::size_t{slot} * sq.stride, lim, w) == hw::WqeFault::None);
    return w;
}

// The WQE in slot `slot` of a receive queue or SRQ (hw-spec 6.4).
hw::RecvWqe received(const sv::QueueView& q, std::uint32_t slot) {
    hw::RecvWqe w;
    REQUIRE(hw::decode_recv(q.base + std::size_t{slot} * q.stride, q.stride, hw::kMaxSge, w) ==
            hw::WqeFault::None);
    return w;
}

// Puts an int into an enum field the way a C application may: by its bytes,
// whatever the enum's enumerators (a C++ cast to an enum outside its range
// would itself be undefined).
template <typename E>
void c_store(E& field, int v) {
    static_assert(sizeof(E) == sizeof(int));
    std::memcpy(&field, &v, sizeof v);
}

ibv_qp* make_qp(Rig& r, ibv_cq* cq, ibv_qp_type t = IBV_QPT_RC, std::uint32_t send_wr = 4,
                std::uint32_t recv_wr = 8, ibv_srq* srq = nullptr) {
    ibv_qp_init_attr a{};
    a.send_cq = cq;
    a.recv_cq = cq;
    a.srq = srq;
    a.qp_type = t;
    a.cap.max_send_wr = send_wr;
    a.cap.max_recv_wr = recv_wr;
    a.cap.max_send_sge = 2;
    a.cap.max_recv_sge = 2;
    a.cap.max_inline_data = 64;
    ibv_qp* qp = sv::create_qp(r.pd, &a);
    REQUIRE(qp != nullptr);
    return qp;
}

// create_qp_ex's input for a QP of type `t` on `cq` (both directions) in the
// rig's PD, with `cap` and the ibv_wr_* operations `ops` (SEND_OPS_FLAGS).
ibv_qp_init_attr_ex qp_ex_attr(Rig& r, ibv_cq* cq, ibv_qp_type t, std::uint64_t ops, ibv_qp_cap cap) {
    ibv_qp_init_attr_ex a{};
    a.send_cq = cq;
    a.recv_cq = cq;
    a.qp_type = t;
    a.cap = cap;
    a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    a.pd = r.pd;
    a.send_ops_flags = ops;
    return a;
}

// ibv_rc_pingpong's three transitions, with the GRH AV of `-g 1` pointing
// at our own GID 1 (loopback, so firmware resolves the MAC).
void connect_rc(Rig& r, ibv_qp* qp) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = 1;
    a.qp_access_flags = 0;
    REQUIRE(sv::modify_qp(qp, &a,
                          IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
    ibv_gid gid{};
    REQUIRE(sv::query_gid(r.ctx, 1, 1, &gid) == 0);
    std::memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = qp->qp_num;
    a.rq_psn = 0x123;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.hop_limit = 1;
    a.ah_attr.grh.dgid = gid;
    a.ah_attr.grh.sgid_index = 1;
    a.ah_attr.grh.flow_label = 0x12345;
    a.ah_attr.grh.traffic_class = 0x20;
    a.ah_attr.sl = 0;
    a.ah_attr.port_num = 1;
    REQUIRE(sv::modify_qp(qp, &a,
                          IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                              IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                              IBV_QP_MIN_RNR_TIMER) == 0);
    const Cmd& m = r.rec->last(hw::CmdOpcode::ModifyQp);
    namespace q = hw::qp_attr;
    CHECK(m.get(q::qpn) == qp->qp_num);
    CHECK(m.get(q::qp_state) == IBV_QPS_RTR);
    CHECK(m.get(q::path_mtu) == IBV_MTU_1024);
    CHECK(m.get(q::rq_psn) == 0x123);
    CHECK(m.get(q::min_rnr_timer) == 12);
    CHECK(m.get(q::max_dest_rd_atomic) == 1);
    CHECK(m.get(q::av_grh) == 1);
    CHECK(m.get(q::av_sgid_index) == 1);
    CHECK(m.get(q::av_hop_limit) == 1);
    CHECK(m.get(q::av_flow_label) == 0x12345);
    CHECK(m.get(q::av_traffic_class) == 0x20);
    std::uint8_t dgid[16];
    hw::get_bytes(m.in.data(), m.in.size(), q::av_dgid, dgid, 16);
    CHECK(std::memcmp(dgid, gid.raw, 16) == 0);
    std::memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = 0x456;
    a.max_rd_atomic = 1;
    REQUIRE(sv::modify_qp(qp, &a,
                          IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                              IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) == 0);
    CHECK(r.rec->last(hw::CmdOpcode::ModifyQp).get(q::attr_mask) ==
          (IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
           IBV_QP_MAX_QP_RD_ATOMIC));
    CHECK(qp->state == IBV_QPS_RTS);
}

}  // namespace

TEST_CASE("MRs: REG_MR direct mode in the bootstrap domain", "[verbs][mr]") {
    Rig r;
    std::vector<std::uint8_t> buf(10000);
    ibv_mr* mr = sv::reg_mr(r.pd, buf.data(), buf.size(), reinterpret_cast<std::uintptr_t>(buf.data()),
                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                IBV_ACCESS_REMOTE_READ | IBV_ACCESS_RELAXED_ORDERING);
    REQUIRE(mr != nullptr);
    const Cmd& c = r.rec->last(hw::CmdOpcode::RegMr);
    namespace m = hw::cmd_reg_mr_in;
    CHECK(c.get(m::pdn) == sv::pd_number(r.pd));
    CHECK(c.get(m::access) == (hw::access::kLocalWrite | hw::access::kRemoteWrite |
                               hw::access::kRemoteRead));
    CHECK(c.get(m::mtt_mode) == 0);
    CHECK(c.get(m::zero_based) == 0);
    CHECK(c.get(m::domain_id) == r.rec->boot_domain());
    CHECK(c.get(m::iova) == reinterpret_cast<std::uintptr_t>(buf.data()));
    CHECK(c.get(m::host_addr) == reinterpret_cast<std::uintptr_t>(buf.data()));
    CHECK(c.get(m::length) == buf.size());
    CHECK(mr->lkey == mr->rkey);
    CHECK(hw::key_index(mr->lkey) != 0);
    CHECK(mr->addr == buf.data());
    CHECK(mr->length == buf.size());
    CHECK(r.firmware->counts().mrs == 1);
    // iova2 with another IOVA (at the address's offset within its page, as
    // ib_uverbs requires: see "reg_mr_iova: ..." below).
    const std::uint64_t iova = 0x7000 + (reinterpret_cast<std::uintptr_t>(buf.data()) & 0xFFF);
    ibv_mr* mr2 = sv::reg_mr(r.pd, buf.data(), 100, iova, IBV_ACCESS_LOCAL_WRITE);
    REQUIRE(mr2 != nullptr);
    CHECK(r.rec->last(hw::CmdOpcode::RegMr).get(m::iova) == iova);
    CHECK(sv::dereg_mr(mr2) == 0);
    // IB rule: REMOTE_WRITE needs LOCAL_WRITE (firmware: BAD_PARAM -> EINVAL).
    errno = 0;
    CHECK(sv::reg_mr(r.pd, buf.data(), 100, reinterpret_cast<std::uintptr_t>(buf.data()),
                     IBV_ACCESS_REMOTE_WRITE) == nullptr);
    CHECK(errno == EINVAL);
    CHECK(sv::dereg_mr(mr) == 0);
    CHECK(r.rec->last(hw::CmdOpcode::DeregMr).get(hw::cmd_handle::handle) != 0);
    CHECK(r.firmware->counts().mrs == 0);
}

// FLUSH's rights (hw-spec 5.6.5, 5.6.11; kernel rxe 6.12): rdma-core 44 has
// no IBV_ACCESS_FLUSH_* names, but libibverbs passes bits 8 and 9 through
// ibv_reg_mr, ibv_rereg_mr and ibv_modify_qp to the provider untouched.
TEST_CASE("FLUSH rights: reg_mr, rereg_mr and modify_qp take bits 8 and 9, query_qp returns them",
          "[verbs][mr][qp][flush]") {
    constexpr unsigned kGlobal = 1u << 8, kPersistent = 1u << 9;
    Rig r;
    ibv_device_attr_ex ex{};
    REQUIRE(sv::query_device_ex(r.ctx, nullptr, &ex, sizeof ex) == 0);
    CHECK((ex.device_cap_flags_ex >> 38 & 3) == 3);  // FLUSH_GLOBAL, FLUSH_PERSISTENT
    std::vector<std::uint8_t> buf(4096);
    const auto va = reinterpret_cast<std::uintptr_t>(buf.data());
    namespace m = hw::cmd_reg_mr_in;
    ibv_mr* mr = sv::reg_mr(r.pd, buf.data(), buf.size(), va, IBV_ACCESS_LOCAL_WRITE | kGlobal);
    REQUIRE(mr != nullptr);
    CHECK(r.rec->last(hw::CmdOpcode::RegMr).get(m::access) == (IBV_ACCESS_LOCAL_WRITE | kGlobal));
    CHECK(hw::get(r.store->entry(fw::Table::Mpt, hw::key_index(mr->lkey)), hw::mpt_entry::kSize,
                  hw::mpt_entry::access) == (IBV_ACCESS_LOCAL_WRITE | kGlobal));
    // FLUSH_PERSISTENT at registration: no persistent memory (rxe: EINVAL).
    errno = 0;
    CHECK(sv::reg_mr(r.pd, buf.data(), buf.size(), va, IBV_ACCESS_LOCAL_WRITE | kPersistent) == nullptr);
    CHECK(errno == EINVAL);
    // ibv_rereg_mr grants it, as rxe_rereg_user_mr does.
    CHECK(sv::rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
                       IBV_ACCESS_LOCAL_WRITE | kGlobal | kPersistent) == 0);
    CHECK(hw::get(r.store->entry(fw::Table::Mpt, hw::key_index(mr->lkey)), hw::mpt_entry::kSize,
                  hw::mpt_entry::access) == (IBV_ACCESS_LOCAL_WRITE | kGlobal | kPersistent));
    CHECK(sv::dereg_mr(mr) == 0);

    ibv_cq* cq = sv::create_cq(r.ctx, 16, nullptr, nullptr, 0);
    REQUIRE(cq != nullptr);
    ibv_qp_init_attr a{};
    a.send_cq = cq;
    a.recv_cq = cq;
    a.qp_type = IBV_QPT_RC;
    a.cap = {4, 4, 1, 1, 0};
    ibv_qp* qp = sv::create_qp(r.pd, &a);
    REQUIRE(qp != nullptr);
    connect_rc(r, qp);
    ibv_qp_attr at{};
    at.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | kGlobal | kPersistent;
    REQUIRE(sv::modify_qp(qp, &at, IBV_QP_ACCESS_FLAGS) == 0);  // RTS -> RTS
    CHECK(r.rec->last(hw::CmdOpcode::ModifyQp).get(hw::qp_attr::qp_access_flags) == 0x302);
    ibv_qp_attr q{};
    ibv_qp_init_attr qi{};
    REQUIRE(sv::query_qp(qp, &q, IBV_QP_ACCESS_FLAGS, &qi) == 0);
    CHECK(q.qp_access_flags == 0x302u);
    // Bit 10 is no right: the firmware refuses it (EINVAL), the QP keeps its own.
    at.qp_access_flags = 1u << 10;
    CHECK(sv::modify_qp(qp, &at, IBV_QP_ACCESS_FLAGS) == EINVAL);
    REQUIRE(sv::query_qp(qp, &q, IBV_QP_ACCESS_FLAGS, &qi) == 0);
    CHECK(q.qp_access_flags == 0x302u);
    CHECK(sv::destroy_qp(qp) == 0);
    CHECK(sv::destroy_cq(cq) == 0);
}

TEST_CASE("reg_mr: a pinned MR needs its pages now (EFAULT), an on-demand one does not", "[verbs][mr][odp]") {
    // ib_umem_get pins a pinned MR's pages at registration: a hole, a
    // PROT_NONE page, or a read-only page asked to be writable is EFAULT,
    // after the device's own checks. An ODP MR is a range of the address
    // space, whatever is mapped there now.
    Rig r;
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    auto* base = static_cast<std::uint8_t*>(
        mmap(nullptr, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    REQUIRE(base != MAP_FAILED);
    // Page 1 is no memory to the device: PROT_NONE, which pinning and
    // process_vm_* treat as a hole does, but which no allocation of another
    // thread can take in the meantime (a munmapped page can be, and under
    // ASan it was).
    REQUIRE(mprotect(base + page, page, PROT_NONE) == 0);         // page 1: not accessible
    REQUIRE(mprotect(base + 2 * page, page, PROT_READ) == 0);     // page 2: read-only
    REQUIRE(mprotect(base + 3 * page, page, PROT_NONE) == 0);     // page 3: a guard
    auto reg = [&](std::uint8_t* p, std::size_t n, unsigned access) {
        errno = 0;
        return sv::reg_mr(r.pd, p, n, reinterpret_cast<std::uintptr_t>(p), access);
    };
    // The two ways of reading the mappings (the ioctl of newer kernels, the
    // text of older ones) agree on every case below.
    for (bool w : {false, true})
        for (std::size_t off : {std::size_t{0}, page - 8, page, 2 * page, 3 * page})
            for (std::size_t n : {std::size_t{8}, page, 2 * page}) {
                INFO("offset " << off << " length " << n << " writable " << w);
                CHECK(host::check_user_pages(base + off, n, w) == host::check_user_pages_by_text(base + off, n, w));
            }
    CHECK(host::check_user_pages(base, page, true) == 0);
    CHECK(host::check_user_pages_by_text(base, page, true) == 0);
    CHECK(host::check_user_pages_by_text(base + 2 * page, page, false) == 0);
    CHECK(host::check_user_pages_by_text(base + 2 * page, page, true) == EFAULT);
    CHECK(host::check_user_pages_by_text(base + page, 8, false) == EFAULT);
    // A true hole: the page at 0x1000 lies below vm.mmap_min_addr and is
    // never mapped.
    auto* const never = reinterpret_cast<std::uint8_t*>(std::uintptr_t{0x1000});
    CHECK(host::check_user_pages(never, 8, false) == EFAULT);
    CHECK(host::check_user_pages_by_text(never, 8, false) == EFAULT);
    CHECK(reg(never, 8, 0) == nullptr);
    CHECK(errno == EFAULT);
    // Page 0 alone is fine; reaching into page 1 is not.
    ibv_mr* ok = reg(base, page, IBV_ACCESS_LOCAL_WRITE);
    REQUIRE(ok != nullptr);
    CHECK(sv::dereg_mr(ok) == 0);
    CHECK(reg(base, page + 1, IBV_ACCESS_LOCAL_WRITE) == nullptr);
    CHECK(errno == EFAULT);
    CHECK(reg(base + page, page, 0) == nullptr);
    CHECK(errno == EFAULT);
    // The read-only page: readable by the device, not writable.
    ibv_mr* ro = reg(base + 2 * page, page, IBV_ACCESS_REMOTE_READ);
    REQUIRE(ro != nullptr);
    CHECK(sv::dereg_mr(ro) == 0);
    CHECK(reg(base + 2 * page, page, IBV_ACCESS_LOCAL_WRITE) == nullptr);
    CHECK(errno == EFAULT);
    CHECK(reg(base + 3 * page, 8, 0) == nullptr);
    CHECK(errno == EFAULT);
    // The device's checks come first (REMOTE_WRITE without LOCAL_WRITE).
    CHECK(reg(base + page, page, IBV_ACCESS_REMOTE_WRITE) == nullptr);
    CHECK(errno == EINVAL);
    // Every refusal left nothing registered.
    CHECK(r.firmware->counts().mrs == 0);

    // On demand: all four pages, hole and guard included.
    ibv_mr* odp = reg(base, 4 * page, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ON_DEMAND);
    REQUIRE(odp != nullptr);
    namespace m = hw::cmd_reg_mr_in;
    CHECK(r.rec->last(hw::CmdOpcode::RegMr).get(m::access) ==
          (hw::access::kLocalWrite | hw::access::kRemoteWrite | hw::access::kOnDemand));
    // The implicit MR: ibv_reg_mr(pd, NULL, SIZE_MAX, ON_DEMAND).
    ibv_mr* im = reg(nullptr, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
    REQUIRE(im != nullptr);
    CHECK(im->addr == nullptr);
    CHECK(im->length == SIZE_MAX);
    CHECK(r.rec->last(hw::CmdOpcode::RegMr).get(m::length) == ~std::uint64_t{0});
    CHECK(r.firmware->counts().mrs == 2);
    CHECK(sv::dereg_mr(im) == 0);

    // ibv_advise_mr on the ODP MR (its IOVA is its address).
    const auto va = [&](std::size_t off) { return reinterpret_cast<std::uintptr_t>(base) + off; };
    ibv_sge sge{va(0), static_cast<std::uint32_t>(page), odp->lkey};
    verbs_context* vc = verbs_get_ctx(r.ctx);
    REQUIRE(vc->advise_mr != nullptr);
    CHECK(vc->advise_mr(r.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1) == 0);
    unsigned char resident = 0;
    REQUIRE(mincore(base, page, &resident) == 0);
    CHECK((resident & 1) == 1);  // the prefetch made page 0 present
    // Synchronous prefetch of the hole: EFAULT; asynchronous: best effort, 0.
    ibv_sge hole{va(page), static_cast<std::uint32_t>(page), odp->lkey};
    CHECK(vc->advise_mr(r.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, &hole, 1) == EFAULT);
    CHECK(vc->advise_mr(r.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &hole, 1) == 0);
    CHECK(vc->advise_mr(r.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, IBV_ADVISE_MR_FLAG_FLUSH, &hole, 1) == 0);
    // Outside the MR: EFAULT (only when synchronous).
    ibv_sge beyond{va(4 * page - 8), 16, odp->lkey};
    CHECK(vc->advise_mr(r.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, &beyond, 1) == EFAULT);
    CHECK(vc->advise_mr(r.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &beyond, 1) == 0);
    // uverbs' and rxe's input checks.
    CHECK(vc->advise_mr(r.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 2, &sge, 1) == EINVAL);  // unknown flag
    CHECK(vc->advise_mr(r.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 0) == EINVAL);  // no SGE
    ibv_advise_mr_advice bad_advice;
    const int three = 3;
    std::memcpy(&bad_advice, &three, sizeof three);
    CHECK(vc->advise_mr(r.pd, bad_advice, 0, &sge, 1) == EOPNOTSUPP);
    ibv_sge stranger{va(0), 8, odp->lkey + 1};
    CHECK(vc->advise_mr(r.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &stranger, 1) == EINVAL);
    ibv_pd* pd2 = sv::alloc_pd(r.ctx);
    REQUIRE(pd2 != nullptr);
    CHECK(vc->advise_mr(pd2, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1) == EINVAL);  // another PD's MR
    CHECK(sv::dealloc_pd(pd2) == 0);

    // ibv_rereg_mr: the rights may repeat ON_DEMAND, not drop it.
    CHECK(sv::rereg_mr(odp, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, IBV_ACCESS_LOCAL_WRITE) ==
          IBV_REREG_MR_ERR_CMD);
    CHECK(errno == EINVAL);
    CHECK(sv::rereg_mr(odp, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
                       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND) == 0);
    CHECK(sv::dereg_mr(odp) == 0);
    CHECK(r.firmware->counts().mrs == 0);
    munmap(base, 4 * page);
}

TEST_CASE("query_device_ex: the ODP capabilities", "[verbs][odp]") {
    Rig r;
    ibv_device_attr_ex a{};
    REQUIRE(sv::query_device_ex(r.ctx, nullptr, &a, sizeof a) == 0);
    CHECK(a.odp_caps.general_caps == (IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT));
    CHECK(a.odp_caps.per_transport_caps.rc_odp_caps ==
          (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
           IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV));
    CHECK(a.odp_caps.per_transport_caps.ud_odp_caps ==
          (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_SRQ_RECV));
    CHECK(a.xrc_odp_caps == 0);
}

TEST_CASE("check_user_pages: walks the mappings as pinning would", "[verbs][mr]") {
    const std::string maps =
        "00001000-00003000 rw-p 00000000 00:00 0\n"
        "00003000-00004000 r--p 00000000 00:00 0\n"
        "00005000-00006000 ---p 00000000 00:00 0\n"
        "00006000-00008000 rwxp 00000000 00:00 0          [stack]\n"
        "garbage line\n";
    auto chk = [&](std::uintptr_t a, std::size_t n, bool w) {
        return host::check_user_pages(maps, reinterpret_cast<const void*>(a), n, w);
    };
    CHECK(chk(0x1000, 0x2000, true) == 0);
    CHECK(chk(0x1000, 0x3000, false) == 0);       // across two mappings
    CHECK(chk(0x1000, 0x3000, true) == EFAULT);   // the second is read-only
    CHECK(chk(0x3800, 0x1000, false) == EFAULT);  // into the hole at 0x4000
    CHECK(chk(0x5000, 1, false) == EFAULT);       // PROT_NONE
    CHECK(chk(0x6000, 0x2000, true) == 0);
    CHECK(chk(0x7FFF, 2, false) == EFAULT);       // past the last mapping
    CHECK(chk(0x0, 1, false) == EFAULT);          // below the first
    CHECK(chk(0x1000, 0, true) == 0);             // nothing asked
    CHECK(chk(~std::uintptr_t{0}, 2, false) == EFAULT);  // wraps
}

TEST_CASE("reg_mr_iova: the IOVA at another offset within the page than the address is EINVAL", "[verbs][mr]") {
    // ib_uverbs_reg_mr refuses, before the driver, a start and an hca_va whose
    // offsets within a (host) page differ.
    Rig r;
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    std::vector<std::uint8_t> buf(3 * page);
    const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(buf.data());
    const std::uintptr_t off = a % page;
    const std::size_t cmds = r.rec->cmds.size();
    for (std::uint64_t iova : {std::uint64_t{0x7000} + off + 8, std::uint64_t{0x7000} + (off ^ 0x800),
                               std::uint64_t{1} << 40}) {
        if (iova % page == off) continue;  // the same offset after all
        errno = 0;
        CHECK(sv::reg_mr(r.pd, buf.data(), 100, iova, IBV_ACCESS_LOCAL_WRITE) == nullptr);
        CHECK(errno == EINVAL);
    }
    CHECK(r.rec->cmds.size() == cmds);  // refused before REG_MR
    // The same offset in another page, and a zero-based MR, are registered.
    ibv_mr* mr = sv::reg_mr(r.pd, buf.data(), 100, (std::uint64_t{1} << 40) + off, IBV_ACCESS_LOCAL_WRITE);
    REQUIRE(mr != nullptr);
    CHECK(sv::dereg_mr(mr) == 0);
    mr = sv::reg_mr(r.pd, buf.data(), 100, a, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ZERO_BASED);
    REQUIRE(mr != nullptr);
    CHECK(sv::dereg_mr(mr) == 0);
}

TEST_CASE("CQs: CREATE_CQ, poll_cq with the phase rule, batched CQ doorbell", "[verbs][cq]") {
    Rig r;
    ibv_cq* cq = sv::create_cq(r.ctx, 5, &r, nullptr, 0);
    REQUIRE(cq != nullptr);
    CHECK(cq->cqe == 7);
    const Cmd& c = r.rec->last(hw::CmdOpcode::CreateCq);
    CHECK(c.get(hw::cmd_create_cq_in::log_size) == 3);
    CHECK(c.get(hw::cmd_create_cq_in::domain_id) == r.rec->boot_domain());
    CHECK(c.get(hw::cmd_create_cq_in::base) == reinterpret_cast<std::uintptr_t>(sv::cq_view(cq).base));
    const std::uint32_t cqn = sv::cq_number(cq);
    ibv_qp* qp = make_qp(r, cq);
    ibv_wc wc[16];
    CHECK(cq->context->ops.poll_cq(cq, 4, wc) == 0);
    CHECK(r.rec->dbs.empty());  // nothing consumed: no doorbell

    // Three CQEs, polled in one call: one doorbell with ci 3.
    put_cqe(cq, 0, 11, qp->qp_num, true, 0);
    put_cqe(cq, 1, 12, qp->qp_num, false, 0, hw::WcStatus::Success, hw::WcOpcode::Recv,
            hw::wc_flags::kWithImm, 0x01020304, 77);
    put_cqe(cq, 2, 13, qp->qp_num, false, 1, hw::WcStatus::RemAccessErr, hw::WcOpcode::Recv);
    REQUIRE(cq->context->ops.poll_cq(cq, 16, wc) == 3);
    CHECK(wc[0].wr_id == 11);
    CHECK(wc[0].status == IBV_WC_SUCCESS);
    CHECK(wc[0].opcode == IBV_WC_SEND);
    CHECK(wc[0].qp_num == qp->qp_num);
    CHECK(wc[1].opcode == IBV_WC_RECV);
    CHECK(wc[1].byte_len == 77);
    CHECK(wc[1].wc_flags == IBV_WC_WITH_IMM);
    CHECK(wc[1].imm_data == htobe32(0x01020304));
    CHECK(wc[1].src_qp == 0x99);
    CHECK(wc[2].status == IBV_WC_REM_ACCESS_ERR);
    CHECK(wc[2].vendor_err == 3);
    REQUIRE(r.rec->dbs.size() == 1);
    CHECK(r.rec->dbs[0].kind == hw::DbKind::Cq);
    CHECK(r.rec->dbs[0].num == cqn);
    CHECK(r.rec->dbs[0].index == 3);
    CHECK(r.rec->dbs[0].cmd == 0);

    // Wrap: CQEs 3..12 cross the end of the 8-entry ring (phase flips).
    std::uint32_t got = 0;
    for (std::uint32_t p = 3; p < 13; ++p) {
        put_cqe(cq, p, 100 + p, qp->qp_num, true, 0);
        if (p == 6 || p == 12) {  // poll in two batches, never more than the ring holds
            const int n = cq->context->ops.poll_cq(cq, 16, wc);
            for (int i = 0; i < n; ++i) CHECK(wc[i].wr_id == 100 + 3 + got + static_cast<unsigned>(i));
            got += static_cast<std::uint32_t>(n);
        }
    }
    CHECK(got == 10);
    CHECK(r.rec->dbs.back().index == 13);
    // A stale entry of the previous pass (wrong phase) is not returned.
    CHECK(cq->context->ops.poll_cq(cq, 16, wc) == 0);

    // req_notify: arm-next and arm-solicited with the current ci.
    CHECK(cq->context->ops.req_notify_cq(cq, 0) == 0);
    CHECK(r.rec->dbs.back().cmd == static_cast<std::uint8_t>(hw::CqArm::Next));
    CHECK(r.rec->dbs.back().index == 13);
    CHECK(cq->context->ops.req_notify_cq(cq, 1) == 0);
    CHECK(r.rec->dbs.back().cmd == static_cast<std::uint8_t>(hw::CqArm::Solicited));

    CHECK(sv::destroy_cq(cq) == EBUSY);  // the QP still uses it
    CHECK(sv::destroy_qp(qp) == 0);
    CHECK(sv::resize_cq(cq, 30) == 0);
    CHECK(cq->cqe == 31);
    CHECK(sv::destroy_cq(cq) == 0);
    CHECK(r.firmware->counts().cqs == 0);
}

TEST_CASE("resize_cq below the CQEs waiting: EINVAL, as rxe_cq_chk_attr", "[verbs][cq]") {
    // rxe refuses a new size smaller than the CQEs now in the CQ (EINVAL),
    // comparing with the cqe asked for, not with the ring it would get.
    Rig r;
    ibv_cq* cq = sv::create_cq(r.ctx, 7, nullptr, nullptr, 0);
    REQUIRE(cq != nullptr);
    REQUIRE(cq->cqe == 7);
    for (std::uint32_t i = 0; i < 5; ++i) put_cqe(cq, i, 100 + i, 0x99, true, i);
    const std::size_t cmds = r.rec->cmds.size();
    CHECK(sv::resize_cq(cq, 4) == EINVAL);  // a ring of 8 would hold them; rxe still refuses
    CHECK(sv::resize_cq(cq, 2) == EINVAL);
    CHECK(r.rec->cmds.size() == cmds);  // refused before RESIZE_CQ
    CHECK(cq->cqe == 7);
    ibv_wc wc;
    REQUIRE(cq->context->ops.poll_cq(cq, 1, &wc) == 1);
    CHECK(wc.wr_id == 100);
    CHECK(sv::resize_cq(cq, 4) == 0);  // 4 waiting now
    CHECK(cq->cqe == 7);
    CHECK(sv::destroy_cq(cq) == 0);
}

TEST_CASE("modify_cq: MODIFY_CQ with the moderation, errno as libibverbs and mlx5 give it", "[verbs][cq]") {
    Rig r;
    ibv_cq* cq = sv::create_cq(r.ctx, 7, nullptr, nullptr, 0);
    REQUIRE(cq != nullptr);
    const std::uint32_t cqn = sv::cq_number(cq);
    verbs_context* v = verbs_get_ctx(r.ctx);
    REQUIRE(v->modify_cq == &sv::modify_cq);  // what libibverbs' ibv_modify_cq calls
    ibv_modify_cq_attr a{};
    a.attr_mask = IBV_CQ_ATTR_MODERATE;
    a.moderate.cq_count = 16;
    a.moderate.cq_period = 40;
    REQUIRE(v->modify_cq(cq, &a) == 0);
    const Cmd& c = r.rec->last(hw::CmdOpcode::ModifyCq);
    CHECK(c.get(hw::cmd_modify_cq_in::cqn) == cqn);
    CHECK(c.get(hw::cmd_modify_cq_in::attr_mask) == IBV_CQ_ATTR_MODERATE);
    CHECK(c.get(hw::cmd_modify_cq_in::cq_count) == 16);
    CHECK(c.get(hw::cmd_modify_cq_in::cq_period) == 40);
    const std::uint8_t* cqc = r.store->entry(fw::Table::Cqc, cqn);
    CHECK(hw::get(cqc, hw::cqc::kSize, hw::cqc::mod_en) == 1);
    CHECK(hw::get(cqc, hw::cqc::kSize, hw::cqc::mod_count) == 16);
    CHECK(hw::get(cqc, hw::cqc::kSize, hw::cqc::mod_period) == 40);

    // A period beyond MLX5_MAX_CQ_PERIOD: EINVAL from the firmware.
    a.moderate.cq_period = 4096;
    CHECK(v->modify_cq(cq, &a) == EINVAL);
    // An attribute libibverbs does not know: EINVAL before any command.
    const std::size_t cmds = r.rec->cmds.size();
    a.moderate.cq_period = 1;
    a.attr_mask = IBV_CQ_ATTR_RESERVED;
    CHECK(v->modify_cq(cq, &a) == EINVAL);
    a.attr_mask = IBV_CQ_ATTR_MODERATE | IBV_CQ_ATTR_RESERVED;
    CHECK(v->modify_cq(cq, &a) == EINVAL);
    CHECK(r.rec->cmds.size() == cmds);
    // No attribute: EINVAL (the kernel's check; here MODIFY_CQ's).
    a.attr_mask = 0;
    CHECK(v->modify_cq(cq, &a) == EINVAL);
    CHECK(v->modify_cq(cq, nullptr) == EINVAL);
    CHECK(hw::get(cqc, hw::cqc::kSize, hw::cqc::mod_count) == 16);  // unchanged
    CHECK(hw::get(cqc, hw::cqc::kSize, hw::cqc::mod_period) == 40);
    CHECK(sv::destroy_cq(cq) == 0);
}

TEST_CASE("QPs: CREATE_QP sizes, rc_pingpong's transitions, QUERY_QP", "[verbs][qp]") {
    Rig r;
    ibv_cq* cq = sv::create_cq(r.ctx, 16, nullptr, nullptr, 0);
    REQUIRE(cq != nullptr);
    ibv_qp_init_attr a{};
    a.send_cq = cq;
    a.recv_cq = cq;
    a.qp_type = IBV_QPT_RC;
    a.cap = {3, 100, 2, 3, 16};
    ibv_qp* qp = sv::create_qp(r.pd, &a);
    REQUIRE(qp != nullptr);
    CHECK(qp->state == IBV_QPS_RESET);
    CHECK(qp->qp_num >= hw::kFirstUserQpn);
    const Cmd& c = r.rec->last(hw::CmdOpcode::CreateQp);
    namespace q = hw::cmd_create_qp_in;
    CHECK(c.get(q::qp_type) == IBV_QPT_RC);
    CHECK(c.get(q::pdn) == sv::pd_number(r.pd));
    CHECK(c.get(q::send_cqn) == sv::cq_number(cq));
    CHECK(c.get(q::recv_cqn) == sv::cq_number(cq));
    CHECK(c.get(q::srq_en) == 0);
    CHECK(c.get(q::domain_id) == r.rec->boot_domain());
    CHECK(c.get(q::log_sq_size) == 2);
    CHECK(c.get(q::log_rq_size) == 7);
    CHECK(c.get(q::log_sq_stride) == 7);  // 32 + 48 + max(32, 32) = 112 -> 128
    CHECK(c.get(q::log_rq_stride) == 6);  // 16 + 3 * 16 = 64
    CHECK(c.get(q::max_send_sge) == 2);
    CHECK(c.get(q::max_recv_sge) == 3);
    CHECK(c.get(q::max_inline) == 128 - 80 - 4);  // the room the stride leaves
    CHECK(c.get(q::sq_base) == reinterpret_cast<std::uintptr_t>(sv::sq_view(qp).base));
    CHECK(c.get(q::rq_base) == reinterpret_cast<std::uintptr_t>(sv::rq_view(qp).base));
    CHECK(a.cap.max_send_wr == 4);
    CHECK(a.cap.max_recv_wr == 128);
    CHECK(a.cap.max_inline_data == 44);

    connect_rc(r, qp);
    ibv_qp_attr qa{};
    ibv_qp_init_attr qi{};
    REQUIRE(sv::query_qp(qp, &qa, IBV_QP_CAP, &qi) == 0);
    CHECK(qa.qp_state == IBV_QPS_RTS);
    CHECK(qa.path_mtu == IBV_MTU_1024);
    CHECK(qa.sq_psn == 0x456);
    CHECK(qa.rq_psn == 0x123);
    CHECK(qa.dest_qp_num == qp->qp_num);
    CHECK(qa.timeout == 14);
    CHECK(qa.retry_cnt == 7);
    CHECK(qa.rnr_retry == 7);
    CHECK(qa.ah_attr.is_global == 1);
    CHECK(qa.ah_attr.grh.sgid_index == 1);
    CHECK(qa.cap.max_send_wr == 4);
    CHECK(qi.cap.max_inline_data == 44);
    CHECK(qi.send_cq == cq);

    // An illegal transition (RTS -> INIT) is EINVAL and changes nothing.
    ibv_qp_attr bad{};
    bad.qp_state = IBV_QPS_INIT;
    CHECK(sv::modify_qp(qp, &bad, IBV_QP_STATE) == EINVAL);
    CHECK(qp->state == IBV_QPS_RTS);
    // To RESET: driver indices go back to 0.
    bad.qp_state = IBV_QPS_RESET;
    CHECK(sv::modify_qp(qp, &bad, IBV_QP_STATE) == 0);
    CHECK(sv::destroy_qp(qp) == 0);
    CHECK(r.rec->last(hw::CmdOpcode::DestroyQp).get(hw::cmd_handle::handle) != 0);
    CHECK(sv::destroy_cq(cq) == 0);
    CHECK(r.firmware->counts().qps == 0);
}

TEST_CASE("modify_qp: values wider than their QP_ATTR field are refused or kept as rxe does", "[verbs][qp]") {
    // rxe (rxe_qp_chk_attr, rxe_qp_from_attr): timeout > 31 is EINVAL; PSNs
    // keep their low 24 bits; retry_cnt, rnr_retry and min_rnr_timer are
    // stored as given. None of them may reach the device as 0 because the
    // QP_ATTR field is narrower than the verb's u8 or u32.
    Rig r;
    ibv_cq* cq = sv::create_cq(r.ctx, 16, nullptr, nullptr, 0);
    REQUIRE(cq != nullptr);
    ibv_qp* qp = make_qp(r, cq);
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    REQUIRE(sv::modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
    ibv_gid gid{};
    REQUIRE(sv::query_gid(r.ctx, 1, 1, &gid) == 0);
    std::memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = qp->qp_num;
    a.rq_psn = 0x1abcdef;  // bit 24 set: rxe keeps 0xabcdef
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 32 + 12;  // rxe's RNR NAK carries the low 5 bits: 12
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.hop_limit = 1;
    a.ah_attr.grh.dgid = gid;
    a.ah_attr.grh.sgid_index = 1;
    a.ah_attr.port_num = 1;
    const int rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    REQUIRE(sv::modify_qp(qp, &a, rtr) == 0);
    namespace q = hw::qp_attr;
    {
        const Cmd& m = r.rec->last(hw::CmdOpcode::ModifyQp);
        CHECK(m.get(q::rq_psn) == 0xabcdef);
        CHECK(m.get(q::min_rnr_timer) == 12);
    }
    std::memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 32;  // rxe: EINVAL, and nothing reaches the device
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = 0xff000456;
    a.max_rd_atomic = 1;
    const int rts = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                    IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
    const std::size_t cmds = r.rec->cmds.size();
    CHECK(sv::modify_qp(qp, &a, rts) == EINVAL);
    CHECK(r.rec->cmds.size() == cmds);
    CHECK(qp->state == IBV_QPS_RTR);
    a.timeout = 255;
    CHECK(sv::modify_qp(qp, &a, rts) == EINVAL);
    // retry_cnt and rnr_retry above 7 (rxe counts them down from the u8):
    // the 3-bit fields hold 7 at most. rnr_retry 7 means "retry for ever",
    // which is where rxe ends too (its completer stops counting at 7);
    // retry_cnt 7 is the most retries the device can make.
    a.timeout = 31;
    a.retry_cnt = 8;
    a.rnr_retry = 200;
    REQUIRE(sv::modify_qp(qp, &a, rts) == 0);
    {
        const Cmd& m = r.rec->last(hw::CmdOpcode::ModifyQp);
        CHECK(m.get(q::timeout) == 31);
        CHECK(m.get(q::retry_cnt) == 7);
        CHECK(m.get(q::rnr_retry) == 7);
        CHECK(m.get(q::sq_psn) == 0x000456);
    }
    ibv_qp_attr qa{};
    ibv_qp_init_attr qi{};
    REQUIRE(sv::query_qp(qp, &qa, 0, &qi) == 0);
    CHECK(qa.qp_state == IBV_QPS_RTS);
    CHECK(qa.sq_psn == 0x456);
    CHECK(qa.rq_psn == 0xabcdef);
    CHECK(qa.timeout == 31);
    CHECK(qa.retry_cnt == 7);
    CHECK(qa.rnr_retry == 7);
    CHECK(qa.min_rnr_timer == 12);
    // A state outside the enum does not fit the 4-bit field: EINVAL (rxe's
    // ib_modify_qp_is_ok refuses it), never a move to RESET.
    std::memset(&a, 0, sizeof a);
    // Stored as a C caller stores it: the int's bytes, not a C++ enum cast.
    c_store(a.qp_state, 99);
    CHECK(sv::modify_qp(qp, &a, IBV_QP_STATE) == EINVAL);
    c_store(a.qp_state, -1);
    CHECK(sv::modify_qp(qp, &a, IBV_QP_STATE) == EINVAL);
    a.qp_state = IBV_QPS_RTS;
    c_store(a.path_mtu, 200);
    CHECK(sv::modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PATH_MTU) == EINVAL);
    CHECK(qp->state == IBV_QPS_RTS);
    CHECK(sv::destroy_qp(qp) == 0);
    CHECK(sv::destroy_cq(cq) == 0);
}

TEST_CASE("post_send below RTS: EINVAL, no WQE, no doorbell", "[verbs][wqe]") {
    // IB spec 10.3.1 (and rxe): send WRs are an immediate error in RESET,
    // INIT and RTR. The engine ignores SQ doorbells in RESET and INIT, so a
    // WQE accepted there would run, stale, after the next doorbell.
    Rig r;
    ibv_cq* cq = sv::create_cq(r.ctx, 4, nullptr, nullptr, 0);
    ibv_qp* qp = make_qp(r, cq, IBV_QPT_RC, 4);
    ibv_sge sge{0x1000, 8, 1};
    ibv_send_wr w{};
    w.opcode = IBV_WR_SEND;
    w.sg_list = &sge;
    w.num_sge = 1;
    ibv_send_wr* bad = nullptr;
    const std::size_t dbs = r.rec->dbs.size();
    CHECK(qp->context->ops.post_send(qp, &w, &bad) == EINVAL);
    CHECK(bad == &w);
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    REQUIRE(sv::modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
    bad = nullptr;
    CHECK(qp->context->ops.post_send(qp, &w, &bad) == EINVAL);
    CHECK(bad == &w);
    ibv_qp_ex* x = sv::qp_to_qp_ex(qp);
    REQUIRE(x != nullptr);
    ibv_wr_start(x);
    ibv_wr_send(x);
    ibv_wr_set_sge(x, 1, 0x1000, 8);
    CHECK(ibv_wr_complete(x) == EINVAL);
    CHECK(r.rec->dbs.size() == dbs);
    CHECK(sv::destroy_qp(qp) == 0);
    CHECK(sv::destroy_cq(cq) == 0);
}

// rdma-core 44's validate_send_wr refuses an atomic whose remote address is
// not 8-byte aligned, or whose SGEs hold fewer than 8 bytes: EINVAL at
// ibv_post_send, *bad_wr the atomic, nothing of it posted, the WRs before
// it posted. (simnic used to post the misaligned one and fail the QP.)
// rxe's wr_atomic_* check neither: ibv_wr_complete answers 0, as here.
TEST_CASE("post_send: an atomic at a misaligned address or with fewer than 8 bytes is EINVAL, as rxe",
          "[verbs][wqe]") {
    Rig r;
    ibv_cq* cq = sv::create_cq(r.ctx, 16, nullptr, nullptr, 0);
    ibv_qp* qp = make_qp(r, cq, IBV_QPT_RC, 16);  // room for every WQE posted here
    connect_rc(r, qp);
    ibv_sge asge{0x3000, 8, 0x99};
    ibv_send_wr ok{};
    ok.wr_id = 1;
    ok.opcode = IBV_WR_SEND;
    ibv_send_wr at{};
    at.wr_id = 2;
    at.sg_list = &asge;
    at.num_sge = 1;
    at.wr.atomic.rkey = 7;
    ibv_send_wr* bad = nullptr;
    for (const ibv_wr_opcode op : {IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD}) {
        for (const std::uint64_t va : {0xBEEF0001ull, 0xBEEF0004ull, 0xBEEF0007ull}) {
            CAPTURE(op, va);
            const std::size_t dbs = r.rec->dbs.size();
            at.opcode = op;
            at.wr.atomic.remote_addr = va;
            ok.next = &at;
            bad = nullptr;
            CHECK(qp->context->ops.post_send(qp, &ok, &bad) == EINVAL);
            CHECK(bad == &at);
            // The SEND before it went alone.
            REQUIRE(r.rec->dbs.size() == dbs + 1);
            const std::uint32_t pi = r.rec->dbs.back().index;
            const sv::QueueView sq = sv::sq_view(qp);
            CHECK(static_cast<int>(sent(sq, (pi - 1) % sq.entries).opcode) == IBV_WR_SEND);
        }
        // Fewer than 8 bytes for the result.
        at.wr.atomic.remote_addr = 0xBEEF0008;
        asge.length = 4;
        const std::size_t dbs = r.rec->dbs.size();
        CHECK(qp->context->ops.post_send(qp, &at, &bad) == EINVAL);
        CHECK(bad == &at);
        CHECK(r.rec->dbs.size() == dbs);
        asge.length = 8;
        // Aligned, 8 bytes: posted.
        CHECK(qp->context->ops.post_send(qp, &at, &bad) == 0);
        CHECK(r.rec->dbs.size() == dbs + 1);
        const sv::QueueView sq = sv::sq_view(qp);
        const hw::SendWqe posted = sent(sq, (r.rec->dbs.back().index - 1) % sq.entries);
        CHECK(static_cast<int>(posted.opcode) == static_cast<int>(op));
        CHECK(posted.raddr.remote_va == 0xBEEF0008);
    }
    CHECK(sv::destroy_qp(qp) == 0);

    // ibv_wr_atomic_*: rxe's wr_atomic_cmp_swp/fetch_add check nothing, so
    // ibv_wr_complete answers 0 and the WQE is posted (the responder's NAK
    // fails it on rxe, the engine's WQE check here: "Differences found" 9).
    ibv_qp_init_attr_ex a = qp_ex_attr(r, cq, IBV_QPT_RC, IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP, {4, 2, 1, 1, 0});
    ibv_qp* xq = verbs_get_ctx(r.ctx)->create_qp_ex(r.ctx, &a);
    REQUIRE(xq != nullptr);
    connect_rc(r, xq);
    ibv_qp_ex* x = sv::qp_to_qp_ex(xq);
    REQUIRE(x != nullptr);
    const std::size_t dbs = r.rec->dbs.size();
    ibv_wr_start(x);
    ibv_wr_atomic_cmp_swp(x, 7, 0xBEEF0004, 1, 2);
    ibv_wr_set_sge(x, 0x99, 0x3000, 8);
    CHECK(ibv_wr_complete(x) == 0);
    CHECK(r.rec->dbs.size() == dbs + 1);
    CHECK(sv::destroy_qp(xq) == 0);
    CHECK(sv::destroy_cq(cq) == 0);
}

TEST_CASE("post_send: WQE bytes per hw-spec 6.2, full ring, one doorbell", "[verbs][wqe]") {
    Rig r;
    ibv_cq* cq = sv::create_cq(r.ctx, 16, nullptr, nullptr, 0);
    ibv_qp* qp = make_qp(r, cq, IBV_QPT_RC, 4);
    connect_rc(r, qp);
    const sv::QueueView sq = sv::sq_view(qp);
    std::uint8_t data[40];
    for (int i = 0; i < 40; ++i) data[i] = static_cast<std::uint8_t>(i);
    ibv_sge sge[2] = {{0x1000, 100, 0x1234}, {0x2000, 50, 0x5678}};
    ibv_send_wr w[3]{};
    w[0].wr_id = 1;
    w[0].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    w[0].send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
    w[0].imm_data = htobe32(0xAABBCCDD);
    w[0].sg_list = sge;
    w[0].num_sge = 2;
    w[0].wr.rdma.remote_addr = 0xDEAD0000;
    w[0].wr.rdma.rkey = 0x4242;
    w[0].next = &w[1];
    ibv_sge isge{reinterpret_cast<std::uintptr_t>(data), 40, 0};
    w[1].wr_id = 2;
    w[1].opcode = IBV_WR_SEND;
    w[1].send_flags = IBV_SEND_INLINE | IBV_SEND_FENCE;
    w[1].sg_list = &isge;
    w[1].num_sge = 1;
    w[1].next = &w[2];
    ibv_sge asge{0x3000, 8, 0x99};
    w[2].wr_id = 3;
    w[2].opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
    w[2].sg_list = &asge;
    w[2].num_sge = 1;
    w[2].wr.atomic.remote_addr = 0xBEEF0008;
    w[2].wr.atomic.rkey = 7;
    w[2].wr.atomic.compare_add = 5;
    w[2].wr.atomic.swap = 6;
    ibv_send_wr* bad = nullptr;
    REQUIRE(qp->context->ops.post_send(qp, &w[0], &bad) == 0);
    REQUIRE(r.rec->dbs.size() == 1);
    CHECK(r.rec->dbs[0].kind == hw::DbKind::Sq);
    CHECK(r.rec->dbs[0].num == qp->qp_num);
    CHECK(r.rec->dbs[0].index == 3);

    // Each WQE decodes (so CTRL.total_len is the data length the value
    // reports) and carries what the work request said.
    const hw::SendWqe s0 = sent(sq, 0);
    CHECK(static_cast<int>(s0.opcode) == IBV_WR_RDMA_WRITE_WITH_IMM);
    CHECK(s0.signaled);
    CHECK(s0.solicited);
    CHECK_FALSE(s0.fence);
    CHECK_FALSE(s0.inline_data);
    CHECK(s0.num_sge == 2);
    CHECK(s0.imm_inv == 0xAABBCCDD);  // host order (6.2)
    CHECK(s0.wr_id == 1);
    CHECK(s0.data_len() == 150);
    CHECK(s0.raddr.remote_va == 0xDEAD0000);
    CHECK(s0.raddr.rkey == 0x4242);
    CHECK(s0.sge[0].addr == 0x1000);
    CHECK(s0.sge[0].length == 100);
    CHECK(s0.sge[0].lkey == 0x1234);
    CHECK(s0.sge[1].lkey == 0x5678);

    const hw::SendWqe s1 = sent(sq, 1);
    CHECK(static_cast<int>(s1.opcode) == IBV_WR_SEND);
    CHECK(s1.inline_data);
    CHECK(s1.fence);
    CHECK_FALSE(s1.signaled);
    CHECK(s1.num_sge == 0);
    CHECK(s1.data_len() == 40);
    CHECK(s1.inline_len == 40);
    CHECK(std::memcmp(s1.inline_bytes, data, 40) == 0);

    const hw::SendWqe s2 = sent(sq, 2);
    CHECK(static_cast<int>(s2.opcode) == IBV_WR_ATOMIC_CMP_AND_SWP);
    CHECK(s2.raddr.remote_va == 0xBEEF0008);
    CHECK(s2.atomic.compare_add == 5);
    CHECK(s2.atomic.swap == 6);
    CHECK(s2.sge[0].length == 8);
    CHECK(s2.sge[0].lkey == 0x99);

    // Ring of 4: one more fits, the next is ENOMEM with bad_wr, and only
    // the WQEs that fit are rung.
    ibv_send_wr two[2]{};
    two[0].opcode = IBV_WR_SEND;
    two[0].next = &two[1];
    two[1].opcode = IBV_WR_SEND;
    CHECK(qp->context->ops.post_send(qp, &two[0], &bad) == ENOMEM);
    CHECK(bad == &two[1]);
    CHECK(r.rec->dbs.back().index == 4);
    // An invalid opcode for RC is EINVAL.
    ibv_send_wr inv{};
    inv.opcode = IBV_WR_TSO;
    CHECK(qp->context->ops.post_send(qp, &inv, &bad) == ENOMEM);  // still full
    // A signaled CQE for WQE 2 frees slots 0..2 (unsignaled ones retire with it).
    put_cqe(cq, 0, 3, qp->qp_num, true, 2);
    ibv_wc wc;
    REQUIRE(cq->context->ops.poll_cq(cq, 1, &wc) == 1);
    CHECK(qp->context->ops.post_send(qp, &inv, &bad) == EINVAL);
    CHECK(bad == &inv);
    // Nor is an opcode outside ibv_wr_opcode, as a C caller may store it.
    ibv_send_wr junk{};
    c_store(junk.opcode, 200);
    CHECK(qp->context->ops.post_send(qp, &junk, &bad) == EINVAL);
    c_store(junk.opcode, -3);
    CHECK(qp->context->ops.post_send(qp, &junk, &bad) == EINVAL);
    CHECK(bad == &junk);
    ibv_send_wr ok{};
    ok.opcode = IBV_WR_SEND;
    ok.wr_id = 77;
    CHECK(qp->context->ops.post_send(qp, &ok, &bad) == 0);
    CHECK(r.rec->dbs.back().index == 5);
    CHECK(sent(sq, 0).wr_id == 77);  // slot 4 & 3 = 0

    CHECK(sv::destroy_qp(qp) == 0);
    CHECK(sv::destroy_cq(cq) == 0);
}

TEST_CASE("post_recv and SRQs: RECV_WQE bytes, doorbells", "[verbs][wqe][srq]") {
    Rig r;
    ibv_cq* cq = sv::create_cq(r.ctx, 16, nullptr, nullptr, 0);
    ibv_qp* qp = make_qp(r, cq, IBV_QPT_RC, 4, 2);
    const sv::QueueView rq = sv::rq_view(qp);
    ibv_sge sge[2] = {{0x1000, 4096, 0x11}, {0x9000, 10, 0x22}};
    ibv_recv_wr w[3]{};
    for (int i = 0; i < 3; ++i) {
        w[i].wr_id = 50 + static_cast<unsigned>(i);
        w[i].sg_list = sge;
        w[i].num_sge = 2;
        w[i].next = i < 2 ? &w[i + 1] : nullptr;
    }
    ibv_recv_wr* bad = nullptr;
    // In RESET a receive WR is an immediate error (IBA C10-97.2.1), as in
    // rdma-core's rxe_post_recv: EINVAL, nothing queued, no doorbell. (This
    // case used to post in RESET and expect success, which rxe refuses.)
    const std::size_t dbs = r.rec->dbs.size();
    CHECK(qp->context->ops.post_recv(qp, &w[0], &bad) == EINVAL);
    CHECK(bad == &w[0]);
    CHECK(r.rec->dbs.size() == dbs);
    ibv_qp_attr ia{};
    ia.qp_state = IBV_QPS_INIT;
    ia.port_num = 1;
    REQUIRE(sv::modify_qp(qp, &ia, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
    CHECK(qp->context->ops.post_recv(qp, &w[0], &bad) == ENOMEM);  // RQ of 2
    CHECK(bad == &w[2]);
    REQUIRE(!r.rec->dbs.empty());
    CHECK(r.rec->dbs.back().kind == hw::DbKind::Rq);
    CHECK(r.rec->dbs.back().index == 2);
    const hw::RecvWqe s1 = received(rq, 1);
    CHECK(s1.wr_id == 51);
    CHECK(s1.num_sge == 2);
    CHECK(s1.sge[0].addr == 0x1000);
    CHECK(s1.sge[0].length == 4096);
    CHECK(s1.sge[1].lkey == 0x22);
    w[0].num_sge = 3;  // more than max_recv_sge (2)
    w[0].next = nullptr;
    put_cqe(cq, 0, 50, qp->qp_num, false, 0, hw::WcStatus::Success, hw::WcOpcode::Recv);
    ibv_wc wc;
    REQUIRE(cq->context->ops.poll_cq(cq, 1, &wc) == 1);
    CHECK(qp->context->ops.post_recv(qp, &w[0], &bad) == EINVAL);

    // SRQ
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 5;
    sa.attr.max_sge = 1;
    sa.attr.srq_limit = 2;
    ibv_srq* srq = sv::create_srq(r.pd, &sa);
    REQUIRE(srq != nullptr);
    CHECK(sa.attr.max_wr == 8);
    const Cmd& c = r.rec->last(hw::CmdOpcode::CreateSrq);
    CHECK(c.get(hw::cmd_create_srq_in::log_size) == 3);
    CHECK(c.get(hw::cmd_create_srq_in::log_stride) == 5);
    CHECK(c.get(hw::cmd_create_srq_in::max_sge) == 1);
    CHECK(c.get(hw::cmd_create_srq_in::srq_limit) == 2);
    ibv_qp* sqp = make_qp(r, cq, IBV_QPT_RC, 4, 0, srq);
    CHECK(r.rec->last(hw::CmdOpcode::CreateQp).get(hw::cmd_create_qp_in::srq_en) == 1);
    ibv_recv_wr one{};
    one.wr_id = 9;
    one.sg_list = sge;
    one.num_sge = 1;
    CHECK(srq->context->ops.post_srq_recv(srq, &one, &bad) == 0);
    CHECK(r.rec->dbs.back().kind == hw::DbKind::Srq);
    CHECK(r.rec->dbs.back().index == 1);
    CHECK(received(sv::srq_view(srq), 0).wr_id == 9);
    CHECK(qp->context->ops.post_recv(sqp, &one, &bad) == EINVAL);  // QP uses the SRQ
    ibv_srq_attr q{};
    REQUIRE(sv::query_srq(srq, &q) == 0);
    CHECK(q.max_wr == 8);
    CHECK(q.srq_limit == 2);
    q.srq_limit = 3;
    CHECK(sv::modify_srq(srq, &q, IBV_SRQ_LIMIT) == 0);
    CHECK(sv::destroy_srq(srq) == EBUSY);
    CHECK(sv::destroy_qp(sqp) == 0);
    CHECK(sv::destroy_srq(srq) == 0);
    CHECK(sv::destroy_qp(qp) == 0);
    CHECK(sv::destroy_cq(cq) == 0);
}

// ibv_modify_srq with IBV_SRQ_MAX_WR resizes the SRQ as rxe does (its
// provider remaps the queue the kernel resized): the WQEs posted and not
// yet taken stay, in order, the new size takes WQEs at once; max_wr 0 or
// above max_srq_wr, below the armed limit, or too small for the WQEs
// queued is EINVAL and leaves the SRQ as it was. (Before the resize was
// built every MAX_WR answered EOPNOTSUPP.)
TEST_CASE("modify_srq MAX_WR: resize keeps the WQEs in order, EINVAL as rxe", "[verbs][wqe][srq]") {
    Rig r;
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 8;
    sa.attr.max_sge = 1;
    ibv_srq* srq = sv::create_srq(r.pd, &sa);
    REQUIRE(srq != nullptr);
    ibv_sge sge{0x1000, 64, 0x11};
    ibv_recv_wr w{};
    w.sg_list = &sge;
    w.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    auto post = [&](std::uint64_t id) {
        w.wr_id = id;
        return srq->context->ops.post_srq_recv(srq, &w, &bad);
    };
    for (std::uint64_t i = 0; i < 6; ++i) REQUIRE(post(100 + i) == 0);
    // The device has taken the doorbell and the first two WQEs (this rig
    // has no engine: its SRQC is written as the engine would).
    std::uint8_t* srqc = r.store->entry(hw::Table::Srqc, srq->handle);
    REQUIRE(hw::set(srqc, hw::srqc::kSize, hw::srqc::pi, 6));
    REQUIRE(hw::set(srqc, hw::srqc::kSize, hw::srqc::ci, 2));
    const std::uint64_t old_base = hw::get(srqc, hw::srqc::kSize, hw::srqc::base);

    const auto cap = r.firmware->cap_block();
    const std::uint32_t max_srq_wr =
        static_cast<std::uint32_t>(hw::get(cap.data(), cap.size(), hw::cap_block::max_srq_wr));
    ibv_srq_attr a{};
    a.max_wr = 0;
    CHECK(sv::modify_srq(srq, &a, IBV_SRQ_MAX_WR) == EINVAL);
    a.max_wr = max_srq_wr + 1;
    CHECK(sv::modify_srq(srq, &a, IBV_SRQ_MAX_WR) == EINVAL);
    a.max_wr = 2;  // two entries do not hold the four WQEs queued (rxe's resize_finish)
    CHECK(sv::modify_srq(srq, &a, IBV_SRQ_MAX_WR) == EINVAL);
    a.srq_limit = 5;
    REQUIRE(sv::modify_srq(srq, &a, IBV_SRQ_LIMIT) == 0);
    a.max_wr = 4;  // below the armed limit 5
    CHECK(sv::modify_srq(srq, &a, IBV_SRQ_MAX_WR) == EINVAL);
    ibv_srq_attr q{};
    REQUIRE(sv::query_srq(srq, &q) == 0);
    CHECK(q.max_wr == 8);
    CHECK(sv::srq_view(srq).entries == 8);
    CHECK(hw::get(srqc, hw::srqc::kSize, hw::srqc::base) == old_base);

    // Grow to 12 (16 entries) and disarm the limit in the same call.
    a.max_wr = 12;
    a.srq_limit = 0;
    REQUIRE(sv::modify_srq(srq, &a, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT) == 0);
    const Cmd& m = r.rec->last(hw::CmdOpcode::ModifySrq);
    CHECK(m.get(hw::cmd_modify_srq_in::max_wr) == 12);
    CHECK(m.get(hw::cmd_modify_srq_in::log_size) == 4);
    const sv::QueueView v = sv::srq_view(srq);
    CHECK(v.entries == 16);
    CHECK(reinterpret_cast<std::uintptr_t>(v.base) == m.get(hw::cmd_modify_srq_in::base));
    CHECK(hw::get(srqc, hw::srqc::kSize, hw::srqc::base) == reinterpret_cast<std::uintptr_t>(v.base));
    CHECK(hw::get(srqc, hw::srqc::kSize, hw::srqc::log_size) == 4);
    CHECK(hw::get(srqc, hw::srqc::kSize, hw::srqc::ci) == 2);
    // The WQEs the device has yet to take, at their indices, in order.
    for (std::uint32_t i = 2; i < 6; ++i) CHECK(received(v, i).wr_id == 100 + i);
    REQUIRE(sv::query_srq(srq, &q) == 0);
    CHECK(q.max_wr == 16);
    CHECK(q.srq_limit == 0);
    // The new capacity takes WQEs: 10 more (16 posted, none completed
    // here), the next ENOMEM; the old ring refused the third.
    for (std::uint64_t i = 6; i < 16; ++i) CHECK(post(100 + i) == 0);
    CHECK(post(116) == ENOMEM);
    CHECK(r.rec->dbs.back().kind == hw::DbKind::Srq);
    CHECK(r.rec->dbs.back().index == 16);
    for (std::uint32_t i = 6; i < 16; ++i) CHECK(received(v, i).wr_id == 100 + i);

    // Shrink across the ring's end: the device has taken up to 14, so two
    // WQEs queued (14, 15) move to slots 2 and 3 of a 4-entry ring.
    REQUIRE(hw::set(srqc, hw::srqc::kSize, hw::srqc::pi, 16));
    REQUIRE(hw::set(srqc, hw::srqc::kSize, hw::srqc::ci, 14));
    a.max_wr = 4;
    REQUIRE(sv::modify_srq(srq, &a, IBV_SRQ_MAX_WR) == 0);
    const sv::QueueView s4 = sv::srq_view(srq);
    CHECK(s4.entries == 4);
    CHECK(received(s4, 2).wr_id == 114);
    CHECK(received(s4, 3).wr_id == 115);
    CHECK(sv::destroy_srq(srq) == 0);
}

// ibv_create_srq_ex with more of ibv_srq_init_attr_ex than PD and TYPE
// reaches the provider (verbs.h); rdma-core 44's rxe passes it on to
// ibv_cmd_create_srq_ex: a basic SRQ is created whatever CQ is named (the
// CQ is not sent to the kernel), a comp_mask bit beyond TM EOPNOTSUPP, no
// PD EINVAL, XRC/TM without what they need EINVAL, XRC/TM otherwise
// EOPNOTSUPP (kernel rxe: basic SRQs only). (simnic answered EOPNOTSUPP
// for all before.)
TEST_CASE("create_srq_ex: a basic SRQ with IBV_SRQ_INIT_ATTR_CQ is created, other types refused as rxe",
          "[verbs][srq]") {
    Rig r;
    ibv_cq* cq = sv::create_cq(r.ctx, 16, nullptr, nullptr, 0);
    REQUIRE(cq != nullptr);
    int token = 0;
    ibv_srq_init_attr_ex x{};
    x.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_CQ;
    x.srq_type = IBV_SRQT_BASIC;
    x.pd = r.pd;
    x.cq = cq;
    x.srq_context = &token;
    x.attr.max_wr = 5;
    x.attr.max_sge = 2;
    x.attr.srq_limit = 1;
    ibv_srq* srq = sv::create_srq_ex(r.ctx, &x);
    REQUIRE(srq != nullptr);
    CHECK(x.attr.max_wr == 8);
    CHECK(x.attr.max_sge == 2);
    CHECK(srq->srq_context == &token);
    CHECK(srq->pd == r.pd);
    CHECK(r.rec->last(hw::CmdOpcode::CreateSrq).get(hw::cmd_create_srq_in::srq_limit) == 1);
    ibv_srq_attr q{};
    REQUIRE(sv::query_srq(srq, &q) == 0);
    CHECK(q.max_wr == 8);
    CHECK(q.srq_limit == 1);
    ibv_sge sge{0x1000, 64, 0x11};
    ibv_recv_wr w{};
    w.wr_id = 77;
    w.sg_list = &sge;
    w.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    CHECK(srq->context->ops.post_srq_recv(srq, &w, &bad) == 0);
    CHECK(received(sv::srq_view(srq), 0).wr_id == 77);
    // Without the TYPE bit the type is basic, as libibverbs reads it.
    ibv_srq_init_attr_ex y = x;
    y.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ;
    y.srq_type = static_cast<ibv_srq_type>(IBV_SRQT_XRC);
    ibv_srq* srq2 = sv::create_srq_ex(r.ctx, &y);
    REQUIRE(srq2 != nullptr);
    CHECK(sv::destroy_srq(srq2) == 0);

    auto refused = [&](ibv_srq_init_attr_ex a) {
        errno = 0;
        ibv_srq* s = sv::create_srq_ex(r.ctx, &a);
        if (s != nullptr) sv::destroy_srq(s);
        return s == nullptr ? errno : 0;
    };
    ibv_srq_init_attr_ex e = x;
    e.comp_mask |= IBV_SRQ_INIT_ATTR_RESERVED;
    CHECK(refused(e) == EOPNOTSUPP);
    e = x;
    e.comp_mask &= ~std::uint32_t{IBV_SRQ_INIT_ATTR_PD};
    CHECK(refused(e) == EINVAL);
    e = x;
    e.srq_type = IBV_SRQT_XRC;  // no XRCD
    CHECK(refused(e) == EINVAL);
    e.comp_mask |= IBV_SRQ_INIT_ATTR_XRCD;
    CHECK(refused(e) == EOPNOTSUPP);
    e = x;
    e.srq_type = IBV_SRQT_TM;  // no TM attributes
    CHECK(refused(e) == EINVAL);
    e.comp_mask |= IBV_SRQ_INIT_ATTR_TM;
    e.tm_cap.max_num_tags = 4;
    CHECK(refused(e) == EOPNOTSUPP);
    e = x;
    e.attr.max_wr = 0;  // the basic SRQ's own checks, as ibv_create_srq's
    CHECK(refused(e) == EINVAL);
    CHECK(sv::destroy_srq(srq) == 0);
    CHECK(sv::destroy_cq(cq) == 0);
}

TEST_CASE("completion channels: COMPLETION EQEs wake the channel fd", "[verbs][events]") {
    Rig r;
    ibv_comp_channel* ch = sv::create_comp_channel(r.ctx);
    REQUIRE(ch != nullptr);
    CHECK(ch->fd >= 0);
    int token = 0;
    ibv_cq* cq = sv::create_cq(r.ctx, 4, &token, ch, 0);
    REQUIRE(cq != nullptr);
    CHECK(sv::destroy_comp_channel(ch) == EBUSY);
    CHECK_FALSE(readable(ch->fd, 0));
    r.post_eqe(hw::EventType::Completion, sv::cq_number(cq));
    REQUIRE(readable(ch->fd, 2000));
    ibv_cq* got = nullptr;
    void* gctx = nullptr;
    REQUIRE(sv::get_cq_event(ch, &got, &gctx) == 0);
    CHECK(got == cq);
    CHECK(gctx == &token);
    CHECK_FALSE(readable(ch->fd, 0));
    sv::ack_cq_events(cq, 1);
    CHECK(cq->comp_events_completed == 1);
    // A blocked ibv_get_cq_event wakes when the event arrives.
    std::thread t([&r, cq] {
        ::usleep(50 * 1000);
        r.post_eqe(hw::EventType::Completion, sv::cq_number(cq));
    });
    REQUIRE(sv::get_cq_event(ch, &got, &gctx) == 0);
    t.join();
    CHECK(got == cq);
    sv::ack_cq_events(cq, 1);
    // Events of a destroyed CQ are dropped.
    r.post_eqe(hw::EventType::Completion, sv::cq_number(cq));
    REQUIRE(readable(ch->fd, 2000));
    CHECK(sv::destroy_cq(cq) == 0);
    CHECK_FALSE(readable(ch->fd, 0));
    CHECK(sv::destroy_comp_channel(ch) == 0);
}

// ibv_get_cq_event takes the EQ itself and hands the first event for its
// channel straight to the caller: what the application sees must not change
// (order across CQs, O_NONBLOCK, the fd readable exactly while events wait).
TEST_CASE("completion channels: order, O_NONBLOCK and the fd while a caller takes the EQ", "[verbs][events]") {
    Rig r;
    ibv_comp_channel* ch = sv::create_comp_channel(r.ctx);
    REQUIRE(ch != nullptr);
    int t1 = 1, t2 = 2;
    ibv_cq* cq1 = sv::create_cq(r.ctx, 4, &t1, ch, 0);
    ibv_cq* cq2 = sv::create_cq(r.ctx, 4, &t2, ch, 0);
    REQUIRE(cq1 != nullptr);
    REQUIRE(cq2 != nullptr);
    const int fl = ::fcntl(ch->fd, F_GETFL);
    REQUIRE(::fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK) == 0);
    ibv_cq* got = nullptr;
    void* gctx = nullptr;
    errno = 0;
    CHECK(sv::get_cq_event(ch, &got, &gctx) == -1);
    CHECK(errno == EAGAIN);
    // Two events, one per CQ: both come out, in EQ order, whether the
    // event thread queued them or the call took them from the EQ.
    r.post_eqe(hw::EventType::Completion, sv::cq_number(cq1));
    r.post_eqe(hw::EventType::Completion, sv::cq_number(cq2));
    auto next = [&] {
        for (int i = 0; i < 2000; ++i) {
            if (sv::get_cq_event(ch, &got, &gctx) == 0) return true;
            REQUIRE(errno == EAGAIN);
            ::usleep(1000);
        }
        return false;
    };
    REQUIRE(next());
    CHECK(got == cq1);
    CHECK(gctx == &t1);
    REQUIRE(readable(ch->fd, 2000));  // the second still waits
    REQUIRE(next());
    CHECK(got == cq2);
    CHECK(gctx == &t2);
    CHECK_FALSE(readable(ch->fd, 0));
    errno = 0;
    CHECK(sv::get_cq_event(ch, &got, &gctx) == -1);
    CHECK(errno == EAGAIN);
    // Blocking again: a call that waits gets the next event and leaves the
    // fd unreadable.
    REQUIRE(::fcntl(ch->fd, F_SETFL, fl) == 0);
    std::thread t([&r, cq2] {
        ::usleep(50 * 1000);
        r.post_eqe(hw::EventType::Completion, sv::cq_number(cq2));
    });
    REQUIRE(sv::get_cq_event(ch, &got, &gctx) == 0);
    t.join();
    CHECK(got == cq2);
    CHECK_FALSE(readable(ch->fd, 0));
    sv::ack_cq_events(cq1, 1);
    sv::ack_cq_events(cq2, 2);
    CHECK(sv::destroy_cq(cq1) == 0);
    CHECK(sv::destroy_cq(cq2) == 0);
    CHECK(sv::destroy_comp_channel(ch) == 0);
}

TEST_CASE("async events: EQEs to ibv_async_event through async_fd", "[verbs][events]") {
    Rig r;
    ibv_cq* cq = sv::create_cq(r.ctx, 4, nullptr, nullptr, 0);
    ibv_qp* qp = make_qp(r, cq);
    CHECK_FALSE(readable(r.ctx->async_fd, 0));
    r.post_eqe(hw::EventType::QpFatal, qp->qp_num, 11);
    r.post_eqe(hw::EventType::PortActive, 1);
    r.post_eqe(hw::EventType::CqErr, sv::cq_number(cq));
    r.post_eqe(hw::EventType::CmdCompletion, 0);  // not an async event
    REQUIRE(readable(r.ctx->async_fd, 2000));
    ibv_async_event ev{};
    REQUIRE(sv::get_async_event(r.ctx, &ev) == 0);
    CHECK(ev.event_type == IBV_EVENT_QP_FATAL);
    CHECK(ev.element.qp == qp);
    CHECK(sv::async_event_context(&ev) == r.ctx);
    sv::ack_async_event(&ev);
    CHECK(qp->events_completed == 1);
    // The others may still be in flight through the event thread.
    for (int i = 0; i < 100 && !readable(r.ctx->async_fd, 20); ++i) {}
    REQUIRE(sv::get_async_event(r.ctx, &ev) == 0);
    CHECK(ev.event_type == IBV_EVENT_PORT_ACTIVE);
    CHECK(ev.element.port_num == 1);
    for (int i = 0; i < 100 && !readable(r.ctx->async_fd, 20); ++i) {}
    REQUIRE(sv::get_async_event(r.ctx, &ev) == 0);
    CHECK(ev.event_type == IBV_EVENT_CQ_ERR);
    CHECK(ev.element.cq == cq);
    sv::ack_async_event(&ev);
    CHECK_FALSE(readable(r.ctx->async_fd, 100));
    // Non-blocking fd and nothing queued: EAGAIN.
    const int fl = ::fcntl(r.ctx->async_fd, F_GETFL);
    ::fcntl(r.ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
    errno = 0;
    CHECK(sv::get_async_event(r.ctx, &ev) == -1);
    CHECK(errno == EAGAIN);
    CHECK(sv::destroy_qp(qp) == 0);
    CHECK(sv::destroy_cq(cq) == 0);
}

TEST_CASE("AHs and UD sends: CREATE_AH, UD_SEG", "[verbs][ah]") {
    Rig r;
    ibv_gid gid{};
    REQUIRE(sv::query_gid(r.ctx, 1, 1, &gid) == 0);
    ibv_ah_attr aa{};
    aa.is_global = 1;
    aa.grh.dgid = gid;
    aa.grh.sgid_index = 1;
    aa.grh.hop_limit = 64;
    aa.port_num = 1;
    ibv_ah* ah = sv::create_ah(r.pd, &aa);
    REQUIRE(ah != nullptr);
    const Cmd& c = r.rec->last(hw::CmdOpcode::CreateAh);
    CHECK(c.get(hw::cmd_create_ah_in::pdn) == sv::pd_number(r.pd));
    CHECK(c.get(hw::cmd_create_ah_in::port_num) == 1);
    CHECK(c.get(hw::cmd_create_ah_in::av_grh) == 1);
    CHECK(c.get(hw::cmd_create_ah_in::av_hop_limit) == 64);
    ibv_cq* cq = sv::create_cq(r.ctx, 4, nullptr, nullptr, 0);
    ibv_qp* qp = make_qp(r, cq, IBV_QPT_UD);
    {
        ibv_qp_attr m{};
        m.qp_state = IBV_QPS_INIT;
        m.port_num = 1;
        m.qkey = 0x11111111;
        REQUIRE(sv::modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) == 0);
        m.qp_state = IBV_QPS_RTR;
        REQUIRE(sv::modify_qp(qp, &m, IBV_QP_STATE) == 0);
        m.qp_state = IBV_QPS_RTS;
        REQUIRE(sv::modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0);
    }
    ibv_send_wr w{};
    ibv_sge sge{0x1000, 10, 5};
    w.opcode = IBV_WR_SEND;
    w.sg_list = &sge;
    w.num_sge = 1;
    w.wr.ud.ah = ah;
    w.wr.ud.remote_qpn = 0x77;
    w.wr.ud.remote_qkey = 0x11111111;
    ibv_send_wr* bad = nullptr;
    REQUIRE(qp->context->ops.post_send(qp, &w, &bad) == 0);
    const hw::SendWqe ud = sent(sv::sq_view(qp), 0, hw::QpType::Ud);
    CHECK(ud.ud.ah_num == ah->handle);
    CHECK(ud.ud.dest_qpn == 0x77);
    CHECK(ud.ud.qkey == 0x11111111);
    CHECK(ud.sge[0].lkey == 5);
    w.opcode = IBV_WR_RDMA_WRITE;  // not on UD
    CHECK(qp->context->ops.post_send(qp, &w, &bad) == EINVAL);

    // init_ah_from_wc on an IPv4 RoCE v2 GRH (20 zero bytes + IPv4 header).
    ibv_wc wc{};
    wc.wc_flags = IBV_WC_GRH;
    std::uint8_t grh[40] = {};
    grh[20] = 0x45;
    grh[21] = 0x10;
    std::memcpy(grh + 32, gid.raw + 12, 4);  // source
    std::memcpy(grh + 36, gid.raw + 12, 4);  // destination: us
    ibv_ah_attr fa{};
    REQUIRE(sv::init_ah_from_wc(r.ctx, 1, &wc, reinterpret_cast<ibv_grh*>(grh), &fa) == 0);
    CHECK(fa.is_global == 1);
    CHECK(fa.grh.sgid_index == 1);
    CHECK(std::memcmp(fa.grh.dgid.raw, gid.raw, 16) == 0);
    CHECK(fa.grh.traffic_class == 0x10);
    ibv_ah* ah2 = sv::create_ah_from_wc(r.pd, &wc, reinterpret_cast<ibv_grh*>(grh), 1);
    REQUIRE(ah2 != nullptr);
    CHECK(sv::destroy_ah(ah2) == 0);
    CHECK(sv::destroy_qp(qp) == 0);
    CHECK(sv::destroy_cq(cq) == 0);
    CHECK(sv::destroy_ah(ah) == 0);
    CHECK(r.firmware->counts().ahs == 0);
}

TEST_CASE("ibv_qp_ex: wr_start / wr_send / wr_set_sge / wr_complete", "[verbs][qpex]") {
    Rig r;
    ibv_cq* cq = sv::create_cq(r.ctx, 4, nullptr, nullptr, 0);
    ibv_qp_init_attr_ex a = qp_ex_attr(r, cq, IBV_QPT_RC, IBV_QP_EX_WITH_SEND, {2, 2, 1, 1, 0});
    ibv_qp* qp = verbs_get_ctx(r.ctx)->create_qp_ex(r.ctx, &a);
    REQUIRE(qp != nullptr);
    connect_rc(r, qp);
    ibv_qp_ex* x = sv::qp_to_qp_ex(qp);
    REQUIRE(x != nullptr);
    CHECK(&x->qp_base == qp);
    ibv_wr_start(x);
    x->wr_id = 42;
    x->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_send(x);
    ibv_wr_set_sge(x, 0x33, 0x5000, 64);
    x->wr_id = 43;
    x->wr_flags = 0;
    ibv_wr_rdma_write_imm(x, 0x44, 0x6000, htobe32(7));
    ibv_wr_set_sge(x, 0x33, 0x5000, 8);
    REQUIRE(ibv_wr_complete(x) == 0);
    CHECK(r.rec->dbs.back().kind == hw::DbKind::Sq);
    CHECK(r.rec->dbs.back().index == 2);
    const sv::QueueView sq = sv::sq_view(qp);
    const hw::SendWqe s0 = sent(sq, 0);
    CHECK(s0.wr_id == 42);
    CHECK(s0.signaled);
    CHECK(s0.data_len() == 64);
    CHECK(s0.sge[0].lkey == 0x33);
    const hw::SendWqe s1 = sent(sq, 1);
    CHECK(static_cast<int>(s1.opcode) == IBV_WR_RDMA_WRITE_WITH_IMM);
    CHECK(s1.imm_inv == 7);
    CHECK(s1.raddr.rkey == 0x44);
    // Ring full: the batch fails and nothing is rung. ENOSPC, as rdma-core's
    // rxe provider (check_qp_queue_full); this used to expect ENOMEM, which
    // is ibv_post_send's answer, not the ibv_wr_* one.
    const auto dbs = r.rec->dbs.size();
    ibv_wr_start(x);
    ibv_wr_send(x);
    ibv_wr_set_sge(x, 1, 2, 3);
    CHECK(ibv_wr_complete(x) == ENOSPC);
    CHECK(r.rec->dbs.size() == dbs);
    ibv_wr_start(x);
    ibv_wr_abort(x);
    CHECK(sv::destroy_qp(qp) == 0);
    CHECK(sv::destroy_cq(cq) == 0);
}

TEST_CASE("create_qp_ex: send_ops_flags beyond the QP type's set are EOPNOTSUPP", "[verbs][qpex]") {
    // rdma-core 44's check_qp_init_attr: RC, UC and UD each have a set of
    // ibv_wr_* operations (RXE_SUP_*_QP_SEND_OPS_FLAGS); a flag outside it
    // refuses the QP with EOPNOTSUPP.
    Rig r;
    ibv_cq* cq = sv::create_cq(r.ctx, 8, nullptr, nullptr, 0);
    const std::uint64_t rc = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                             IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |
                             IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
                             IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW |
                             IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_ATOMIC_WRITE;
    const std::uint64_t uc = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                             IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_BIND_MW |
                             IBV_QP_EX_WITH_SEND_WITH_INV;
    const std::uint64_t ud = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
    auto make = [&](ibv_qp_type t, std::uint64_t ops) {
        ibv_qp_init_attr_ex a = qp_ex_attr(r, cq, t, ops, {2, 2, 1, 1, 0});
        errno = 0;
        return verbs_get_ctx(r.ctx)->create_qp_ex(r.ctx, &a);
    };
    const struct {
        ibv_qp_type type;
        std::uint64_t ok;
        std::uint64_t refused;
    } cases[] = {
        {IBV_QPT_RC, rc, IBV_QP_EX_WITH_TSO},
        {IBV_QPT_UC, uc, IBV_QP_EX_WITH_RDMA_READ},
        {IBV_QPT_UC, uc, IBV_QP_EX_WITH_ATOMIC_WRITE},
        {IBV_QPT_UD, ud, IBV_QP_EX_WITH_RDMA_WRITE},
        {IBV_QPT_UD, ud, IBV_QP_EX_WITH_BIND_MW},
    };
    for (const auto& k : cases) {
        INFO("type " << k.type << " refused 0x" << std::hex << k.refused);
        ibv_qp* qp = make(k.type, k.ok);
        REQUIRE(qp != nullptr);
        CHECK(sv::destroy_qp(qp) == 0);
        CHECK(make(k.type, k.ok | k.refused) == nullptr);
        CHECK(errno == EOPNOTSUPP);
    }
    CHECK(r.firmware->counts().qps == 0);
    CHECK(sv::destroy_cq(cq) == 0);
}

TEST_CASE("create_qp_ex: a CREATE_FLAGS mask with no flag is accepted, any flag EOPNOTSUPP", "[verbs][qpex]") {
    // rdma-core 44's check_qp_init_attr knows IBV_QP_INIT_ATTR_CREATE_FLAGS and
    // refuses only the flags that are set (rxe supports none).
    Rig r;
    ibv_cq* cq = sv::create_cq(r.ctx, 8, nullptr, nullptr, 0);
    ibv_qp_init_attr_ex a{};
    a.send_cq = cq;
    a.recv_cq = cq;
    a.qp_type = IBV_QPT_RC;
    a.cap = {2, 2, 1, 1, 0};
    a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
    a.pd = r.pd;
    errno = 0;
    ibv_qp* qp = verbs_get_ctx(r.ctx)->create_qp_ex(r.ctx, &a);
    REQUIRE(qp != nullptr);
    CHECK(sv::destroy_qp(qp) == 0);
    for (std::uint32_t f : {std::uint32_t{IBV_QP_CREATE_SCATTER_FCS}, std::uint32_t{IBV_QP_CREATE_PCI_WRITE_END_PADDING},
                            std::uint32_t{1u << 30}}) {
        a.create_flags = f;
        errno = 0;
        CHECK(verbs_get_ctx(r.ctx)->create_qp_ex(r.ctx, &a) == nullptr);
        CHECK(errno == EOPNOTSUPP);
    }
    // A QP type outside ibv_qp_type, as a C caller may store it.
    a.create_flags = 0;
    for (int t : {99, -1, 0}) {
        c_store(a.qp_type, t);
        errno = 0;
        CHECK(verbs_get_ctx(r.ctx)->create_qp_ex(r.ctx, &a) == nullptr);
        CHECK(errno == EOPNOTSUPP);
    }
    CHECK(r.firmware->counts().qps == 0);
    CHECK(sv::destroy_cq(cq) == 0);
}

TEST_CASE("ibv_qp_ex: a full SQ, too many SGEs, inline data too long: ENOSPC at wr_complete", "[verbs][qpex]") {
    // rdma-core 44's rxe provider: check_qp_queue_full, wr_set_sge_list beyond
    // max_sge and wr_set_inline_data(_list) beyond max_inline set the batch's
    // error to ENOSPC, which ibv_wr_complete returns; nothing is rung.
    Rig r;
    ibv_cq* cq = sv::create_cq(r.ctx, 8, nullptr, nullptr, 0);
    ibv_qp_init_attr_ex a =
        qp_ex_attr(r, cq, IBV_QPT_RC, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE, {4, 2, 1, 1, 16});
    ibv_qp* qp = verbs_get_ctx(r.ctx)->create_qp_ex(r.ctx, &a);
    REQUIRE(qp != nullptr);
    connect_rc(r, qp);
    ibv_qp_ex* x = sv::qp_to_qp_ex(qp);
    REQUIRE(x != nullptr);
    const auto dbs = r.rec->dbs.size();
    std::vector<ibv_sge> sg(a.cap.max_send_sge + 1, ibv_sge{0x5000, 8, 0x33});
    ibv_wr_start(x);
    ibv_wr_rdma_write(x, 0x44, 0x6000);
    ibv_wr_set_sge_list(x, sg.size(), sg.data());
    CHECK(ibv_wr_complete(x) == ENOSPC);
    std::vector<std::uint8_t> data(a.cap.max_inline_data + 1, 0x5a);
    ibv_wr_start(x);
    ibv_wr_send(x);
    ibv_wr_set_inline_data(x, data.data(), data.size());
    CHECK(ibv_wr_complete(x) == ENOSPC);
    const ibv_data_buf halves[2] = {{data.data(), data.size() / 2},
                                    {data.data() + data.size() / 2, data.size() - data.size() / 2}};
    ibv_wr_start(x);
    ibv_wr_send(x);
    ibv_wr_set_inline_data_list(x, 2, halves);
    CHECK(ibv_wr_complete(x) == ENOSPC);
    CHECK(r.rec->dbs.size() == dbs);
    // What fits goes: max_send_sge SGEs, max_inline_data bytes.
    ibv_wr_start(x);
    ibv_wr_rdma_write(x, 0x44, 0x6000);
    ibv_wr_set_sge_list(x, a.cap.max_send_sge, sg.data());
    ibv_wr_send(x);
    ibv_wr_set_inline_data(x, data.data(), a.cap.max_inline_data);
    CHECK(ibv_wr_complete(x) == 0);
    CHECK(r.rec->dbs.size() == dbs + 1);
    CHECK(sv::destroy_qp(qp) == 0);
    CHECK(sv::destroy_cq(cq) == 0);
}

// ---------------------------------------------------------------------------
// ibv_cq_ex (ibv_create_cq_ex): the verbs.h inlines, as applications call
// them, on hand-made CQEs in the ring poll_cq reads.
// ---------------------------------------------------------------------------
namespace {

ibv_cq_init_attr_ex cq_ex_attr(std::uint32_t cqe, std::uint64_t wc_flags) {
    ibv_cq_init_attr_ex a{};
    a.cqe = cqe;
    a.wc_flags = wc_flags;
    return a;
}

// Each field reader of `cx` is there exactly when its wc_flags bit was asked
// for (rxe's rule; opcode, vendor_err and wc_flags always are).
void check_readers(const ibv_cq_ex* cx, std::uint64_t wc_flags) {
    const struct {
        const char* name;
        std::uint64_t flag;
        bool present;
    } readers[] = {
        {"read_byte_len", IBV_WC_EX_WITH_BYTE_LEN, cx->read_byte_len != nullptr},
        {"read_imm_data", IBV_WC_EX_WITH_IMM, cx->read_imm_data != nullptr},
        {"read_qp_num", IBV_WC_EX_WITH_QP_NUM, cx->read_qp_num != nullptr},
        {"read_src_qp", IBV_WC_EX_WITH_SRC_QP, cx->read_src_qp != nullptr},
        {"read_slid", IBV_WC_EX_WITH_SLID, cx->read_slid != nullptr},
        {"read_sl", IBV_WC_EX_WITH_SL, cx->read_sl != nullptr},
        {"read_dlid_path_bits", IBV_WC_EX_WITH_DLID_PATH_BITS, cx->read_dlid_path_bits != nullptr},
        {"read_completion_ts", IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, cx->read_completion_ts != nullptr},
        {"read_completion_wallclock_ns", IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
         cx->read_completion_wallclock_ns != nullptr},
        {"read_cvlan", IBV_WC_EX_WITH_CVLAN, cx->read_cvlan != nullptr},
        {"read_flow_tag", IBV_WC_EX_WITH_FLOW_TAG, cx->read_flow_tag != nullptr},
        {"read_tm_info", IBV_WC_EX_WITH_TM_INFO, cx->read_tm_info != nullptr},
    };
    for (const auto& r : readers) {
        INFO(r.name << " with wc_flags 0x" << std::hex << wc_flags);
        CHECK(r.present == ((wc_flags & r.flag) != 0));
    }
}

}  // namespace

TEST_CASE("ibv_cq_ex: start_poll / next_poll / end_poll and every read_*", "[verbs][cq][cqex]") {
    Rig r;
    int token = 0;
    ibv_cq_init_attr_ex a = cq_ex_attr(5, IBV_WC_STANDARD_FLAGS);
    a.cq_context = &token;
    a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
    a.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
    REQUIRE(verbs_get_ctx_op(r.ctx, create_cq_ex) != nullptr);
    ibv_cq_ex* cx = ibv_create_cq_ex(r.ctx, &a);
    REQUIRE(cx != nullptr);
    ibv_cq* cq = ibv_cq_ex_to_cq(cx);
    CHECK(cq->context == r.ctx);
    CHECK(cq->cq_context == &token);
    CHECK(cq->channel == nullptr);
    CHECK(cq->cqe == 7);
    CHECK(r.rec->last(hw::CmdOpcode::CreateCq).get(hw::cmd_create_cq_in::log_size) == 3);
    CHECK(cq->handle == sv::cq_number(cq));
    const std::uint32_t cqn = sv::cq_number(cq);
    // Every reader of IBV_WC_STANDARD_FLAGS; none of what the CQE lacks.
    check_readers(cx, IBV_WC_STANDARD_FLAGS);

    ibv_qp* qp = make_qp(r, cq, IBV_QPT_RC, 4);
    connect_rc(r, qp);
    ibv_poll_cq_attr pa{};
    ibv_wc wc[8];

    // Empty: ENOENT, no doorbell, and the lock is not held (poll_cq works).
    std::size_t dbs = r.rec->dbs.size();
    errno = 0;
    CHECK(ibv_start_poll(cx, &pa) == ENOENT);
    CHECK(errno == ENOENT);
    CHECK(ibv_poll_cq(cq, 8, wc) == 0);
    CHECK(r.rec->dbs.size() == dbs);

    // A SEND completion, a RECV with immediate (GRH, and SL / SLID / path
    // bits as the CQE carries them), the receive side of a WRITE with
    // immediate, and an error.
    put_cqe(cq, 0, 11, qp->qp_num, true, 0);
    {
        hw::Cqe c = make_cqe(12, qp->qp_num, false, 0, hw::WcStatus::Success, hw::WcOpcode::Recv,
                             hw::wc_flags::kWithImm | hw::wc_flags::kGrh, 0x01020304, 77);
        c.sl = 5;
        c.slid = 0x1234;
        c.dlid_path_bits = 3;
        put_cqe(cq, 1, c);
    }
    put_cqe(cq, 2, 13, qp->qp_num, false, 1, hw::WcStatus::Success, hw::WcOpcode::RecvRdmaWithImm,
            hw::wc_flags::kWithImm, 0xCAFEBABE, 4096);
    put_cqe(cq, 3, 14, qp->qp_num, true, 1, hw::WcStatus::RemAccessErr, hw::WcOpcode::RdmaWrite);

    REQUIRE(ibv_start_poll(cx, &pa) == 0);
    CHECK(cx->status == IBV_WC_SUCCESS);
    CHECK(cx->wr_id == 11);
    CHECK(ibv_wc_read_opcode(cx) == IBV_WC_SEND);
    CHECK(ibv_wc_read_vendor_err(cx) == 0);
    CHECK(ibv_wc_read_byte_len(cx) == 0);
    CHECK(ibv_wc_read_qp_num(cx) == qp->qp_num);
    CHECK(ibv_wc_read_src_qp(cx) == 0);
    CHECK(ibv_wc_read_wc_flags(cx) == 0);
    CHECK(ibv_wc_read_slid(cx) == 0);
    CHECK(ibv_wc_read_sl(cx) == 0);
    CHECK(ibv_wc_read_dlid_path_bits(cx) == 0);

    REQUIRE(ibv_next_poll(cx) == 0);
    CHECK(cx->status == IBV_WC_SUCCESS);
    CHECK(cx->wr_id == 12);
    CHECK(ibv_wc_read_opcode(cx) == IBV_WC_RECV);
    CHECK(ibv_wc_read_vendor_err(cx) == 0);
    CHECK(ibv_wc_read_byte_len(cx) == 77);
    CHECK(ibv_wc_read_imm_data(cx) == htobe32(0x01020304));
    CHECK(ibv_wc_read_qp_num(cx) == qp->qp_num);
    CHECK(ibv_wc_read_src_qp(cx) == 0x99);
    CHECK(ibv_wc_read_wc_flags(cx) == (IBV_WC_WITH_IMM | IBV_WC_GRH));
    CHECK(ibv_wc_read_slid(cx) == 0x1234);
    CHECK(ibv_wc_read_sl(cx) == 5);
    CHECK(ibv_wc_read_dlid_path_bits(cx) == 3);

    REQUIRE(ibv_next_poll(cx) == 0);
    CHECK(cx->wr_id == 13);
    CHECK(ibv_wc_read_opcode(cx) == IBV_WC_RECV_RDMA_WITH_IMM);
    CHECK(ibv_wc_read_byte_len(cx) == 4096);
    CHECK(ibv_wc_read_imm_data(cx) == htobe32(0xCAFEBABE));
    CHECK(ibv_wc_read_wc_flags(cx) == IBV_WC_WITH_IMM);
    CHECK(ibv_wc_read_sl(cx) == 0);

    REQUIRE(ibv_next_poll(cx) == 0);
    CHECK(cx->wr_id == 14);
    CHECK(cx->status == IBV_WC_REM_ACCESS_ERR);
    CHECK(ibv_wc_read_vendor_err(cx) == 3);
    CHECK(ibv_wc_read_opcode(cx) == IBV_WC_RDMA_WRITE);

    errno = 0;
    CHECK(ibv_next_poll(cx) == ENOENT);
    CHECK(errno == ENOENT);
    CHECK(r.rec->dbs.size() == dbs);  // the doorbell waits for end_poll
    ibv_end_poll(cx);
    REQUIRE(r.rec->dbs.size() == dbs + 1);
    CHECK(r.rec->dbs.back().kind == hw::DbKind::Cq);
    CHECK(r.rec->dbs.back().num == cqn);
    CHECK(r.rec->dbs.back().index == 4);
    CHECK(r.rec->dbs.back().cmd == 0);
    CHECK(ibv_start_poll(cx, &pa) == ENOENT);
    CHECK(ibv_poll_cq(cq, 8, wc) == 0);

    // The same CQ through ibv_poll_cq, then start_poll / end_poll without
    // next_poll: the entry start_poll returned is consumed.
    put_cqe(cq, 4, 15, qp->qp_num, true, 2);
    put_cqe(cq, 5, 16, qp->qp_num, false, 2, hw::WcStatus::Success, hw::WcOpcode::Recv,
            hw::wc_flags::kWithInv, 0xABCD, 8);
    put_cqe(cq, 6, 17, qp->qp_num, true, 3);
    REQUIRE(ibv_poll_cq(cq, 1, wc) == 1);
    CHECK(wc[0].wr_id == 15);
    CHECK(r.rec->dbs.back().index == 5);
    REQUIRE(ibv_start_poll(cx, &pa) == 0);
    CHECK(cx->wr_id == 16);
    CHECK(ibv_wc_read_wc_flags(cx) == IBV_WC_WITH_INV);
    CHECK(ibv_wc_read_invalidated_rkey(cx) == 0xABCD);
    ibv_end_poll(cx);
    CHECK(r.rec->dbs.back().index == 6);
    REQUIRE(ibv_poll_cq(cq, 8, wc) == 1);
    CHECK(wc[0].wr_id == 17);
    CHECK(r.rec->dbs.back().index == 7);

    // Across the end of the 8-entry ring (the phase flips), in batches.
    std::uint64_t want = 100 + 7;
    for (std::uint32_t p = 7; p < 20; ++p) {
        put_cqe(cq, p, 100 + p, qp->qp_num, true, 0);
        if (p % 5 == 0 || p == 19) {
            int n = 0;
            for (int e = ibv_start_poll(cx, &pa); e == 0; e = ibv_next_poll(cx), ++n)
                CHECK(cx->wr_id == want++);
            ibv_end_poll(cx);
            CHECK(n > 0);
            CHECK(r.rec->dbs.back().index == p + 1);
        }
    }
    CHECK(want == 120);
    CHECK(ibv_start_poll(cx, &pa) == ENOENT);

    // CQEs consumed through the iterator free their WQEs (6.1): fill the SQ
    // of a fresh QP, complete its last WQE, and there is room again.
    ibv_qp* qp2 = make_qp(r, cq, IBV_QPT_RC, 4);
    connect_rc(r, qp2);
    ibv_send_wr w{};
    w.opcode = IBV_WR_SEND;
    ibv_send_wr* bad = nullptr;
    std::uint32_t posted = 0;
    while (posted < 10 && qp2->context->ops.post_send(qp2, &w, &bad) == 0) ++posted;
    CHECK(posted == 4);
    put_cqe(cq, 20, 200, qp2->qp_num, true, posted - 1);
    REQUIRE(ibv_start_poll(cx, &pa) == 0);
    CHECK(cx->wr_id == 200);
    CHECK(ibv_next_poll(cx) == ENOENT);
    ibv_end_poll(cx);
    CHECK(qp2->context->ops.post_send(qp2, &w, &bad) == 0);
    CHECK(sv::destroy_qp(qp2) == 0);

    // req_notify on the ibv_cq: arm with the consumer index.
    CHECK(ibv_req_notify_cq(cq, 0) == 0);
    CHECK(r.rec->dbs.back().kind == hw::DbKind::Cq);
    CHECK(r.rec->dbs.back().cmd == static_cast<std::uint8_t>(hw::CqArm::Next));
    CHECK(r.rec->dbs.back().index == 21);

    CHECK(sv::destroy_qp(qp) == 0);
    CHECK(sv::destroy_cq(cq) == 0);
    CHECK(r.rec->last(hw::CmdOpcode::DestroyCq).get(hw::cmd_handle::handle) == cqn);
    CHECK(r.firmware->counts().cqs == 0);
}

TEST_CASE("ibv_cq_ex: readers only for the flags asked for, and what rxe rejects", "[verbs][cq][cqex]") {
    Rig r;
    // No wc_flags: opcode, vendor_err and wc_flags only (as rxe).
    ibv_cq_init_attr_ex a = cq_ex_attr(4, 0);
    ibv_cq_ex* cx = ibv_create_cq_ex(r.ctx, &a);
    REQUIRE(cx != nullptr);
    CHECK(cx->start_poll != nullptr);
    CHECK(cx->next_poll != nullptr);
    CHECK(cx->end_poll != nullptr);
    CHECK(cx->read_opcode != nullptr);
    CHECK(cx->read_vendor_err != nullptr);
    CHECK(cx->read_wc_flags != nullptr);
    check_readers(cx, 0);
    CHECK(sv::destroy_cq(ibv_cq_ex_to_cq(cx)) == 0);
    a = cq_ex_attr(4, IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM);
    cx = ibv_create_cq_ex(r.ctx, &a);
    REQUIRE(cx != nullptr);
    check_readers(cx, IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM);
    CHECK(sv::destroy_cq(ibv_cq_ex_to_cq(cx)) == 0);
    // A parent domain is ignored, as by rxe.
    a = cq_ex_attr(4, IBV_WC_EX_WITH_BYTE_LEN);
    a.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
    a.parent_domain = r.pd;
    cx = ibv_create_cq_ex(r.ctx, &a);
    REQUIRE(cx != nullptr);
    CHECK(sv::destroy_cq(ibv_cq_ex_to_cq(cx)) == 0);

    const std::size_t creates = r.rec->cmds.size();
    auto fails = [&r](ibv_cq_init_attr_ex at, int err) {
        errno = 0;
        CHECK(ibv_create_cq_ex(r.ctx, &at) == nullptr);
        CHECK(errno == err);
    };
    // wc_flags the CQE has no field for: EOPNOTSUPP before any command.
    for (std::uint64_t f : {std::uint64_t{IBV_WC_EX_WITH_COMPLETION_TIMESTAMP},
                            std::uint64_t{IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK},
                            std::uint64_t{IBV_WC_EX_WITH_CVLAN}, std::uint64_t{IBV_WC_EX_WITH_FLOW_TAG},
                            std::uint64_t{IBV_WC_EX_WITH_TM_INFO}, std::uint64_t{1} << 12,
                            std::uint64_t{1} << 40}) {
        INFO("wc_flags " << f);
        fails(cq_ex_attr(4, IBV_WC_STANDARD_FLAGS | f), EOPNOTSUPP);
    }
    // comp_mask beyond FLAGS | PD; IGNORE_OVERRUN (kernel rxe refuses it).
    a = cq_ex_attr(4, 0);
    a.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD << 1;
    fails(a, EOPNOTSUPP);
    a = cq_ex_attr(4, 0);
    a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
    a.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
    fails(a, EOPNOTSUPP);
    CHECK(r.rec->cmds.size() == creates);
    // Sizes and vectors as ibv_create_cq's: EINVAL.
    fails(cq_ex_attr(0, 0), EINVAL);
    fails(cq_ex_attr(1u << 20, 0), EINVAL);  // above max_cqe
    fails(cq_ex_attr(0x80000000u, 0), EINVAL);
    a = cq_ex_attr(4, 0);
    a.comp_vector = 1;
    fails(a, EINVAL);
    errno = 0;
    CHECK(verbs_get_ctx(r.ctx)->create_cq_ex(r.ctx, nullptr) == nullptr);
    CHECK(errno == EINVAL);
    CHECK(r.firmware->counts().cqs == 0);
}

TEST_CASE("ibv_cq_ex: events through a completion channel", "[verbs][cq][cqex][events]") {
    Rig r;
    ibv_comp_channel* ch = sv::create_comp_channel(r.ctx);
    REQUIRE(ch != nullptr);
    int token = 0;
    ibv_cq_init_attr_ex a = cq_ex_attr(4, IBV_WC_STANDARD_FLAGS);
    a.channel = ch;
    a.cq_context = &token;
    ibv_cq_ex* cx = ibv_create_cq_ex(r.ctx, &a);
    REQUIRE(cx != nullptr);
    ibv_cq* cq = ibv_cq_ex_to_cq(cx);
    CHECK(cq->channel == ch);
    CHECK(ch->refcnt == 1);
    CHECK(sv::destroy_comp_channel(ch) == EBUSY);
    CHECK(ibv_req_notify_cq(cq, 0) == 0);
    CHECK(r.rec->dbs.back().cmd == static_cast<std::uint8_t>(hw::CqArm::Next));
    CHECK_FALSE(readable(ch->fd, 0));
    r.post_eqe(hw::EventType::Completion, sv::cq_number(cq));
    REQUIRE(readable(ch->fd, 2000));
    ibv_cq* got = nullptr;
    void* gctx = nullptr;
    REQUIRE(sv::get_cq_event(ch, &got, &gctx) == 0);
    CHECK(got == cq);
    CHECK(reinterpret_cast<ibv_cq_ex*>(got) == cx);
    CHECK(gctx == &token);
    sv::ack_cq_events(got, 1);
    CHECK(cx->comp_events_completed == 1);
    // The completion the event announced, through the iterator.
    put_cqe(cq, 0, 5, 0x1234, false, 0, hw::WcStatus::Success, hw::WcOpcode::Recv, 0, 0, 9);
    ibv_poll_cq_attr pa{};
    REQUIRE(ibv_start_poll(cx, &pa) == 0);
    CHECK(cx->wr_id == 5);
    CHECK(ibv_wc_read_byte_len(cx) == 9);
    ibv_end_poll(cx);
    CHECK(sv::destroy_cq(cq) == 0);
    CHECK(ch->refcnt == 0);
    CHECK(sv::destroy_comp_channel(ch) == 0);
}

TEST_CASE("memory windows: ALLOC_MW, BIND_SEG bytes, LOCAL_INV, ibv_qp_ex, REREG_MR", "[verbs][mw]") {
    Rig r;
    ibv_cq* cq = sv::create_cq(r.ctx, 16, nullptr, nullptr, 0);
    ibv_qp* qp = make_qp(r, cq, IBV_QPT_RC, 8);
    connect_rc(r, qp);
    const sv::QueueView sq = sv::sq_view(qp);
    std::vector<std::uint8_t> buf(4096);
    ibv_mr* mr = sv::reg_mr(r.pd, buf.data(), buf.size(), reinterpret_cast<std::uintptr_t>(buf.data()),
                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
    REQUIRE(mr != nullptr);
    CHECK(r.rec->last(hw::CmdOpcode::RegMr).get(hw::cmd_reg_mr_in::access) ==
          (hw::access::kLocalWrite | hw::access::kMwBind));

    // ibv_alloc_mw goes through the ops table (verbs.h's inline).
    ibv_mw* mw1 = r.ctx->ops.alloc_mw(r.pd, IBV_MW_TYPE_1);
    REQUIRE(mw1 != nullptr);
    CHECK(r.rec->last(hw::CmdOpcode::AllocMw).get(hw::cmd_alloc_mw_in::type) == 1);
    CHECK(r.rec->last(hw::CmdOpcode::AllocMw).get(hw::cmd_alloc_mw_in::pdn) == sv::pd_number(r.pd));
    CHECK(mw1->type == IBV_MW_TYPE_1);
    CHECK(mw1->pd == r.pd);
    CHECK(mw1->handle == hw::key_index(mw1->rkey));
    CHECK(r.firmware->counts().mws == 1);
    errno = 0;
    CHECK(r.ctx->ops.alloc_mw(r.pd, static_cast<ibv_mw_type>(3)) == nullptr);
    CHECK(errno == EINVAL);

    // ibv_bind_mw: a BIND_MW WQE with the next rkey, and mw->rkey moves on.
    const std::uint32_t old = mw1->rkey;
    ibv_mw_bind b{};
    b.wr_id = 21;
    b.send_flags = IBV_SEND_SIGNALED;
    b.bind_info.mr = mr;
    b.bind_info.addr = reinterpret_cast<std::uintptr_t>(buf.data()) + 64;
    b.bind_info.length = 128;
    b.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
    REQUIRE(r.ctx->ops.bind_mw(qp, mw1, &b) == 0);
    CHECK(mw1->rkey == ibv_inc_rkey(old));
    hw::SendWqe w = sent(sq, 0);
    CHECK(static_cast<int>(w.opcode) == IBV_WR_BIND_MW);
    CHECK(w.wr_id == 21);
    CHECK(w.signaled);
    CHECK(w.num_sge == 0);
    CHECK(w.bind.mw_rkey == old);
    CHECK(w.bind.new_rkey == mw1->rkey);
    CHECK(w.bind.mr_lkey == mr->lkey);
    CHECK(w.bind.addr == b.bind_info.addr);
    CHECK(w.bind.length == 128);
    CHECK(w.bind.access == (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE));
    CHECK(r.rec->dbs.back().index == 1);
    // Zero-based type 1 binds are refused before anything is posted.
    b.bind_info.mw_access_flags |= IBV_ACCESS_ZERO_BASED;
    CHECK(r.ctx->ops.bind_mw(qp, mw1, &b) == EINVAL);
    CHECK(r.rec->dbs.back().index == 1);

    // Type 2 through post_send, then LOCAL_INV.
    ibv_mw* mw2 = r.ctx->ops.alloc_mw(r.pd, IBV_MW_TYPE_2);
    REQUIRE(mw2 != nullptr);
    ibv_send_wr wr[2]{};
    wr[0].wr_id = 22;
    wr[0].opcode = IBV_WR_BIND_MW;
    wr[0].bind_mw.mw = mw2;
    wr[0].bind_mw.rkey = ibv_inc_rkey(mw2->rkey);
    wr[0].bind_mw.bind_info.mr = mr;
    wr[0].bind_mw.bind_info.addr = reinterpret_cast<std::uintptr_t>(buf.data());
    wr[0].bind_mw.bind_info.length = 4096;
    wr[0].bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ZERO_BASED;
    wr[0].next = &wr[1];
    wr[1].wr_id = 23;
    wr[1].opcode = IBV_WR_LOCAL_INV;
    wr[1].invalidate_rkey = wr[0].bind_mw.rkey;
    ibv_send_wr* bad = nullptr;
    REQUIRE(qp->context->ops.post_send(qp, &wr[0], &bad) == 0);
    w = sent(sq, 1);
    CHECK(static_cast<int>(w.opcode) == IBV_WR_BIND_MW);
    CHECK(w.bind.mw_rkey == mw2->rkey);
    CHECK(w.bind.new_rkey == ibv_inc_rkey(mw2->rkey));
    CHECK(w.bind.access == (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ZERO_BASED));
    w = sent(sq, 2);
    CHECK(static_cast<int>(w.opcode) == IBV_WR_LOCAL_INV);
    CHECK(w.imm_inv == wr[0].bind_mw.rkey);
    CHECK(w.num_sge == 0);
    CHECK(r.rec->dbs.back().index == 3);
    // Local operations carry no data; a bind without an MR binds nothing.
    ibv_sge sge{0x1000, 8, mr->lkey};
    ibv_send_wr badwr{};
    badwr.opcode = IBV_WR_LOCAL_INV;
    badwr.sg_list = &sge;
    badwr.num_sge = 1;
    CHECK(qp->context->ops.post_send(qp, &badwr, &bad) == EINVAL);
    badwr = ibv_send_wr{};
    badwr.opcode = IBV_WR_BIND_MW;
    badwr.bind_mw.mw = mw2;
    badwr.bind_mw.bind_info.length = 8;  // no MR
    CHECK(qp->context->ops.post_send(qp, &badwr, &bad) == EINVAL);
    CHECK(r.rec->dbs.back().index == 3);
    // A bind with an immediate: EINVAL, as rdma-core 44's validate_send_wr.
    badwr = wr[0];
    badwr.next = nullptr;
    badwr.bind_mw.rkey = ibv_inc_rkey(badwr.bind_mw.rkey);
    badwr.imm_data = htobe32(1);
    bad = nullptr;
    CHECK(qp->context->ops.post_send(qp, &badwr, &bad) == EINVAL);
    CHECK(bad == &badwr);
    CHECK(r.rec->dbs.back().index == 3);

    // ibv_qp_ex: wr_bind_mw and wr_local_inv; data on them fails the batch.
    ibv_qp_ex* x = sv::qp_to_qp_ex(qp);
    REQUIRE(x != nullptr);
    ibv_mw_bind_info info{mr, reinterpret_cast<std::uintptr_t>(buf.data()), 64, IBV_ACCESS_REMOTE_READ};
    ibv_wr_start(x);
    x->wr_id = 24;
    ibv_wr_bind_mw(x, mw1, ibv_inc_rkey(mw1->rkey), &info);
    x->wr_id = 25;
    ibv_wr_local_inv(x, 0x1234);
    REQUIRE(ibv_wr_complete(x) == 0);
    w = sent(sq, 3);
    CHECK(static_cast<int>(w.opcode) == IBV_WR_BIND_MW);
    CHECK(w.bind.mw_rkey == mw1->rkey);
    CHECK(w.bind.length == 64);
    w = sent(sq, 4);
    CHECK(static_cast<int>(w.opcode) == IBV_WR_LOCAL_INV);
    CHECK(w.imm_inv == 0x1234);
    ibv_wr_start(x);
    ibv_wr_local_inv(x, 0x1234);
    ibv_wr_set_sge(x, mr->lkey, 0, 8);
    CHECK(ibv_wr_complete(x) == EINVAL);
    CHECK(r.rec->dbs.back().index == 5);

    // ibv_rereg_mr: PD and access; translation is EOPNOTSUPP.
    ibv_pd* pd2 = sv::alloc_pd(r.ctx);
    REQUIRE(pd2 != nullptr);
    CHECK(sv::rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
                       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND) == 0);
    CHECK(r.rec->last(hw::CmdOpcode::ReregMr).get(hw::cmd_rereg_mr_in::access) ==
          (hw::access::kLocalWrite | hw::access::kRemoteRead | hw::access::kMwBind));
    CHECK(sv::rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, nullptr, 0, 0) == 0);
    CHECK(mr->pd == pd2);
    CHECK(r.rec->last(hw::CmdOpcode::ReregMr).get(hw::cmd_rereg_mr_in::pdn) == sv::pd_number(pd2));
    errno = 0;
    CHECK(sv::rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, buf.data(), 64, 0) ==
          IBV_REREG_MR_ERR_CMD);
    CHECK(errno == EOPNOTSUPP);
    errno = 0;
    CHECK(sv::rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, nullptr, 0, 0) ==
          IBV_REREG_MR_ERR_INPUT);  // libibverbs' own check
    CHECK(errno == EINVAL);
    CHECK(sv::rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, nullptr, nullptr, 0, IBV_ACCESS_LOCAL_WRITE) ==
          IBV_REREG_MR_ERR_INPUT);  // access without CHANGE_ACCESS
    CHECK(sv::rereg_mr(mr, 0, nullptr, nullptr, 0, 0) == IBV_REREG_MR_ERR_CMD);

    CHECK(r.ctx->ops.dealloc_mw(mw1) == 0);
    CHECK(r.rec->last(hw::CmdOpcode::DeallocMw).get(hw::cmd_handle::handle) == hw::key_index(old));
    CHECK(r.ctx->ops.dealloc_mw(mw2) == 0);
    CHECK(r.firmware->counts().mws == 0);
    CHECK(sv::dereg_mr(mr) == 0);
    CHECK(sv::dealloc_pd(pd2) == 0);
    CHECK(sv::destroy_qp(qp) == 0);
    CHECK(sv::destroy_cq(cq) == 0);
}

TEST_CASE("poll_cq naps by what the polling thread's CPUs look like", "[datapath][nap]") {
    using sv::detail::kNoNap;
    using sv::detail::poll_nap_after_ns;
    // A CPU to spare: spin, whatever the count.
    CHECK(poll_nap_after_ns(1, false) == kNoNap);
    CHECK(poll_nap_after_ns(2, false) == kNoNap);
    CHECK(poll_nap_after_ns(64, false) == kNoNap);
    // All taken on one CPU: the engine and the peer need that CPU, nap at once.
    CHECK(poll_nap_after_ns(1, true) == 0);
    // All taken on several: nap only once the CQs have been empty for long.
    const std::uint64_t several = poll_nap_after_ns(2, true);
    CHECK(several > 0);
    CHECK(several != kNoNap);
    CHECK(poll_nap_after_ns(8, true) == several);
}
