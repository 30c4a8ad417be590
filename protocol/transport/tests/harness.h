// Test bench for the transport core: two QPs on an in-memory wire.
//
// Every packet a QP transmits is encoded with roce::encode_frame and decoded
// again with roce::decode_frame before the peer sees it, so the bytes are
// real RoCE v2 frames (ICRC included). Time only moves when the test asks
// (or when the wire is idle and a timer is armed), and a fault hook can drop,
// duplicate or delay any packet.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "simnic/congestion/notification_point.h"
#include "simnic/roce/ecn.h"
#include "simnic/roce/packet.h"
#include "simnic/transport/mw.h"
#include "simnic/transport/qp.h"

namespace tb {

using namespace simnic::transport;
namespace roce = simnic::roce;
namespace hw = simnic::hw;

// Host memory of one node: a flat arena, an MR table and memory windows
// (whose rules come from mw.h, as in the engines). Every MR and window is in
// PD 1, and the node's QP is `qpn`.
class MemTable : public MemoryPort {
public:
    struct Mr {
        uint32_t lkey, rkey;
        uint64_t addr, len;
        uint32_t access;
        bool valid = true;
        uint32_t mw_count = 0;  // windows bound to it
    };
    static constexpr uint32_t kPdn = 1;
    static constexpr uint32_t kMwIndexBase = 0x1000;  // window keys: index >= this
    uint32_t qpn = 0;
    static constexpr uint64_t kBase = 0x100000;
    explicit MemTable(size_t bytes) : arena_(bytes, 0) {}

    uint8_t* ptr(uint64_t addr) { return arena_.data() + (addr - kBase); }
    uint64_t alloc(size_t len, size_t align = 64) {
        next_ = (next_ + align - 1) / align * align;
        uint64_t a = kBase + next_;
        next_ += len;
        return a;
    }
    Mr& reg(uint64_t addr, uint64_t len, uint32_t access) {
        uint32_t k = 0x100 + static_cast<uint32_t>(mrs_.size()) * 0x100;
        mrs_.push_back(Mr{k | 1, k | 2, addr, len, access});
        return mrs_.back();
    }

    // A window in PD `pdn` (a test may use another PD than the QP's).
    uint32_t alloc_mw(hw::MwType type, uint32_t pdn = kPdn) {
        MwRecord r;
        r.type = type;
        r.state = type == hw::MwType::Type2 ? hw::MwState::Free : hw::MwState::Valid;
        r.pdn = pdn;
        r.rkey = ((kMwIndexBase + static_cast<uint32_t>(mws_.size())) << 8) | 0x10;
        mws_.push_back(r);
        return r.rkey;
    }
    MwRecord* mw(uint32_t key) {
        const uint32_t idx = key >> 8;
        if (idx < kMwIndexBase || idx - kMwIndexBase >= mws_.size()) return nullptr;
        return &mws_[idx - kMwIndexBase];
    }
    Mr* mr_by_lkey(uint32_t lkey) {
        for (auto& m : mrs_)
            if (m.valid && m.lkey == lkey) return &m;
        return nullptr;
    }
    void dealloc_mw(uint32_t key) {
        MwRecord* w = mw(key);
        if (!w) return;
        if (Mr* m = w->mr_key ? mr_by_lkey(w->mr_key) : nullptr) --m->mw_count;
        apply_invalidate(*w);
        w->state = hw::MwState::Invalid;
    }
    // A bind as if posted on QP `q` (the node's QP for bind_mw()).
    MemStatus bind_as(const MwQp& q, const MwBind& b) {
        MwRecord* w = mw(b.mw_rkey);
        if (!w) return MemStatus::BadKey;
        Mr* m = b.length ? mr_by_lkey(b.mr_lkey) : nullptr;
        MrFacts f;
        if (m) f = MrFacts{m->lkey, m->addr, m->len, m->access, false};
        const MemStatus s = check_bind(*w, m ? &f : nullptr, b, q);
        if (s != MemStatus::Ok) return s;
        if (Mr* old = w->mr_key ? mr_by_lkey(w->mr_key) : nullptr) --old->mw_count;
        apply_bind(*w, b, q);
        if (m) ++m->mw_count;
        return MemStatus::Ok;
    }
    MemStatus bind_mw(const MwBind& b) override { return bind_as(MwQp{qpn, kPdn}, b); }

    MemStatus check(KeyKind kind, uint32_t key, uint64_t addr, uint64_t len,
                    uint32_t access) override {
        if (MwRecord* w = mw(key)) {
            // Windows are rkeys only; the bound MR then gives the memory.
            uint64_t va = 0;
            if (kind != KeyKind::Rkey) return MemStatus::BadKey;
            const MemStatus s = window_access(*w, key, MwQp{qpn, kPdn}, addr, len, access, va);
            if (s != MemStatus::Ok) return s;
            Mr* m = mr_by_lkey(w->mr_key);
            if (!m) return MemStatus::BadKey;
            if (va < m->addr || va + len > m->addr + m->len) return MemStatus::OutOfBounds;
            translated_ = va;
            return MemStatus::Ok;
        }
        translated_ = addr;
        for (auto& m : mrs_) {
            if (!m.valid || (kind == KeyKind::Lkey ? m.lkey : m.rkey) != key) continue;
            // The rights before the bounds, as MemoryPort::check promises.
            if ((m.access & access) != access) return MemStatus::NoPermission;
            if (addr < m.addr || addr + len > m.addr + m.len || addr + len < addr)
                return MemStatus::OutOfBounds;
            return MemStatus::Ok;
        }
        return MemStatus::BadKey;
    }
    MemStatus read(KeyKind kind, uint32_t key, uint64_t addr, void* dst, size_t len,
                   uint32_t access) override {
        MemStatus s = check(kind, key, addr, len, access);
        if (s == MemStatus::Ok && len) std::memcpy(dst, ptr(translated_), len);
        return s;
    }
    // Every requester gather, as the core described it.
    struct Gather {
        uint64_t addr;
        size_t len;
        uint64_t sge_left;
    };
    std::vector<Gather> gathers;
    MemStatus gather(uint32_t lkey, uint64_t addr, void* dst, size_t len, uint64_t sge_left, uint64_t) override {
        gathers.push_back({addr, len, sge_left});
        return read(KeyKind::Lkey, lkey, addr, dst, len, 0);
    }
    // With `views` set, the node lends the bytes in place, as a port with a
    // read-ahead copy does (gather_view, read_reply_view), and counts them.
    bool views = false;
    int views_lent = 0;
    MemStatus lend(KeyKind kind, uint32_t key, uint64_t addr, size_t len, uint32_t access,
                   const uint8_t*& view) {
        view = nullptr;
        if (!views) return MemStatus::Ok;
        const MemStatus s = check(kind, key, addr, len, access);
        if (s != MemStatus::Ok) return s;
        view = ptr(translated_);
        ++views_lent;
        return MemStatus::Ok;
    }
    MemStatus gather_view(uint32_t lkey, uint64_t addr, size_t len, uint64_t, uint64_t,
                          const uint8_t*& view) override {
        return lend(KeyKind::Lkey, lkey, addr, len, 0, view);
    }
    MemStatus read_reply_view(uint32_t rkey, uint64_t addr, size_t len, uint64_t, uint64_t,
                              const uint8_t*& view) override {
        return lend(KeyKind::Rkey, rkey, addr, len, hw::access::kRemoteRead, view);
    }
    MemStatus write(KeyKind kind, uint32_t key, uint64_t addr, const void* src, size_t len,
                    uint32_t access) override {
        MemStatus s = check(kind, key, addr, len, access);
        if (s == MemStatus::Ok && len) std::memcpy(ptr(translated_), src, len);
        return s;
    }
    MemStatus atomic(uint32_t rkey, uint64_t addr, AtomicOp op, uint64_t swap_add,
                     uint64_t compare, uint64_t& orig) override {
        MemStatus s = check(KeyKind::Rkey, rkey, addr, 8, hw::access::kRemoteAtomic);
        if (s != MemStatus::Ok) return s;
        addr = translated_;
        ++atomics_applied;
        std::memcpy(&orig, ptr(addr), 8);
        uint64_t v = op == AtomicOp::FetchAdd ? orig + swap_add
                                              : (orig == compare ? swap_add : orig);
        std::memcpy(ptr(addr), &v, 8);
        return MemStatus::Ok;
    }
    // Windows by mw.h's rules. An MR here stands for a fast-registration MR,
    // which rxe does invalidate, unless windows are bound to it.
    MemStatus invalidate(uint32_t rkey) override {
        if (MwRecord* w = mw(rkey)) {
            const MemStatus s = check_invalidate(*w, rkey);
            if (s != MemStatus::Ok) return s;
            if (Mr* m = w->mr_key ? mr_by_lkey(w->mr_key) : nullptr) --m->mw_count;
            apply_invalidate(*w);
            return MemStatus::Ok;
        }
        for (auto& m : mrs_)
            if (m.valid && m.rkey == rkey && m.mw_count == 0) {
                m.valid = false;
                return MemStatus::Ok;
            }
        return MemStatus::BadKey;
    }
    int atomics_applied = 0;

private:
    std::vector<uint8_t> arena_;
    std::deque<Mr> mrs_;  // stable references
    std::deque<MwRecord> mws_;
    uint64_t translated_ = 0;  // check(): where the access lands
    size_t next_ = 0;
};

class RecvQ : public RecvQueuePort {
public:
    const RecvWqe* peek() override { return q.empty() ? nullptr : &q.front(); }
    void pop() override { q.pop_front(); }
    std::deque<RecvWqe> q;
};

struct Cqe {
    CqSide side;
    Completion wc;
    bool solicited;
};

class Cq : public CompletionPort {
public:
    void post(CqSide side, const Completion& c, bool solicited) override {
        all.push_back({side, c, solicited});
    }
    std::vector<Cqe> side(CqSide s) const {
        std::vector<Cqe> v;
        for (auto& c : all)
            if (c.side == s) v.push_back(c);
        return v;
    }
    std::vector<Cqe> all;
};

class Events : public EventPort {
public:
    void async_event(hw::EventType ev) override {
        got.push_back(ev);
        if (hook) hook(ev);
    }
    std::vector<hw::EventType> got;
    std::function<void(hw::EventType)> hook;  // optional: sees each event as it is raised
};

struct Clock {
    uint64_t now = 1'000'000;
};

class Timers : public TimerPort {
public:
    explicit Timers(Clock& c) : clock_(c) {}
    uint64_t now_ns() override { return clock_.now; }
    void arm(QpTimer t, uint64_t deadline) override { armed[t] = deadline; }
    void cancel(QpTimer t) override { armed.erase(t); }
    std::map<QpTimer, uint64_t> armed;

private:
    Clock& clock_;
};

// The counters a node's transport reports (the device's stats block).
struct Counters : CounterPort {
    void count(Counter c) override { ++n[c]; }
    std::map<Counter, int> n;
};

enum class Fault { Pass, Drop, Duplicate, Delay };

struct Frame {
    int from;  // node index
    std::vector<uint8_t> bytes;
    uint64_t at = 0;  // the clock when it was transmitted
};

class Fabric;

class WireTap : public WirePort {
public:
    WireTap(Fabric& f, int node) : fabric_(f), node_(node) {}
    void transmit(roce::Packet& pkt) override;
    // How many more packets the port takes before it holds the requester
    // back (WirePort::can_transmit), each asked for once before it is sent.
    size_t room = SIZE_MAX;
    bool can_transmit() override {
        if (room == 0) return false;
        if (room != SIZE_MAX) --room;
        return true;
    }

private:
    Fabric& fabric_;
    int node_;
};

struct Node {
    Node(Fabric& f, int idx, Clock& clk) : mem(1 << 22), timers(clk), wire(f, idx) {}
    MemTable mem;
    RecvQ rq;
    Cq cq;
    Events events;
    Timers timers;
    WireTap wire;
    Counters counters;
    // The node's DCQCN notification point: in the QP's env when the QP has
    // congestion control on (QpConfig::dcqcn), as an engine does per device.
    simnic::congestion::NotificationPoint np;
    bool np_on = false;
    std::unique_ptr<Qp> qp;

    TransportEnv env() {
        TransportEnv e;
        e.mem = &mem;
        e.rq = &rq;
        e.cq = &cq;
        e.wire = &wire;
        e.timers = &timers;
        e.events = &events;
        e.counters = &counters;
        if (np_on) e.np = &np;
        return e;
    }
    void post_recv(uint64_t wr_id, std::vector<Sge> sges) {
        RecvWqe w;
        w.wr_id = wr_id;
        for (auto& s : sges) w.sg.push(s);
        rq.q.push_back(w);
        qp->on_recv_posted();
    }
};

inline AddressVector make_av(int from) {
    AddressVector av;
    av.src_ip4 = from == 0 ? 0x0a000001 : 0x0a000002;
    av.dst_ip4 = from == 0 ? 0x0a000002 : 0x0a000001;
    av.src_mac = {0x02, 0, 0, 0, 0, uint8_t(from + 1)};
    av.dst_mac = {0x02, 0, 0, 0, 0, uint8_t(2 - from)};
    return av;
}

class Fabric {
public:
    // Two QPs of `type`, QPNs 0x11 and 0x12, connected to each other.
    explicit Fabric(hw::QpType type = hw::QpType::Rc, roce::IbMtu mtu = roce::IbMtu::Mtu1024,
                    std::function<void(QpConfig&, int)> tweak = nullptr) {
        for (int i = 0; i < 2; ++i) nodes.push_back(std::make_unique<Node>(*this, i, clock));
        for (int i = 0; i < 2; ++i) {
            QpConfig c;
            c.type = type;
            c.qpn = 0x11 + i;
            c.dest_qpn = 0x12 - i;
            c.path_mtu = mtu;
            c.sq_psn = i == 0 ? 0x100 : 0x200;
            c.rq_psn = i == 0 ? 0x200 : 0x100;
            c.timeout = 14;
            c.retry_cnt = 7;
            c.rnr_retry = 7;
            c.min_rnr_timer = 1;  // 10 us
            c.access_flags = hw::access::kLocalWrite | hw::access::kRemoteWrite | hw::access::kRemoteRead |
                             hw::access::kRemoteAtomic;
            c.qkey = 0x11111111;
            c.av = make_av(i);
            if (tweak) tweak(c, i);
            nodes[i]->mem.qpn = c.qpn;
            nodes[i]->np_on = c.dcqcn.has_value();
            nodes[i]->qp = std::make_unique<Qp>(c, nodes[i]->env());
            nodes[i]->qp->set_state(hw::QpState::Init);
            nodes[i]->qp->set_state(hw::QpState::Rtr);
            nodes[i]->qp->set_state(hw::QpState::Rts);
        }
    }
    Node& a() { return *nodes[0]; }
    Node& b() { return *nodes[1]; }

    void enqueue(int from, roce::Packet& pkt) {
        Frame f{from, {}, clock.now};
        if (!roce::encode_frame(pkt, f.bytes)) FAIL("encode_frame refused a packet");
        // A congested switch on the way: marks CE the frames it picks (only
        // ECN-capable ones change: roce::mark_ce leaves Not-ECT alone).
        if (ce_mark && ce_mark(pkt, transmitted)) {
            const size_t ip = roce::ip_header_offset(f.bytes.data(), f.bytes.size());
            if (ip && roce::mark_ce(f.bytes.data() + ip, f.bytes.size() - ip)) ++ce_marked;
        }
        log.push_back(f);
        const size_t index = transmitted++;
        Fault action = fault ? fault(pkt, index) : Fault::Pass;
        switch (action) {
            case Fault::Pass: in_flight.push_back(f); break;
            case Fault::Drop: ++dropped; break;
            case Fault::Duplicate:
                in_flight.push_back(f);
                in_flight.push_back(f);
                break;
            case Fault::Delay: delayed.push_back(f); return;
        }
        // A delayed frame goes out right after the next one: a reorder.
        while (!delayed.empty()) {
            in_flight.push_back(delayed.front());
            delayed.pop_front();
        }
    }

    // Deliver frames until the wire is empty. A delayed frame with no frame
    // after it goes out when the wire drains.
    void deliver() {
        size_t guard = 0;
        for (;;) {
            if (++guard > 200000) FAIL("the wire never goes idle");
            if (in_flight.empty()) {
                if (delayed.empty()) return;
                in_flight.push_back(delayed.front());
                delayed.pop_front();
            }
            Frame f = std::move(in_flight.front());
            in_flight.pop_front();
            roce::Packet p;
            auto res = roce::decode_frame(f.bytes.data(), f.bytes.size(), p);
            if (!res.ok()) FAIL("undecodable frame: " << roce::to_string(res.error));
            nodes[1 - f.from]->qp->on_packet(p);
        }
    }

    // Deliver, then let time run to each armed timer in turn until the wire
    // is idle and no timer is armed (or `limit_ns` has passed).
    void run(uint64_t limit_ns = 10'000'000'000ull) {
        const uint64_t end = clock.now + limit_ns;
        for (;;) {
            deliver();
            int who = -1;
            QpTimer which = QpTimer::Retransmit;
            uint64_t when = UINT64_MAX;
            for (int i = 0; i < 2; ++i)
                for (auto& [t, d] : nodes[i]->timers.armed)
                    if (d < when) {
                        when = d;
                        who = i;
                        which = t;
                    }
            if (who < 0 || when > end) return;
            clock.now = std::max(clock.now, when);
            nodes[who]->timers.armed.erase(which);
            ++timer_fires;
            nodes[who]->qp->on_timer(which);
        }
    }

    // Frames of the log, decoded (pointers into the log's bytes).
    std::vector<roce::Packet> decoded_log() const {
        std::vector<roce::Packet> v;
        for (auto& f : log) {
            roce::Packet p;
            REQUIRE(roce::decode_frame(f.bytes.data(), f.bytes.size(), p).ok());
            v.push_back(p);
        }
        return v;
    }

    Clock clock;
    std::vector<std::unique_ptr<Node>> nodes;
    std::deque<Frame> log;  // everything transmitted, faults or not
    std::deque<Frame> in_flight, delayed;
    std::function<Fault(const roce::Packet&, size_t)> fault;
    // Picks the frames a switch marks CE (the packet before encoding, and
    // its index among all transmitted).
    std::function<bool(const roce::Packet&, size_t)> ce_mark;
    size_t transmitted = 0, dropped = 0, timer_fires = 0, ce_marked = 0;
};

inline void WireTap::transmit(roce::Packet& pkt) { fabric_.enqueue(node_, pkt); }

// A buffer in a node's memory, registered with `access`, filled with a
// pattern derived from `seed`.
struct Buf {
    uint64_t addr = 0;
    uint32_t len = 0;
    MemTable::Mr* mr = nullptr;
    Sge sge(uint32_t off = 0, uint32_t n = UINT32_MAX) const {
        return Sge{addr + off, n == UINT32_MAX ? len - off : n, mr->lkey};
    }
};
inline Buf make_buf(Node& n, uint32_t len, uint32_t access, int seed = -1) {
    Buf b;
    b.addr = n.mem.alloc(len ? len : 1);
    b.len = len;
    b.mr = &n.mem.reg(b.addr, len, access);
    uint8_t* p = n.mem.ptr(b.addr);
    for (uint32_t i = 0; i < len; ++i)
        p[i] = seed < 0 ? 0 : static_cast<uint8_t>(i * 7 + seed + (i >> 8));
    return b;
}
inline std::vector<uint8_t> bytes(Node& n, uint64_t addr, size_t len) {
    const uint8_t* p = n.mem.ptr(addr);
    return std::vector<uint8_t>(p, p + len);
}

inline constexpr uint32_t kAllAccess =
    hw::access::kLocalWrite | hw::access::kRemoteWrite | hw::access::kRemoteRead | hw::access::kRemoteAtomic;

inline SendWqe wqe(hw::WrOpcode op, uint64_t wr_id, std::vector<Sge> sges,
                   uint32_t flags = hw::send_flags::kSignaled) {
    SendWqe w;
    w.wr_id = wr_id;
    w.opcode = op;
    w.send_flags = flags;
    for (auto& s : sges) w.sg.push(s);
    return w;
}

}  // namespace tb
