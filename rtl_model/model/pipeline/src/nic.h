// What the pipeline's blocks share: the configuration, the functional
// datapath, the DMA engine and table caches, the channels between blocks,
// and the counters. Each block is its own SC_MODULE (blocks/*.h, listed in
// blocks.h) and touches only the channels it is wired to; nic.cc holds the
// helpers they share (table lookups, playing a record's memory ops).
#pragma once

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <functional>
#include <memory>
#include <deque>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim.h"
#include "simnic/roce/opcode.h"
#include "simnic/model/dma_engine.h"
#include "simnic/model/histogram.h"
#include "simnic/model/pipeline.h"
#include "simnic/model/table_cache.h"
#include "simnic/roce/header_vector.h"
#include "simnic/roce/packet.h"

namespace simnic::rtl {
class IcrcEngineRtl;
class ReqSegRtl;
class RoceParserRtl;
class TxBuildRtl;
}  // namespace simnic::rtl

namespace simnic::model {

// A unit of work entering the pipeline: a doorbell, a received frame or a
// protocol timer. The stage that executes it fills `rec`.
struct Txn {
    enum class Kind : uint8_t { Doorbell, Rx, Timer };
    Kind kind = Kind::Doorbell;
    uint64_t t_in = 0;      // ps, when it entered
    uint64_t ready_ps = 0;  // ps, when the previous block's result is out (pipelined latency)
    // With pipeline.cut_through, a received frame streams through MAC RX,
    // the parser and the ICRC check: ready_ps is when its last beat is out
    // of the previous block, head_ps when its first beat is, hdr_ps when
    // the parser's header vector is.
    uint64_t head_ps = 0, hdr_ps = 0;
    // With pipeline.place_before_verdict, a SEND or WRITE request the ICRC
    // check handed on before its verdict (its header vector is out): when
    // its last beat is in (its payload all on chip) and when the verdict is
    // out, and the verdict (icrc_bad: the responder places its payload, then
    // drops it). verdict_ps 0: the frame came with its verdict.
    uint64_t payload_in_ps = 0, verdict_ps = 0;
    bool icrc_bad = false;
    Doorbell db;
    std::vector<uint8_t> frame;
    uint32_t qpn = 0;
    uint8_t timer = 0;
    uint8_t opcode = 0;
    uint32_t psn = 0;
    uint8_t aeth_syndrome = 0;  // responses: ACK, RNR NAK or NAK
    bool icrc_good = false;     // received frames: the C++ ICRC check found the ICRC right
    // Received frames: the packet the parser's C++ twin decoded from
    // `frame` (when `decoded`), which the ICRC check and the datapath use
    // instead of decoding the frame again (each decode was about 1% of a
    // SEND's instructions). Kept through recycle(), like the frame: reset
    // with the rest of a Txn, it cost as much as one decode.
    bool decoded = false;
    std::unique_ptr<roce::Packet> pkt;
    bool resume = false;        // request packets the completer released (window reopened, retransmission)
    OpRecord rec;
    // The responder's and completer's: per CQ the record completes into,
    // its turn (RxTransportBlock::cq_order), and whether it was waited for.
    struct CqTicket {
        uint32_t cqn = 0;
        uint64_t ticket = 0;
        bool waited = false;
    };
    std::vector<CqTicket> cq_tickets;
    uint32_t db_epoch = 0;  // doorbells: the object's epoch when it was rung (Nic::db_epoch)
    bool executed = false;  // doorbells: the datapath took it when it was rung (RQ, SRQ, CQ)

    // As new, but with the buffers it had (the frame, the record's ops and
    // frames) keeping their capacity.
    void recycle() {
        std::vector<uint8_t> f = std::move(frame);
        OpRecord r = std::move(rec);
        std::vector<CqTicket> c = std::move(cq_tickets);
        std::unique_ptr<roce::Packet> p = std::move(pkt);
        *this = Txn{};
        f.clear();
        r.clear();
        c.clear();
        frame = std::move(f);
        rec = std::move(r);
        cq_tickets = std::move(c);
        pkt = std::move(p);  // stale until the parser decodes into it (`decoded`)
    }
};
using TxnPtr = std::shared_ptr<Txn>;

// Every doorbell, received frame and timer is a Txn. Made anew, each cost
// about eight allocations (its shared block, then its op record growing op
// by op, its frame's copy, its CQ tickets); these are given out again once
// the pipeline holds them no more, buffers and all. A Txn is free when the
// pool's reference is its only one: the pipeline keeps them in TxnPtrs
// alone (nothing holds a Txn by a raw pointer past its last TxnPtr), and
// all of it runs in its simulation context's one thread.
class TxnPool {
public:
    TxnPtr take() {
        // Txns leave the pipeline about in the order they entered: the
        // oldest few are where a free one is found.
        const size_t n = pool_.size();
        for (size_t k = 0; k < std::min(n, kScan); ++k) {
            TxnPtr& p = pool_[next_];
            next_ = next_ + 1 == n ? 0 : next_ + 1;
            if (p.use_count() == 1) {
                p->recycle();
                return p;
            }
        }
        auto t = std::make_shared<Txn>();
        // Beyond the pool's size (a deep queue of doorbells, a long burst
        // of frames) the rest are made and freed as before.
        if (n < kMax) pool_.push_back(t);
        return t;
    }

private:
    static constexpr size_t kScan = 8, kMax = 512;
    std::vector<TxnPtr> pool_;
    size_t next_ = 0;
};

// A frame on its way out, and when its payload is in the device.
struct FrameTok {
    TxFrameRec f;
    uint64_t ready_ps = 0;  // when its payload is in; out of TX build: when its last beat is out
    uint64_t head_ps = 0;   // pipeline.cut_through, out of TX build: when its first beat is out
    // pipeline.cut_through, into TX build: when each part of its payload
    // comes in from host memory (empty: none read, or store-and-forward).
    std::vector<DmaArrival> payload;
};

struct CqeTok {
    uint32_t cqn = 0, qpn = 0, wqe_index = 0;
    bool is_send = false;
    uint64_t not_before_ps = 0;  // payload writes this CQE must follow
    // The CQ was armed (ibv_req_notify_cq): a completion event follows the
    // CQE, its EQE and MSI-X message written behind it, and the application
    // sees the CQE when the interrupt has woken it (cq.msix_ns).
    bool event = false;
    // The event alone, without a CQE: an arm that found CQEs the
    // application had not seen fires at once.
    bool event_only = false;
    // Written while its CQ's event was held by interrupt moderation: the
    // application sees it when that interrupt wakes it (cq.moderation_*).
    bool moderated = false;
    // An event the moderation timer sent: the period it was held (its
    // count not reached); 0 when the count, or no moderation, sent it.
    // Datapath::cq_event hands it to the engine with the event, and the
    // CQEs its count still wanted then (0: no count).
    uint64_t period_ps = 0;
    uint32_t cqes_to_count = 0;
    // An event's: the send WQEs (wqe_key) of the CQEs its moderation held,
    // whose latency is taken when the application is woken.
    std::vector<uint64_t> held{};
    // The CQ's own interrupt moderation (ibv_modify_cq: MODIFY_CQ, CQC
    // mod_*), as the datapath read it with the CQE; without one
    // (mod_own false) the device's cq.moderation_* hold.
    bool mod_own = false;
    uint32_t mod_count = 0;      // CQEs per event
    uint32_t mod_period_us = 0;  // the longest wait, us
};

// The memory ops of a record: table lookups and DMA transfers.
inline bool is_memory_op(Op::Kind k) {
    return k == Op::Kind::Qpc || k == Op::Kind::Mpt || k == Op::Kind::Mtt || k == Op::Kind::DmaRead ||
           k == Op::Kind::DmaWrite;
}
// Key of a send WQE in Nic::wqe_start.
inline uint64_t wqe_key(uint32_t qpn, uint32_t index) { return (uint64_t(qpn) << 32) | index; }

// When each send WQE entered the requester, until its CQE closes the entry
// (the message latency). Kept per QP so that a QP that goes to reset or
// error, or is destroyed, takes its entries with it (drop_qp): unsignaled
// WQEs never get a CQE, and QPNs are handed out cyclically over a million
// numbers, so a table keyed by (QPN, index) alone grew for as long as the
// device lived (the soak's daemon RSS). Past kMaxEntries in all it starts
// over: a few latency samples are lost, memory is not.
class WqeStartTable {
public:
    static constexpr size_t kMaxEntries = size_t(1) << 16;
    uint64_t& operator[](uint64_t key) {
        if (size_ >= kMaxEntries) clear();
        auto [it, fresh] = by_qp_[uint32_t(key >> 32)].try_emplace(uint32_t(key), 0);
        size_ += fresh;
        return it->second;
    }
    const uint64_t& at(uint64_t key) const { return by_qp_.at(uint32_t(key >> 32)).at(uint32_t(key)); }
    size_t count(uint64_t key) const {
        auto q = by_qp_.find(uint32_t(key >> 32));
        return q == by_qp_.end() ? 0 : q->second.count(uint32_t(key));
    }
    // Takes the entry of `key` into `t`; false if there is none.
    bool take(uint64_t key, uint64_t& t) {
        auto q = by_qp_.find(uint32_t(key >> 32));
        if (q == by_qp_.end()) return false;
        auto e = q->second.find(uint32_t(key));
        if (e == q->second.end()) return false;
        t = e->second;
        q->second.erase(e);
        --size_;
        // A QP's table stays while it does, empty or not (drop_qp takes
        // it): made again for each message of a QP one WQE deep, it was
        // three allocations a message.
        return true;
    }
    void drop_qp(uint32_t qpn) {
        auto q = by_qp_.find(qpn);
        if (q == by_qp_.end()) return;
        size_ -= q->second.size();
        by_qp_.erase(q);
    }
    void clear() {
        by_qp_.clear();
        size_ = 0;
    }
    size_t size() const { return size_; }
    size_t qps() const { return by_qp_.size(); }

private:
    std::unordered_map<uint32_t, std::unordered_map<uint32_t, uint64_t>> by_qp_;
    size_t size_ = 0;
};

// The message latencies behind latency.{median,p99}: every sample up to
// kCapacity, then a uniform sample of all of them (reservoir sampling, with
// a fixed-seed generator so runs repeat), with the count, minimum and
// maximum exact. A vector of every sample, capped at 4 Mi entries, made a
// model device that runs for hours grow its daemon by 32 MiB.
class LatencySamples {
public:
    static constexpr size_t kCapacity = size_t(1) << 16;
    void add(uint64_t ps) {
        ++count_;
        min_ = std::min(min_, ps);
        max_ = std::max(max_, ps);
        if (kept_.size() < kCapacity) {
            kept_.push_back(ps);
            return;
        }
        rng_ ^= rng_ << 13;  // xorshift64
        rng_ ^= rng_ >> 7;
        rng_ ^= rng_ << 17;
        if (const uint64_t j = rng_ % count_; j < kCapacity) kept_[size_t(j)] = ps;
    }
    void clear() {
        kept_.clear();
        count_ = max_ = 0;
        min_ = UINT64_MAX;
        rng_ = kSeed;
    }
    uint64_t count() const { return count_; }
    uint64_t min() const { return min_; }
    uint64_t max() const { return max_; }
    const std::vector<uint64_t>& kept() const { return kept_; }

private:
    static constexpr uint64_t kSeed = 0x9E3779B97F4A7C15ull;
    std::vector<uint64_t> kept_;
    uint64_t count_ = 0, min_ = UINT64_MAX, max_ = 0, rng_ = kSeed;
};

// An RC request packet: what holds a retransmit-queue entry (RC opcodes
// are 0x00-0x1F).
inline bool is_rc_request(uint8_t opcode) {
    return opcode < 0x20 && roce::opcode_info(opcode).has(roce::kRequest);
}

// What each channel shows of the item at its head on the waveform (qpn,
// psn, opcode, bytes), computed only while a waveform is armed. The QPN is
// the QP the item is for: the sending QP of a frame on its way out, the
// destination QP of one received, the QP of a doorbell, timer or CQE.
sim::Probe probe_frame(const std::vector<uint8_t>& frame);  // its BTH, read by the packet core
inline sim::Probe probe_txn(const TxnPtr& t) {
    if (t->kind == Txn::Kind::Rx) return probe_frame(t->frame);
    return sim::Probe{t->qpn, t->psn, t->opcode, uint32_t(t->frame.size())};
}
inline sim::Probe probe_tok(const FrameTok& f) {
    return sim::Probe{f.f.qpn, f.f.psn, f.f.opcode, uint32_t(f.f.bytes.size())};
}
inline sim::Probe probe_cqe(const CqeTok& c) { return sim::Probe{c.qpn, 0, 0, 0}; }
inline sim::Probe probe_visible(const std::pair<uint64_t, CqeTok>& c) { return probe_cqe(c.second); }
inline sim::Probe probe_eqe(const uint32_t& type) { return sim::Probe{0, 0, type, 0}; }
inline sim::Probe probe_cmd(const uint16_t& opcode) { return sim::Probe{0, 0, opcode, 0}; }

struct Nic {
    Nic(const ModelConfig& c, Datapath& b, bool lb);
    ~Nic();

    const ModelConfig cfg;
    Datapath& be;
    TxnPool txns;  // where new Txns come from (Txn, TxnPool)
    const bool loopback;
    const uint64_t period_ps;
    const uint64_t rx_path_ps;  // PHYs and cable in front of MAC RX (mac_rx.cc)
    uint64_t cycles(uint64_t n) const { return n * period_ps; }
    const bool cut_through;  // pipeline.cut_through
    const bool place_before_verdict;  // pipeline.place_before_verdict (implies cut_through)

    DmaEngine dma;
    TableCache qpc, mpt, mtt;
    sim::Tap tap;
    std::unique_ptr<rtl::IcrcEngineRtl> icrc_rtl;
    std::shared_ptr<rtl::RoceParserRtl> parser_rtl;  // shared: complete only in builds with the RTL parser
    // One's own parser (parser.rtl_sources): found in the cache (else built
    // when the device was created), and its folder there.
    bool parser_rtl_cache_hit = false, icrc_rtl_cache_hit = false;
    std::string parser_rtl_dir;
    // TX build's header builder with tx_build.impl = rtl (the built-in one,
    // or one's own from tx_build.rtl_sources, found in or put into the cache).
    std::unique_ptr<rtl::TxBuildRtl> tx_build_rtl;
    bool tx_build_rtl_cache_hit = false;
    std::string tx_build_rtl_dir;
    // The requester's segmentation with req_seg.impl = rtl (the built-in
    // block, or one's own from req_seg.rtl_sources).
    std::unique_ptr<rtl::ReqSegRtl> req_seg_rtl;
    bool req_seg_rtl_cache_hit = false;
    std::string req_seg_rtl_dir;

    // Inputs are unbounded: they come from outside the simulation.
    sim::Chan<TxnPtr> db_in{"doorbell_in", size_t(1) << 30, probe_txn};
    sim::Chan<TxnPtr> wqe_to_req{"wqe_fetch_to_requester", 16, probe_txn};
    sim::Chan<FrameTok> req_to_txb{"requester_to_tx_build", 16, probe_tok};
    sim::Chan<FrameTok> rxt_to_txb{"rx_transport_to_tx_build", 16, probe_tok};
    // QP1's MADs from the host's CM, built outside the datapath
    // (Pipeline::tx_frame): a fabric's device only, whose wire the fabric is.
    sim::Chan<FrameTok> qp1_to_txb{"qp1_to_tx_build", size_t(1) << 30, probe_tok};
    sim::Chan<FrameTok> txb_to_mac{"tx_build_to_mac_tx", 8, probe_tok};
    sim::Chan<std::vector<uint8_t>> wire_in{"wire_to_mac_rx", size_t(1) << 30, probe_frame};
    sim::Chan<TxnPtr> mac_to_parser{"mac_rx_to_parser", 8, probe_txn};
    sim::Chan<TxnPtr> parser_to_icrc{"parser_to_icrc_check", 8, probe_txn};
    sim::Chan<TxnPtr> rx_in{"to_rx_transport", 16, probe_txn};
    sim::Chan<TxnPtr> timer_in{"timer_in", size_t(1) << 30, probe_txn};
    sim::Chan<CqeTok> cq_in{"to_cqe_writer", 64, probe_cqe};
    sim::Chan<uint32_t> eq_in{"to_eqe_writer", 64, probe_eqe};
    sim::Chan<uint16_t> fw_in{"fw_commands", size_t(1) << 30, probe_cmd};
    // CQEs written, in order of visibility (posted writes do not block).
    sim::Chan<std::pair<uint64_t, CqeTok>> cqe_visible{"cqe_visible", size_t(1) << 30, probe_visible};

    // Every channel, in the order work flows.
    template <typename F>
    void each_chan(F&& f) {
        f(db_in); f(wqe_to_req); f(req_to_txb); f(rxt_to_txb); f(qp1_to_txb); f(txb_to_mac); f(wire_in);
        f(mac_to_parser); f(parser_to_icrc); f(rx_in); f(timer_in); f(cq_in); f(eq_in); f(fw_in); f(cqe_visible);
    }

    // Per-block counters, in the order stats() lists them.
    enum Blk {
        kDoorbell, kRequester, kTxBuild, kMacTx, kMacRx, kParser, kIcrcCheck, kResponder, kCompleter,
        kCqeWriter, kEqeWriter, kMgmtCore, kNumBlocks
    };
    sim::BlockStats blk[kNumBlocks];
    static const char* block_name(int b);

    // The time each item spends in each block: from when it is there for the
    // block (written into its input, or its previous stage's result is out,
    // whichever is later) to when its result is there for the next stage
    // (written into the block's output, or the result is out, whichever is
    // later). Along an item's path the stages add up to its time through
    // the device. What an item is per block: docs/model.md, Statistics.
    Histogram stage[kNumBlocks];
    void stage_sample(int b, uint64_t in_ps, uint64_t out_ps) { stage[b].add(out_ps > in_ps ? out_ps - in_ps : 0); }
    uint64_t stats_since_ps = 0;  // the last reset_stats(): the window of every rate

    // Counters that are not per block.
    // pipeline.place_before_verdict: requests whose payload was written to
    // host memory before their ICRC verdict, and those of them dropped
    // afterwards (a bad ICRC; the requester retransmits).
    uint64_t rx_placed_before_verdict = 0, rx_dropped_after_placement = 0;
    uint64_t rx_drops_parser = 0, rx_drops_icrc = 0, icrc_rtl_mismatch = 0, parser_rtl_mismatch = 0;
    // RX frames whose ICRC verdict from the RTL (which the pipeline follows)
    // differs from the C++ packet core's.
    uint64_t icrc_rx_rtl_mismatch = 0;
    // The RTL blocks' own latency, last frame's edges from its last beat in
    // to its result out (the stage's timing with impl = rtl, instead of the
    // configured latency_cycles).
    uint64_t parser_rtl_latency = 0, icrc_rtl_latency = 0;
    // The parser with its RTL: edges its m_ready_i was held low (the queue
    // to the ICRC check full while its header vector waited on the port).
    uint64_t parser_rtl_ready_low = 0;
    // TX build with its header builder's RTL: edges its m_axis_tready_i was
    // held low (the queue to MAC TX full while the header's first beat
    // waited on the port), each also TX build's stall. The ICRC engine,
    // which has no output ready: edges a frame was held back from it
    // (s_axis_tvalid_i low) because the queue after its stage was full (RX:
    // to the RX transport; TX: to MAC TX), each also that stage's stall.
    uint64_t tx_build_rtl_ready_low = 0, icrc_rtl_ready_low = 0;
    // TX build with its RTL: sent frames whose header from the RTL differs
    // from the datapath's; frames the descriptor cannot carry (sent as the
    // datapath built them); the last header's edges from its descriptor
    // taken to its first beat taken.
    uint64_t tx_build_rtl_mismatch = 0, tx_build_rtl_skipped = 0, tx_build_rtl_latency = 0;
    // The requester's segmentation with its RTL: WQE transactions run (a
    // WQE's packets made in one go), those whose packet descriptors differ
    // from the ones the datapath's segmentation made, the packets in them,
    // and the last transaction's edges from its descriptor offered to its
    // first packet taken; the edges the requester held its m_ready_i low
    // (its output queue to TX build full), each also the requester's stall.
    // Skipped: packets whose descriptor differed but whose frame cannot
    // carry it (rtl/req_seg/req_seg_frame.h), sent as the datapath built them.
    uint64_t req_seg_rtl_wqes = 0, req_seg_rtl_mismatch = 0, req_seg_rtl_packets = 0, req_seg_rtl_latency = 0,
             req_seg_rtl_skipped = 0;
    uint64_t req_seg_rtl_ready_low = 0;
    // The first mismatches between an RTL block and its C++ twin, each with
    // its frame (also on stderr as they happen): what a designer debugs from.
    static constexpr size_t kRtlMismatchDumps = 4;
    std::vector<std::string> rtl_mismatch_log;
    void rtl_mismatch(const char* block, const std::string& what, const std::vector<uint8_t>& frame);

    // An RTL stage would hand an item on to `q` on the edge at `edge_ps`
    // (now or later) and `q` is full: its ready is low on every edge from
    // that one on before the consumer takes an entry (the model's queues
    // hand over in zero time, so the first edge at or after that sees the
    // room). Waits for the room, each low edge a cycle of the block's stall,
    // and returns how many there were, waiting at most until `edge_ps` (0
    // edges) if the room comes by then. The low edges after the statistics'
    // last reset are added to `*counter` (and `*also`, if given), as the
    // stall is counted. The caller goes on from `edge_ps` + that many cycles.
    template <typename Q>
    uint64_t wait_room_from(Q& q, uint64_t edge_ps, sim::BlockStats& st, uint64_t* counter, uint64_t* also = nullptr) {
        if (q.wait_room_until(edge_ps)) return 0;
        {
            sim::StallScope stalled(&st);
            q.wait_room();
        }
        const uint64_t room = sim::now_ps();
        const uint64_t low = (room - edge_ps + period_ps - 1) / period_ps;
        sim::add_stall(st, room, edge_ps + cycles(low));  // to the edge that sees the room
        const uint64_t counted = low_edges_counted(st, edge_ps, low);
        *counter += counted;
        if (also) *also += counted;
        return low;
    }
    // Of `low` held edges from `t0_ps`, those the statistics count: as the
    // stall is, the edges before their last reset are not.
    uint64_t low_edges_counted(const sim::BlockStats& st, uint64_t t0_ps, uint64_t low) const {
        const uint64_t before =
            st.since_ps > t0_ps ? std::min(low, (st.since_ps - t0_ps + period_ps - 1) / period_ps) : 0;
        return low - before;
    }
    // The parser's drops by reason (index: roce::ParseVerdict; Accept stays 0).
    std::array<uint64_t, roce::kNumParseVerdicts> rx_drops_parser_reason{};
    uint64_t tx_frames = 0, tx_wire_bytes = 0, tx_payload_bytes = 0, rx_frames = 0;
    uint64_t first_tx_ps = 0, last_tx_ps = 0, mac_tx_free_ps = 0, mac_rx_free_ps = 0;
    uint64_t eqes = 0, fw_commands = 0;
    uint64_t wire_frames = 0;  // handed to the wire (Datapath::wire_tx), never reset
    // A fabric's device (SharedWire): MAC TX hands frames here instead of
    // Datapath::wire_tx.
    std::function<void(std::vector<uint8_t>&&)> wire_sink;

    // PFC (IEEE 802.1Qbb) as MAC TX honours it: a PFC frame MAC RX takes
    // pauses priority p until pause_until_ps[p] (a time of 0 resumes at
    // once), and MAC TX starts no frame of a paused priority. The device has
    // one TX queue, so a paused frame holds back the frames behind it
    // whatever their priority (a NIC with one traffic class). A frame's
    // priority is its DSCP's class-selector bits (DSCP >> 3), the default
    // DSCP-to-priority map the switch model uses too (switch_config.h);
    // frames without IP: priority 0.
    std::array<uint64_t, 8> pause_until_ps{};
    sc_core::sc_event pause_changed;
    uint64_t pfc_rx_frames = 0;     // PFC frames received (XOFF and XON)
    uint64_t pfc_paused_frames = 0; // frames MAC TX held back for a pause
    uint64_t pfc_paused_ps = 0;     // time MAC TX spent held back by pauses
    static uint8_t frame_priority(const std::vector<uint8_t>& f);
    uint64_t busy_since_ps = 0;  // for the simulation-speed figure

    // Message latency: WQE fetched -> its send CQE visible.
    WqeStartTable wqe_start;
    LatencySamples latency_ps;
    std::function<void(uint32_t)> on_cqe;
    // MSI-X interrupts of CQs armed for events: the application blocked on
    // the CQ's completion channel woken (cq.msix_ns after the interrupt's
    // message is in host memory), in order; on_cq_event is called then.
    sim::Chan<std::pair<uint64_t, CqeTok>> cq_wake{"cq_event_wake", size_t(1) << 30, probe_visible};
    std::function<void(uint32_t)> on_cq_event;
    // Drops the event moderation holds for a CQ being destroyed (the CQE writer's).
    std::function<void(uint32_t)> forget_cq_event;
    uint64_t interrupts = 0;
    uint64_t moderated_cqes = 0;  // CQEs written while their CQ's event was held (cq.moderation_*)
    uint64_t interrupt_wake_ps = 0;  // sum over interrupts: the CQE (or event) written to the application woken
    // Plays a record's Cqe and Eqe ops at i: a CQE, with the completion
    // event that follows it when its CQ was armed, goes to the CQE writer,
    // an event without a CQE too; other events to the EQE writer. Returns
    // the index of the last op used.
    size_t play_completion(const OpRecord& rec, size_t i, uint32_t qpn, uint64_t writes_done, sim::BlockStats& st);

    // The requester's retransmit queue (requester.retransmit_queue_entries):
    // the RC request packets sent and not yet acknowledged, per QP in PSN
    // order. A new request waits for room; an ACK frees what it covers.
    struct RtqEntries {
        std::deque<uint32_t> psn;
        // The newest PSN ever taken: a PSN after it is a new packet's, not
        // a retransmission's, without a search of the entries (which was 2%
        // of a simulation's instructions with a window of 64 KiB messages).
        uint32_t newest = 0;
    };
    std::unordered_map<uint32_t, RtqEntries> rtq;
    size_t rtq_used = 0, rtq_peak = 0;
    uint64_t rtq_overflows = 0;
    static constexpr uint64_t kRtqWatchdogCycles = 4096;
    uint64_t rtq_wait_ps = 0;
    sc_core::sc_event rtq_freed;
    // Admission is per doorbell transaction, not per packet: the datapath
    // decided which packets carry AckReq (rxe: a message's last, and every
    // 64th), so holding back part of a message could hold back the packet
    // whose ACK would make room. New work of n request packets waits until
    // it fits, or until the queue is empty (a message larger than the queue).
    void rtq_admit(size_t n);
    // Takes the entry of a request packet (a retransmission of one still
    // held needs none).
    void rtq_take(uint32_t qpn, uint32_t psn);
    // A response for `qpn` carrying `psn`: an ACK (or a READ/atomic
    // response) acknowledges up to and including psn, a NAK up to psn - 1.
    void rtq_ack(uint32_t qpn, uint32_t psn, bool nak);
    // The QP went to reset or error, or was destroyed: nothing will be acked.
    void rtq_drop(uint32_t qpn);

    // Protocol timers in simulated time (Pipeline::simulated_protocol_time,
    // a fabric's device): one deadline per QP and timer (retransmit, RNR,
    // DCQCN's rate limiter), as the engine would keep them in host time.
    // The TimerBlock (blocks/timers.h) wakes at the earliest and hands each
    // expired timer to timer_in, the completer's input, as an expired
    // host-time timer enters (Pipeline::timer). Cancelled or re-armed, a
    // deadline is gone: no event stays behind, so a fabric whose QPs have
    // nothing outstanding is idle (its run() returns) and an idle gap still
    // costs no simulated time.
    static uint64_t timer_key(uint32_t qpn, uint8_t t) { return uint64_t(qpn) << 8 | t; }
    std::set<std::pair<uint64_t, uint64_t>> timer_due;  // (deadline ps, timer_key), earliest first
    std::unordered_map<uint64_t, uint64_t> timer_at;     // timer_key -> its deadline, ps
    sc_core::sc_event timer_wake;                         // at the earliest deadline
    uint64_t timers_fired = 0;                            // timers handed to timer_in, never reset
    void timer_arm(uint32_t qpn, uint8_t t, uint64_t deadline_ps);
    void timer_cancel(uint32_t qpn, uint8_t t);
    void timer_drop_qp(uint32_t qpn);  // its every timer (reset, error, destroy)
    void timer_reschedule();           // timer_wake at the earliest deadline, none if there is none
    void timers_expire();              // the TimerBlock's method: what is due goes to timer_in

    // Doorbells travel to the doorbell block with simulated latency, apart
    // from the commands; one still on its way when its CQ, SRQ or QP is
    // destroyed must not be applied to a new object that reuses the number.
    // Each doorbell carries its object's epoch from when it was rung, and a
    // destroy moves the epoch on (key: kind << 32 | number).
    std::unordered_map<uint64_t, uint32_t> db_epoch;
    // Doorbells rung (Pipeline::doorbell) and not yet carried out by the
    // doorbell block (dropped as stale, or the datapath's WQE fetch done:
    // after its QPC lookup, which may wait). When none is left, no doorbell
    // can carry an old epoch, so the epochs start over (db_epoch cleared):
    // otherwise the table keeps an entry for every QP, CQ and SRQ number
    // ever destroyed, and QPNs are handed out cyclically over a million
    // numbers. And with pause_when_doorbells_taken set, the simulation
    // pauses (sc_pause; Pipeline::take_doorbells).
    uint64_t db_in_flight = 0;
    bool pause_when_doorbells_taken = false;
    void doorbell_taken() {
        if (db_in_flight == 0 || --db_in_flight != 0) return;
        db_epoch.clear();  // none can be stale now
        if (pause_when_doorbells_taken) sc_core::sc_pause();
    }
    static uint64_t db_key(uint8_t kind, uint32_t num) { return uint64_t{kind} << 32 | num; }
    // Per CQ, the consumer index last rung (taken at once, Pipeline::doorbell):
    // an arm the doorbell block carries out later goes with it, never with
    // the older one its own doorbell had. Left when the CQ is destroyed.
    std::unordered_map<uint32_t, uint32_t> cq_ci_rung;
    uint64_t cq_arms = 0;  // CQ arms the doorbell block carried out

    void reset_stats();

    // The waveform's signals beyond the channels' (declared when a waveform
    // is armed, Tap::kNone otherwise): per block busy and stall, per cache a
    // strobe per hit and per miss and their running counts, the DMA tags in
    // flight and the PCIe links busy, the retransmit queue's entries in use.
    void wave_declare();
    void wave_undeclare();
    struct CacheSignals {
        uint32_t hit = sim::Tap::kNone, miss = sim::Tap::kNone, hits = sim::Tap::kNone, misses = sim::Tap::kNone;
    };
    CacheSignals cache_sig[3];  // qpc, mpt, mtt
    uint32_t sig_rtq = sim::Tap::kNone;
    struct DmaSignals final : DmaEngine::Observer {
        sim::Tap* tap = nullptr;
        uint32_t tags = sim::Tap::kNone, in = sim::Tap::kNone, out = sim::Tap::kNone;
        void tag_held(uint64_t a, uint64_t b) override { interval(tags, a, b); }
        void link_in(uint64_t a, uint64_t b) override { interval(in, a, b); }
        void link_out(uint64_t a, uint64_t b) override { interval(out, a, b); }
        void interval(uint32_t sig, uint64_t a, uint64_t b) {
            if (b <= a) return;
            tap->add_at(a, sig, 1);
            tap->add_at(b, sig, -1);
        }
    } dma_sig;
    void show_rtq() {
        if (tap.on()) tap.set(sim::now_ps(), sig_rtq, rtq_used);
    }

    // A send WQE entered the requester at `t`.
    void note_wqe_start(uint32_t qpn, uint32_t index, uint64_t t) { wqe_start[wqe_key(qpn, index)] = t; }

    // Helpers the blocks share.
    // A table lookup through `cache`: hit_cycles, plus the entry's DMA read
    // on a miss. The wait for memory counts as the block's stall.
    void lookup(TableCache& cache, uint32_t key, sim::BlockStats& st);
    // The same on the block's own clock `t` (ps, >= now): a hit moves `t`
    // on by hit_cycles and does not wait; a miss waits until `t`, then for
    // the entry's read, and sets `t` to now.
    void lookup_ahead(TableCache& cache, uint32_t key, sim::BlockStats& st, uint64_t& t);
    // Both, at the lookup's data out (now): hit or miss, and a miss's read.
    void lookup_out(TableCache& cache, uint32_t key, sim::BlockStats& st);
    // Plays ops [i, end) of a record that only touch memory, until an op of
    // another kind; returns the index it stopped at. `payload_ready` is
    // raised to the arrival time of payload reads (not waited for), and
    // their spans are appended to `payload_spans` if given; `writes_done`
    // to the visibility of payload writes. With `early` (a request the ICRC
    // check handed on before its verdict, Txn::verdict_ps), payload writes
    // stream behind the frame's payload as it comes in (the last TLP leaves
    // when the last byte is in), and any other op but a table lookup or a
    // receive WQE's read waits for the verdict first.
    size_t play_memory(OpRecord& rec, size_t i, sim::BlockStats& st, uint64_t& payload_ready,
                       uint64_t& writes_done, bool block_on_reads, uint32_t qpn = 0,
                       std::vector<DmaArrival>* payload_spans = nullptr, const Txn* early = nullptr);

    // Receive-WQE prefetch (doorbell.recv_wqe_prefetch): per QP, when each
    // receive WQE posted and not yet used is on chip, in posting order; and
    // the RQ producer index last rung, to count what a doorbell posts. A
    // receive WQE read with none prefetched (an SRQ, a WQE posted before
    // the QP was seen) is a DMA read as without prefetch.
    std::unordered_map<uint32_t, std::deque<uint64_t>> rq_prefetched;
    std::unordered_map<uint32_t, uint32_t> rq_rung;
    std::unordered_map<uint32_t, uint32_t> rq_stride;  // a receive WQE's bytes, learnt from the datapath's reads
    uint64_t recv_wqe_prefetch_hits = 0, recv_wqe_prefetch_misses = 0, wqe_by_mmio = 0;
};

// What every block is: a module of the NIC's simulation, wired to the Nic
// whose channels and resources it uses.
struct BlockBase : sc_core::sc_module {
    BlockBase(sc_core::sc_module_name n, Nic& nic) : sc_core::sc_module(n), nic(nic) {}
    Nic& nic;
};

}  // namespace simnic::model
