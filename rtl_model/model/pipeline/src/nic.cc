// What the blocks share (nic.h): the Nic's construction and counters, and
// the two helpers every block that touches memory uses: a table lookup
// through a cache, and playing a record's memory ops through the caches and
// the DMA engine.
#include "nic.h"

#include <algorithm>
#include <cstdio>

#include "simnic/hw/verbs.h"
#include "simnic/roce/rules.h"

#include "icrc_engine_rtl.h"
#include "own_rtl.h"
#include "req_seg_rtl.h"
#include "tx_build_rtl.h"
#ifdef SIMNIC_HAVE_RTL_PARSER
#include "roce_parser_rtl.h"
#endif

namespace simnic::model {

using sim::now_ps;
using sim::wait_ps;
using sim::wait_until;

Nic::Nic(const ModelConfig& c, Datapath& b, bool lb)
    : cfg(c), be(b), loopback(lb), period_ps(uint64_t(c.clock_period_ps() + 0.5)),
      rx_path_ps(uint64_t(c.mac.phy_latency_ns) * 1000 *
                     (lb ? 2 : 1) + (lb ? uint64_t(c.mac.cable_ns) * 1000 : 0)),
      cut_through(c.pipeline.cut_through != 0),
      place_before_verdict(c.pipeline.cut_through != 0 && c.pipeline.place_before_verdict != 0),
      dma(c.dma),
      qpc(c.qpc_cache), mpt(c.mpt_cache), mtt(c.mtt_cache) {
    // One's own RTL (rtl_sources): built now, or found in the cache; throws
    // rtl::OwnRtlError with every problem (Pipeline::create reports it). A
    // datapath stage's is built at the device's width (-GDataWidth), so its
    // beats are the datapath's.
    const uint32_t data_width = cfg.mac.width_bytes * 8;
    if (cfg.icrc.impl == BlockImpl::rtl && !cfg.icrc.rtl_sources.empty()) {
        rtl::OwnRtlBuildInfo info;
        icrc_rtl = std::make_unique<rtl::IcrcEngineRtl>(rtl::OwnRtl{cfg.icrc.rtl_sources, cfg.icrc.rtl_top, data_width}, &info);
        icrc_rtl_cache_hit = info.cache_hit;
    } else if (cfg.icrc.impl == BlockImpl::rtl) {
        icrc_rtl = std::make_unique<rtl::IcrcEngineRtl>();
    }
    if (cfg.tx_build.impl == BlockImpl::rtl && !cfg.tx_build.rtl_sources.empty()) {
        rtl::OwnRtlBuildInfo info;
        tx_build_rtl = std::make_unique<rtl::TxBuildRtl>(
            rtl::OwnRtl{cfg.tx_build.rtl_sources, cfg.tx_build.rtl_top, data_width}, &info);
        tx_build_rtl_cache_hit = info.cache_hit;
        tx_build_rtl_dir = info.dir;
    } else if (cfg.tx_build.impl == BlockImpl::rtl) {
        tx_build_rtl = std::make_unique<rtl::TxBuildRtl>();
    }
    if (cfg.req_seg.impl == BlockImpl::rtl && !cfg.req_seg.rtl_sources.empty()) {
        rtl::OwnRtlBuildInfo info;
        req_seg_rtl = std::make_unique<rtl::ReqSegRtl>(rtl::OwnRtl{cfg.req_seg.rtl_sources, cfg.req_seg.rtl_top}, &info);
        req_seg_rtl_cache_hit = info.cache_hit;
        req_seg_rtl_dir = info.dir;
    } else if (cfg.req_seg.impl == BlockImpl::rtl) {
        req_seg_rtl = std::make_unique<rtl::ReqSegRtl>();
    }
#ifdef SIMNIC_HAVE_RTL_PARSER
    if (cfg.parser.impl == BlockImpl::rtl && !cfg.parser.rtl_sources.empty()) {
        rtl::OwnRtlBuildInfo info;
        parser_rtl = std::make_shared<rtl::RoceParserRtl>(
            rtl::OwnRtl{cfg.parser.rtl_sources, cfg.parser.rtl_top, data_width}, &info);
        parser_rtl_cache_hit = info.cache_hit;
        parser_rtl_dir = info.dir;
    } else if (is_rtl(cfg.parser.impl))
        parser_rtl = std::make_shared<rtl::RoceParserRtl>(
            cfg.parser.impl == BlockImpl::rtl_example_slow    ? rtl::RoceParserRtl::Design::ExampleSlow
            : cfg.parser.impl == BlockImpl::rtl_example_buggy ? rtl::RoceParserRtl::Design::ExampleBuggy
                                                              : rtl::RoceParserRtl::Design::Reference);
#endif
}
Nic::~Nic() = default;

uint8_t Nic::frame_priority(const std::vector<uint8_t>& f) {
    if (f.size() < roce::kEthHdrBytes + 2) return 0;
    const uint16_t et = uint16_t(f[12] << 8 | f[13]);
    const uint8_t* ip = f.data() + roce::kEthHdrBytes;
    if (et == roce::kEtherTypeIpv4) return uint8_t(ip[1] >> 5);  // TOS: DSCP is its top six bits
    if (et == roce::kEtherTypeIpv6) return uint8_t((ip[0] & 0x0F) >> 1);  // traffic class straddles bytes 0-1
    return 0;
}

sim::Probe probe_frame(const std::vector<uint8_t>& frame) {
    const roce::HeaderVector hv = roce::parse_header_vector(frame.data(), frame.size());
    if (!hv.accepted()) return sim::Probe{0, 0, 0, uint32_t(frame.size())};
    return sim::Probe{hv.dqpn, hv.psn, hv.opcode, uint32_t(frame.size())};
}

void Nic::rtl_mismatch(const char* block, const std::string& what, const std::vector<uint8_t>& frame) {
    if (rtl_mismatch_log.size() >= kRtlMismatchDumps) return;
    std::string d = std::string(block) + " at cycle " + std::to_string(now_ps() / period_ps) + ": " + what +
                    "; frame (" + std::to_string(frame.size()) + " bytes):";
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < frame.size(); ++i) {
        if (i % 32 == 0) d += "\n   ";
        d += ' ';
        d += hex[frame[i] >> 4];
        d += hex[frame[i] & 15];
    }
    std::fprintf(stderr, "simnic model: RTL mismatch in %s\n", d.c_str());
    rtl_mismatch_log.push_back(std::move(d));
}

const char* Nic::block_name(int b) {
    static const char* const n[kNumBlocks] = {"doorbell", "requester", "tx_build", "mac_tx",
                                              "mac_rx", "parser", "icrc_check", "responder",
                                              "completer", "cqe_writer", "eqe_writer", "mgmt_core"};
    return b >= 0 && b < kNumBlocks ? n[b] : "?";
}

void Nic::rtq_admit(size_t n) {
    const uint64_t t0 = sim::now_ps();
    while (rtq_used > 0 && rtq_used + n > cfg.requester.retransmit_queue_entries) {
        // The ACK that makes room may depend on packets queued behind this
        // work (the datapath chose where AckReq goes). A real requester must
        // not deadlock on that; the model admits the work after
        // kRtqWatchdogCycles without an ACK and counts an overflow, which
        // says the queue is too small for the workload.
        const size_t before = rtq_used;
        sc_core::wait(sc_core::sc_time(double(cycles(kRtqWatchdogCycles)), sc_core::SC_PS), rtq_freed);
        if (rtq_used >= before && rtq_used + n > cfg.requester.retransmit_queue_entries) {
            ++rtq_overflows;
            break;
        }
    }
    rtq_wait_ps += sim::now_ps() - t0;
}

void Nic::rtq_take(uint32_t qpn, uint32_t psn) {
    RtqEntries& e = rtq[qpn];
    std::deque<uint32_t>& q = e.psn;
    if (q.empty() || roce::psn_before(e.newest, psn)) {
        e.newest = psn;
    } else {
        for (uint32_t p : q)
            if (p == psn) return;  // a retransmission: its entry is still held
    }
    q.push_back(psn);
    rtq_peak = std::max(rtq_peak, ++rtq_used);
    show_rtq();
}

void Nic::rtq_ack(uint32_t qpn, uint32_t psn, bool nak) {
    auto it = rtq.find(qpn);
    if (it == rtq.end()) return;
    std::deque<uint32_t>& q = it->second.psn;
    size_t freed = 0;
    while (!q.empty() && (roce::psn_before(q.front(), psn) || (!nak && q.front() == psn))) {
        q.pop_front();
        ++freed;
    }
    if (freed) {
        rtq_used -= freed;
        rtq_freed.notify(sc_core::SC_ZERO_TIME);
        show_rtq();
    }
}

void Nic::rtq_drop(uint32_t qpn) {
    auto it = rtq.find(qpn);
    if (it == rtq.end()) return;
    rtq_used -= it->second.psn.size();
    rtq.erase(it);
    rtq_freed.notify(sc_core::SC_ZERO_TIME);
    show_rtq();
}

void Nic::timer_arm(uint32_t qpn, uint8_t t, uint64_t deadline_ps) {
    const uint64_t key = timer_key(qpn, t);
    auto [it, fresh] = timer_at.try_emplace(key, deadline_ps);
    if (!fresh) {
        if (it->second == deadline_ps) return;
        timer_due.erase({it->second, key});
        it->second = deadline_ps;
    }
    timer_due.emplace(deadline_ps, key);
    timer_reschedule();
}

void Nic::timer_cancel(uint32_t qpn, uint8_t t) {
    auto it = timer_at.find(timer_key(qpn, t));
    if (it == timer_at.end()) return;
    timer_due.erase({it->second, it->first});
    timer_at.erase(it);
    timer_reschedule();
}

void Nic::timer_drop_qp(uint32_t qpn) {
    for (unsigned t = 0; t < 256; ++t) {
        auto it = timer_at.find(timer_key(qpn, uint8_t(t)));
        if (it == timer_at.end()) continue;
        timer_due.erase({it->second, it->first});
        timer_at.erase(it);
    }
    timer_reschedule();
}

void Nic::timer_reschedule() {
    // A pending notification is replaced, later or earlier: cancel first.
    timer_wake.cancel();
    if (timer_due.empty()) return;
    const uint64_t now = sim::now_ps();
    const uint64_t at = timer_due.begin()->first;
    timer_wake.notify(sc_core::sc_time(double(at > now ? at - now : 0), sc_core::SC_PS));
}

void Nic::timers_expire() {
    const uint64_t now = sim::now_ps();
    while (!timer_due.empty() && timer_due.begin()->first <= now) {
        const uint64_t key = timer_due.begin()->second;
        timer_due.erase(timer_due.begin());
        timer_at.erase(key);
        TxnPtr t = txns.take();
        t->kind = Txn::Kind::Timer;
        t->t_in = now;
        t->qpn = uint32_t(key >> 8);
        t->timer = uint8_t(key & 0xFF);
        ++timers_fired;
        timer_in.push_input(std::move(t));
    }
    timer_reschedule();
}

void Nic::reset_stats() {
    const uint64_t now = sim::now_ps();
    stats_since_ps = now;
    rtq_peak = rtq_used;
    rtq_wait_ps = 0;
    rtq_overflows = 0;
    for (auto& s : blk) s.reset(now);
    for (auto& h : stage) h.clear();
    each_chan([](auto& c) { c.reset_count(); });
    if (tap.on())
        for (const CacheSignals& c : cache_sig) {
            tap.set(now, c.hits, 0);
            tap.set(now, c.misses, 0);
        }
    dma.reset_stats();
    qpc.reset_stats();
    mpt.reset_stats();
    mtt.reset_stats();
    rx_placed_before_verdict = rx_dropped_after_placement = 0;
    rx_drops_parser = rx_drops_icrc = icrc_rtl_mismatch = parser_rtl_mismatch = icrc_rx_rtl_mismatch = 0;
    parser_rtl_ready_low = tx_build_rtl_ready_low = icrc_rtl_ready_low = 0;
    tx_build_rtl_mismatch = tx_build_rtl_skipped = 0;
    req_seg_rtl_wqes = req_seg_rtl_mismatch = req_seg_rtl_skipped = req_seg_rtl_packets = req_seg_rtl_ready_low = 0;
    recv_wqe_prefetch_hits = recv_wqe_prefetch_misses = wqe_by_mmio = 0;
    pfc_rx_frames = pfc_paused_frames = pfc_paused_ps = 0;
    rx_drops_parser_reason.fill(0);
    tx_frames = tx_wire_bytes = tx_payload_bytes = rx_frames = 0;
    // A frame on the line now opens the new span (mac.tx_throughput).
    first_tx_ps = blk[kMacTx].busy_depth ? now : 0;
    last_tx_ps = 0;
    eqes = fw_commands = 0;
    interrupts = interrupt_wake_ps = moderated_cqes = cq_arms = 0;
    latency_ps.clear();
}

void Nic::lookup(TableCache& cache, uint32_t key, sim::BlockStats& st) {
    wait_ps(cycles(cache.config().hit_cycles));
    lookup_out(cache, key, st);
}

void Nic::lookup_out(TableCache& cache, uint32_t key, sim::BlockStats& st) {
    const bool hit = cache.access(key);
    if (tap.on()) {
        const CacheSignals& c = cache_sig[&cache == &qpc ? 0 : &cache == &mpt ? 1 : 2];
        const uint64_t t = now_ps();
        tap.pulse(t, hit ? c.hit : c.miss, period_ps);
        tap.set(t, hit ? c.hits : c.misses, hit ? cache.stats().hits : cache.stats().misses);
    }
    if (hit) return;
    sim::stall_until(st, dma.read(now_ps(), cache.config().entry_bytes, DmaPurpose::Context));
}

void Nic::lookup_ahead(TableCache& cache, uint32_t key, sim::BlockStats& st, uint64_t& t) {
    t += cycles(cache.config().hit_cycles);
    // A hit is decided at the lookup's issue (the tags as they stand), where
    // lookup() decides it at data out, hit_cycles later: a hit's LRU stamp
    // may come before another block's access within those cycles. With a
    // waveform armed, every lookup is decided at data out, so that its hit
    // or miss pulse is on its own edge.
    if (!tap.on() && cache.touch(key)) return;
    // A miss is decided, and its entry installed, at data out, as lookup()
    // does: another block's lookup meanwhile may have installed it.
    wait_until(t);
    lookup_out(cache, key, st);
    t = now_ps();
}

size_t Nic::play_completion(const OpRecord& rec, size_t i, uint32_t qpn, uint64_t writes_done,
                             sim::BlockStats& st) {
    const Op& o = rec.ops[i];
    auto completion_event = [&](size_t k, uint32_t cqn) {
        return k < rec.ops.size() && rec.ops[k].kind == Op::Kind::Eqe &&
               rec.ops[k].id == uint32_t(hw::EventType::Completion) && rec.ops[k].aux == cqn;
    };
    if (o.kind == Op::Kind::Cqe) {
        CqeTok c{o.id, qpn, o.aux, o.is_send, writes_done};
        c.mod_own = o.cq_mod_en;
        c.mod_count = o.cq_mod_count;
        c.mod_period_us = o.cq_mod_period_us;
        // The datapath posts an armed CQ's event right after the CQE.
        c.event = completion_event(i + 1, o.id);
        cq_in.write(c, &st);
        return c.event ? i + 1 : i;
    }
    if (completion_event(i, o.aux)) {
        CqeTok c{o.aux, qpn, 0, false, writes_done};
        c.event = c.event_only = true;
        cq_in.write(c, &st);
        return i;
    }
    eq_in.write(o.id, &st);
    return i;
}

void Nic::wave_declare() {
    const uint64_t now = now_ps();
    each_chan([this](auto& c) { c.declare(tap); });
    for (int b = 0; b < kNumBlocks; ++b) {
        sim::BlockStats& s = blk[b];
        const std::string scope = std::string("nic.") + block_name(b);
        // A busy interval may open ahead of now (BusyScope's from_ps).
        const bool ahead = s.busy_depth && s.busy_open_ps > now;
        s.busy_sig = tap.declare(scope, "busy", 1, s.busy_depth && !ahead ? 1 : 0);
        s.stall_sig = tap.declare(scope, "stall", 1, s.stall_depth ? 1 : 0);
        s.tap = &tap;
        if (ahead) tap.set_later(s.busy_open_ps, s.busy_sig, 1);
    }
    const std::pair<const char*, TableCache*> caches[3] = {{"qpc_cache", &qpc}, {"mpt_cache", &mpt},
                                                           {"mtt_cache", &mtt}};
    for (int i = 0; i < 3; ++i) {
        const std::string scope = std::string("nic.") + caches[i].first;
        const TableCache::Stats& cs = caches[i].second->stats();
        cache_sig[i].hit = tap.declare(scope, "hit", 1, 0);
        cache_sig[i].miss = tap.declare(scope, "miss", 1, 0);
        cache_sig[i].hits = tap.declare(scope, "hits", 32, cs.hits & 0xFFFFFFFF);
        cache_sig[i].misses = tap.declare(scope, "misses", 32, cs.misses & 0xFFFFFFFF);
    }
    // What is in flight already: tags and link transfers that end later.
    uint64_t tags = 0;
    for (uint64_t t : dma.tag_free()) tags += t > now;
    dma_sig.tap = &tap;
    dma_sig.tags = tap.declare("nic.dma", "tags_in_flight", 16, tags);
    dma_sig.in = tap.declare("nic.dma", "link_in_busy", 1, dma.link_in_free() > now);
    dma_sig.out = tap.declare("nic.dma", "link_out_busy", 1, dma.link_out_free() > now);
    for (uint64_t t : dma.tag_free())
        if (t > now) tap.add_at(t, dma_sig.tags, -1);
    if (dma.link_in_free() > now) tap.add_at(dma.link_in_free(), dma_sig.in, -1);
    if (dma.link_out_free() > now) tap.add_at(dma.link_out_free(), dma_sig.out, -1);
    dma.observe(&dma_sig);
    sig_rtq = tap.declare("nic.requester", "rtq_entries_used", 24, rtq_used);
}

void Nic::wave_undeclare() {
    each_chan([](auto& c) { c.undeclare(); });
    for (sim::BlockStats& s : blk) {
        s.tap = nullptr;
        s.busy_sig = s.stall_sig = sim::Tap::kNone;
    }
    for (CacheSignals& c : cache_sig) c = CacheSignals{};
    dma.observe(nullptr);
    dma_sig = DmaSignals{};
    sig_rtq = sim::Tap::kNone;
}

size_t Nic::play_memory(OpRecord& rec, size_t i, sim::BlockStats& st, uint64_t& payload_ready,
                        uint64_t& writes_done, bool block_on_reads, uint32_t qpn,
                        std::vector<DmaArrival>* payload_spans, const Txn* early) {
    // The block's own clock: lookups that hit move it on without a wait of
    // the kernel's (lookup_ahead), and any other op first brings the
    // kernel's time up to it, so that every op starts when it would if each
    // lookup had waited. Each lookup was a timed wait of its own, a third
    // of a packet's timed waits, and a timed wait costs the SystemC kernel
    // about 650 instructions (docs/model.md, Table lookups on the block's
    // own clock).
    uint64_t clock_ps = now_ps();
    for (; i < rec.ops.size() && is_memory_op(rec.ops[i].kind); ++i) {
        const Op& o = rec.ops[i];
        const bool table = o.kind == Op::Kind::Qpc || o.kind == Op::Kind::Mpt || o.kind == Op::Kind::Mtt;
        const bool placing = table || (o.kind == Op::Kind::DmaRead && o.purpose == DmaPurpose::RecvWqe) ||
                             (o.kind == Op::Kind::DmaWrite && o.purpose == DmaPurpose::Payload);
        if (!table) wait_until(clock_ps);
        if (early && !placing) sim::stall_until(st, early->verdict_ps);
        switch (o.kind) {
            case Op::Kind::Qpc: lookup_ahead(qpc, o.id, st, clock_ps); break;
            case Op::Kind::Mpt: lookup_ahead(mpt, o.id, st, clock_ps); break;
            case Op::Kind::Mtt: lookup_ahead(mtt, o.id, st, clock_ps); break;
            case Op::Kind::DmaRead: {
                if (o.purpose == DmaPurpose::RecvWqe && cfg.doorbell.recv_wqe_prefetch) {
                    rq_stride[qpn] = o.bytes;
                    auto p = rq_prefetched.find(qpn);
                    if (p != rq_prefetched.end() && !p->second.empty()) {
                        // Read when it was posted: waited for only if that
                        // read is still on its way.
                        const uint64_t on_chip = p->second.front();
                        p->second.pop_front();
                        ++recv_wqe_prefetch_hits;
                        sim::stall_until(st, on_chip);
                        break;
                    }
                    ++recv_wqe_prefetch_misses;
                }
                const uint64_t t0 = now_ps();
                // Payload for a frame overlaps with what follows; anything the
                // datapath must see before it can go on (a receive WQE, an
                // atomic's old value) is waited for.
                const bool overlap = !block_on_reads && o.purpose == DmaPurpose::Payload;
                const uint64_t t = dma.read(t0, o.bytes, o.purpose, overlap ? payload_spans : nullptr);
                if (overlap) {
                    payload_ready = std::max(payload_ready, t);
                } else {
                    sim::stall_until(st, t);
                }
                break;
            }
            case Op::Kind::DmaWrite: {
                uint64_t at = now_ps();
                if (early && o.purpose == DmaPurpose::Payload) {
                    // Placed as it streams in: the TLPs follow the payload's
                    // beats, the last (max_payload_bytes) once the last byte is in.
                    const uint32_t last_tlp = std::min<uint32_t>(o.bytes, std::max(1u, cfg.dma.max_payload_bytes));
                    const uint64_t ahead = dma.link_ps(o.bytes) - dma.link_ps(last_tlp);
                    if (early->payload_in_ps > at + ahead) at = early->payload_in_ps - ahead;
                }
                writes_done = std::max(writes_done, dma.write(at, o.bytes, o.purpose));
                break;
            }
            default: break;
        }
        if (!table) clock_ps = now_ps();
    }
    wait_until(clock_ps);
    return i;
}

}  // namespace simnic::model
