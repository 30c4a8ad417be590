#include "blocks.h"

#include <algorithm>

#include "icrc_engine_rtl.h"
#include "simnic/roce/header_vector.h"
#include "simnic/roce/icrc.h"
#include "simnic/roce/opcode.h"
#ifdef SIMNIC_HAVE_RTL_PARSER
#include "roce_parser_rtl.h"
#endif

namespace simnic::model {

using sim::now_ps;
using sim::wait_ps;
using sim::wait_until;

namespace {
// Doorbell kinds (hw::DbKind numbering, hw-spec 3.2).
constexpr uint8_t kDbSq = 1, kDbRq = 2;

bool is_memory_op(Op::Kind k) {
    return k == Op::Kind::Qpc || k == Op::Kind::Mpt || k == Op::Kind::Mtt || k == Op::Kind::DmaRead ||
           k == Op::Kind::DmaWrite;
}
uint64_t wqe_key(uint32_t qpn, uint32_t index) { return (uint64_t(qpn) << 32) | index; }
}  // namespace

// ---- Nic ----

Nic::Nic(const ModelConfig& c, Backend& b, bool lb)
    : cfg(c), be(b), loopback(lb), period_ps(uint64_t(c.clock_period_ps() + 0.5)), dma(c.dma),
      qpc(c.qpc_cache), mpt(c.mpt_cache), mtt(c.mtt_cache) {
    if (cfg.icrc.impl == BlockImpl::rtl) icrc_rtl = std::make_unique<rtl::IcrcEngineRtl>();
#ifdef SIMNIC_HAVE_RTL_PARSER
    if (cfg.parser.impl == BlockImpl::rtl) parser_rtl = std::make_shared<rtl::RoceParserRtl>();
#endif
}
Nic::~Nic() = default;

const char* Nic::block_name(int b) {
    static const char* const n[kNumBlocks] = {"doorbell", "requester", "tx_build", "mac_tx",
                                              "mac_rx", "parser", "icrc_check", "responder",
                                              "completer", "cqe_writer", "eqe_writer", "mgmt_core"};
    return b >= 0 && b < kNumBlocks ? n[b] : "?";
}

void Nic::reset_stats() {
    for (auto& s : blk) s = sim::BlockStats{};
    dma.reset_stats();
    qpc.reset_stats();
    mpt.reset_stats();
    mtt.reset_stats();
    rx_drops_parser = rx_drops_icrc = icrc_rtl_mismatch = parser_rtl_mismatch = 0;
    tx_frames = tx_wire_bytes = tx_payload_bytes = rx_frames = 0;
    first_tx_ps = last_tx_ps = 0;
    eqes = fw_commands = 0;
    latency_ps.clear();
}

void Nic::lookup(TableCache& cache, uint32_t key, sim::BlockStats& st) {
    wait_ps(cycles(cache.config().hit_cycles));
    if (cache.access(key)) return;
    const uint64_t t0 = now_ps();
    const uint64_t t = dma.read(t0, cache.config().entry_bytes, DmaPurpose::Context);
    st.stall_ps += t - t0;
    wait_until(t);
}

size_t Nic::play_memory(OpRecord& rec, size_t i, sim::BlockStats& st, uint64_t& payload_ready,
                        uint64_t& writes_done, bool block_on_reads) {
    for (; i < rec.ops.size() && is_memory_op(rec.ops[i].kind); ++i) {
        const Op& o = rec.ops[i];
        switch (o.kind) {
            case Op::Kind::Qpc: lookup(qpc, o.id, st); break;
            case Op::Kind::Mpt: lookup(mpt, o.id, st); break;
            case Op::Kind::Mtt: lookup(mtt, o.id, st); break;
            case Op::Kind::DmaRead: {
                const uint64_t t0 = now_ps();
                const uint64_t t = dma.read(t0, o.bytes, o.purpose);
                // Payload for a frame overlaps with what follows; anything the
                // datapath must see before it can go on (a receive WQE, an
                // atomic's old value) is waited for.
                if (!block_on_reads && o.purpose == DmaPurpose::Payload) {
                    payload_ready = std::max(payload_ready, t);
                } else {
                    st.stall_ps += t - t0;
                    wait_until(t);
                }
                break;
            }
            case Op::Kind::DmaWrite:
                writes_done = std::max(writes_done, dma.write(now_ps(), o.bytes, o.purpose));
                break;
            default: break;
        }
    }
    return i;
}

// ---- TX ----

void DoorbellBlock::main() {
    for (;;) {
        TxnPtr t = nic.db_in.read();
        sim::BlockStats& st = nic.blk[Nic::kDoorbell];
        {
            sim::BusyScope busy(st);
            wait_ps(nic.cycles(1));  // the doorbell write itself
            if (t->db.kind == kDbSq || t->db.kind == kDbRq) nic.lookup(nic.qpc, t->db.num, st);
            nic.be.exec_doorbell(t->db, t->rec);
            // WQE fetch: every WQE read of this doorbell is issued back to
            // back, and the next doorbell's right after: fetches overlap (up
            // to the DMA engine's tags). The requester starts on this
            // doorbell's WQEs when the last of them has arrived.
            uint64_t last = now_ps();
            for (Op& o : t->rec.ops) {
                if (o.kind == Op::Kind::DmaRead && o.purpose == DmaPurpose::WqeFetch)
                    last = std::max(last, nic.dma.read(now_ps(), o.bytes, o.purpose));
                else if (o.kind == Op::Kind::WqeFetched)
                    nic.wqe_start[wqe_key(o.id, o.aux)] = t->t_in;
            }
            t->ready_ps = last;
        }
        nic.wqe_to_req.write(t, probe_of(*t), &st.stall_ps);
    }
}

void RequesterBlock::main() {
    for (;;) {
        TxnPtr t = nic.wqe_to_req.read();
        sim::BlockStats& st = nic.blk[Nic::kRequester];
        if (t->ready_ps > now_ps()) {
            st.stall_ps += t->ready_ps - now_ps();  // its WQEs are still on the way
            wait_until(t->ready_ps);
        }
        sim::BusyScope busy(st);
        OpRecord& rec = t->rec;
        uint64_t payload_ready = now_ps(), writes_done = now_ps();
        for (size_t i = 0; i < rec.ops.size();) {
            const Op& o = rec.ops[i];
            if ((o.kind == Op::Kind::DmaRead && o.purpose == DmaPurpose::WqeFetch) || o.kind == Op::Kind::WqeFetched) {
                ++i;  // the doorbell block did these
                continue;
            }
            if (is_memory_op(o.kind)) {
                i = nic.play_memory(rec, i, st, payload_ready, writes_done, false);
                continue;
            }
            switch (o.kind) {
                case Op::Kind::TxFrame: {
                    wait_ps(nic.cycles(nic.cfg.requester.cycles_per_packet));
                    FrameTok f{std::move(rec.frames[o.aux]), std::max(payload_ready, now_ps())};
                    const sim::Probe p = probe_of(f);
                    nic.req_to_txb.write(std::move(f), p, &st.stall_ps);
                    payload_ready = now_ps();
                    break;
                }
                case Op::Kind::Cqe:
                    nic.cq_in.write(CqeTok{o.id, t->db.num, o.aux, o.is_send, writes_done}, sim::Probe{t->db.num},
                                    &st.stall_ps);
                    break;
                case Op::Kind::Eqe: nic.eq_in.write(o.id, sim::Probe{o.id}, &st.stall_ps); break;
                default: break;
            }
            ++i;
        }
    }
}

void TxBuildBlock::main() {
    for (;;) {
        // Responses (ACKs, READ responses) first: they are short and the
        // peer's requester is waiting on them.
        while (nic.rxt_to_txb.empty() && nic.req_to_txb.empty())
            sc_core::wait(nic.rxt_to_txb.data_event() | nic.req_to_txb.data_event());
        FrameTok f = !nic.rxt_to_txb.empty() ? nic.rxt_to_txb.read() : nic.req_to_txb.read();
        sim::BlockStats& st = nic.blk[Nic::kTxBuild];
        if (f.ready_ps > now_ps()) {
            st.stall_ps += f.ready_ps - now_ps();  // payload still on its way from host memory
            wait_until(f.ready_ps);
        }
        {
            sim::BusyScope busy(st);
            std::vector<uint8_t>& b = f.f.bytes;
            wait_ps(nic.cycles(nic.cfg.beats(uint32_t(b.size()))));
            if (nic.icrc_rtl && b.size() >= 4) {
                const uint32_t carried = uint32_t(b[b.size() - 4]) | uint32_t(b[b.size() - 3]) << 8 |
                                         uint32_t(b[b.size() - 2]) << 16 | uint32_t(b[b.size() - 1]) << 24;
                const std::vector<rtl::IcrcResult> r = nic.icrc_rtl->run({b});
                if (!r.empty() && !r[0].err) {
                    if (r[0].icrc != carried) ++nic.icrc_rtl_mismatch;
                    for (int k = 0; k < 4; ++k) b[b.size() - 4 + size_t(k)] = uint8_t(r[0].icrc >> (8 * k));
                }
            }
            f.ready_ps = now_ps() + nic.cycles(nic.cfg.icrc.latency_cycles);
        }
        const sim::Probe p = probe_of(f);
        nic.txb_to_mac.write(std::move(f), p, &st.stall_ps);
    }
}

void MacTxBlock::main() {
    for (;;) {
        FrameTok f = nic.txb_to_mac.read();
        wait_until(f.ready_ps);
        sim::BlockStats& st = nic.blk[Nic::kMacTx];
        {
            sim::BusyScope busy(st);
            const uint32_t len = uint32_t(f.f.bytes.size());
            const uint64_t dur = std::max<uint64_t>(nic.cycles(nic.cfg.beats(len)),
                                                    uint64_t(nic.cfg.line_time_ps(len) + 0.5));
            if (nic.tx_frames == 0) nic.first_tx_ps = now_ps();
            wait_ps(dur);
            ++nic.tx_frames;
            nic.tx_wire_bytes += len + nic.cfg.mac.ifg_bytes;
            nic.tx_payload_bytes += f.f.payload;
            nic.last_tx_ps = now_ps();
        }
        if (nic.loopback) {
            nic.wire_in.push_input(std::move(f.f.bytes), probe_of(f));
        } else {
            nic.be.wire_tx(f.f.bytes.data(), f.f.bytes.size());
        }
    }
}

// ---- RX ----

void MacRxBlock::main() {
    for (;;) {
        std::vector<uint8_t> fr = nic.wire_in.read();
        sim::BlockStats& st = nic.blk[Nic::kMacRx];
        auto t = std::make_shared<Txn>();
        t->kind = Txn::Kind::Rx;
        t->t_in = now_ps();
        {
            sim::BusyScope busy(st);
            const uint32_t len = uint32_t(fr.size());
            wait_ps(std::max<uint64_t>(nic.cycles(nic.cfg.beats(len)), uint64_t(nic.cfg.line_time_ps(len) + 0.5)));
            ++nic.rx_frames;
            t->frame = std::move(fr);
            t->ready_ps = now_ps();
        }
        nic.mac_to_parser.write(t, probe_of(*t), &st.stall_ps);
    }
}

void ParserBlock::main() {
    for (;;) {
        TxnPtr t = nic.mac_to_parser.read();
        sim::BlockStats& st = nic.blk[Nic::kParser];
        roce::HeaderVector hv;
        {
            sim::BusyScope busy(st);
            wait_ps(nic.cycles(nic.cfg.beats(uint32_t(t->frame.size()))));
#ifdef SIMNIC_HAVE_RTL_PARSER
            if (nic.parser_rtl) {
                hv = nic.parser_rtl->parse(t->frame.data(), t->frame.size(), nullptr);
                if (!(hv == roce::parse_header_vector(t->frame.data(), t->frame.size()))) ++nic.parser_rtl_mismatch;
            } else
#endif
                hv = roce::parse_header_vector(t->frame.data(), t->frame.size());
            t->ready_ps = now_ps() + nic.cycles(nic.cfg.parser.latency_cycles);
        }
        if (!hv.accepted()) {
            ++nic.rx_drops_parser;
            continue;
        }
        t->qpn = hv.dqpn;
        t->opcode = hv.opcode;
        t->psn = hv.psn;
        nic.parser_to_icrc.write(t, probe_of(*t), &st.stall_ps);
    }
}

void IcrcCheckBlock::main() {
    for (;;) {
        TxnPtr t = nic.parser_to_icrc.read();
        wait_until(t->ready_ps);
        sim::BlockStats& st = nic.blk[Nic::kIcrcCheck];
        bool ok = false;
        {
            sim::BusyScope busy(st);
            const std::vector<uint8_t>& b = t->frame;
            wait_ps(nic.cycles(nic.cfg.beats(uint32_t(b.size()))));
            if (nic.icrc_rtl) {
                const std::vector<rtl::IcrcResult> r = nic.icrc_rtl->run({b});
                ok = !r.empty() && r[0].ok && !r[0].err;
            } else {
                roce::Packet p;
                roce::DecodeOptions o;
                o.check_ip_checksum = false;
                ok = roce::decode_frame(b.data(), b.size(), p, o).error != roce::DecodeError::BadIcrc;
            }
            t->ready_ps = now_ps() + nic.cycles(nic.cfg.icrc.latency_cycles);
        }
        if (!ok) {
            ++nic.rx_drops_icrc;
            continue;
        }
        nic.rx_in.write(t, probe_of(*t), &st.stall_ps);
    }
}

void RxTransportBlock::play(Txn& t, sim::BlockStats& st) {
    OpRecord& rec = t.rec;
    // Request packets the completer releases (the send window reopened, a
    // retransmission) belong to the requester's stream: they go behind the
    // requester's queued packets, never ahead of them, so PSN order on the
    // wire is the order the datapath gave them.
    TxnPtr resume;
    size_t seg = 0;  // first op of the current frame's segment
    for (size_t i = 0; i < rec.ops.size(); ++i) {
        const Op& o = rec.ops[i];
        if (o.kind != Op::Kind::TxFrame) continue;
        if (!roce::opcode_info(rec.frames[o.aux].opcode).has(roce::kRequest)) continue;
        if (!resume) {
            resume = std::make_shared<Txn>();
            resume->kind = Txn::Kind::Doorbell;
            resume->t_in = now_ps();
            resume->qpn = t.qpn;
            resume->db.num = t.qpn;
        }
        // The frame and the memory ops just before it (its payload reads).
        size_t first = i;
        while (first > seg && is_memory_op(rec.ops[first - 1].kind)) --first;
        for (size_t k = first; k <= i; ++k) {
            Op c = rec.ops[k];
            if (c.kind == Op::Kind::TxFrame) {
                c.aux = uint32_t(resume->rec.frames.size());
                resume->rec.frames.push_back(std::move(rec.frames[o.aux]));
            }
            resume->rec.ops.push_back(c);
            rec.ops[k].kind = Op::Kind::WqeFetched;  // played by the requester now
            rec.ops[k].id = 0;
        }
        seg = i + 1;
    }
    uint64_t payload_ready = now_ps(), writes_done = now_ps();
    for (size_t i = 0; i < rec.ops.size();) {
        const Op& o = rec.ops[i];
        if (is_memory_op(o.kind)) {
            i = nic.play_memory(rec, i, st, payload_ready, writes_done, false);
            continue;
        }
        switch (o.kind) {
            case Op::Kind::TxFrame: {
                FrameTok f{std::move(rec.frames[o.aux]), std::max(payload_ready, now_ps())};
                const sim::Probe p = probe_of(f);
                nic.rxt_to_txb.write(std::move(f), p, &st.stall_ps);
                payload_ready = now_ps();
                break;
            }
            case Op::Kind::Cqe:
                nic.cq_in.write(CqeTok{o.id, t.qpn, o.aux, o.is_send, writes_done}, sim::Probe{t.qpn}, &st.stall_ps);
                break;
            case Op::Kind::Eqe: nic.eq_in.write(o.id, sim::Probe{o.id}, &st.stall_ps); break;
            case Op::Kind::WqeFetched:
                if (o.id) nic.wqe_start[wqe_key(o.id, o.aux)] = now_ps();
                break;
            default: break;
        }
        ++i;
    }
    if (resume) nic.wqe_to_req.write(resume, probe_of(*resume), &st.stall_ps);
}

void RxTransportBlock::main() {
    for (;;) {
        TxnPtr t = nic.rx_in.read();
        wait_until(t->ready_ps);
        const bool request = roce::opcode_info(t->opcode).has(roce::kRequest);
        sim::BlockStats& st = nic.blk[request ? Nic::kResponder : Nic::kCompleter];
        busy.lock();
        {
            sim::BusyScope b(st);
            nic.lookup(nic.qpc, t->qpn, st);
            nic.be.exec_rx(t->frame.data(), t->frame.size(), t->rec);
            wait_ps(nic.cycles(request ? nic.cfg.responder.cycles_per_packet : nic.cfg.completer.cycles_per_packet));
            play(*t, st);
        }
        busy.unlock();
    }
}

void RxTransportBlock::timers() {
    for (;;) {
        TxnPtr t = nic.timer_in.read();
        sim::BlockStats& st = nic.blk[Nic::kCompleter];
        busy.lock();
        {
            sim::BusyScope b(st);
            nic.lookup(nic.qpc, t->qpn, st);
            nic.be.exec_timer(t->qpn, t->timer, t->rec);
            wait_ps(nic.cycles(nic.cfg.completer.cycles_per_packet));
            play(*t, st);
        }
        busy.unlock();
    }
}

// ---- host writes and control ----

// CQEs become visible in the order they were written (posted writes keep
// their order), so one FIFO of (visible at, CQE) suffices.
void CqeWriterBlock::visible() {
    for (;;) {
        auto [t, c] = nic.cqe_visible.read();
        wait_until(t);
        if (c.is_send) {
            auto it = nic.wqe_start.find(wqe_key(c.qpn, c.wqe_index));
            if (it != nic.wqe_start.end()) {
                if (nic.latency_ps.size() < (size_t(1) << 22)) nic.latency_ps.push_back(now_ps() - it->second);
                nic.wqe_start.erase(it);
            }
        }
        if (nic.on_cqe) nic.on_cqe(c.cqn);
    }
}

void CqeWriterBlock::main() {
    for (;;) {
        CqeTok c = nic.cq_in.read();
        sim::BlockStats& st = nic.blk[Nic::kCqeWriter];
        sim::BusyScope busy(st);
        wait_ps(nic.cycles(1));
        const uint64_t t = std::max(nic.dma.write(now_ps(), nic.cfg.cq.cqe_bytes, DmaPurpose::Cqe), c.not_before_ps);
        nic.cqe_visible.push_input({t, c}, sim::Probe{c.qpn});
    }
}

void EqeWriterBlock::main() {
    for (;;) {
        nic.eq_in.read();
        sim::BusyScope busy(nic.blk[Nic::kEqeWriter]);
        wait_ps(nic.cycles(1));
        nic.dma.write(now_ps(), nic.cfg.eq.eqe_bytes, DmaPurpose::Eqe);
        ++nic.eqes;
    }
}

void MgmtCoreBlock::main() {
    for (;;) {
        nic.fw_in.read();
        sim::BusyScope busy(nic.blk[Nic::kMgmtCore]);
        wait_ps(uint64_t(nic.cfg.fw_command_ns() * 1000.0 + 0.5));
        ++nic.fw_commands;
    }
}

}  // namespace simnic::model
