#include "blocks/tx_build.h"

#include <algorithm>
#include <cstdio>

#include "icrc_engine_rtl.h"
#include "simnic/roce/icrc.h"
#include "tx_build_rtl.h"

namespace simnic::model {

using sim::now_ps;
using sim::wait_ps;
using sim::wait_until;

namespace {

// The payload bytes `spans` bring in from host memory.
uint64_t payload_bytes(const std::vector<DmaArrival>& spans) {
    uint64_t n = 0;
    for (const DmaArrival& a : spans) n += a.bytes;
    return n;
}

// Whether `spans` can be the payload of a frame of `frame_bytes` (room for
// it, its pad and the ICRC): otherwise TX build does not stream it and
// waits for all of it, as store-and-forward.
bool streamable(size_t frame_bytes, const std::vector<DmaArrival>& spans) {
    const uint64_t payload = payload_bytes(spans);
    return payload > 0 && frame_bytes >= (payload + 3) / 4 * 4 + 4;
}

// pipeline.cut_through, a streamable frame: when the last of its beats is
// out of TX build if it starts at `s` with one beat a cycle and each beat
// waits for the payload bytes it carries. The frame is its headers, the
// payload, the pad to 4 and the ICRC; `spans` bring the payload in, in
// order, from host memory.
uint64_t paced_last_beat(uint64_t s, uint64_t cycle_ps, uint32_t width, size_t frame_bytes,
                         const std::vector<DmaArrival>& spans) {
    const uint64_t beats = (frame_bytes + width - 1) / width;
    const uint64_t payload = payload_bytes(spans);
    const uint64_t hdr = frame_bytes - 4 - (payload + 3) / 4 * 4;
    uint64_t out = s;  // when the beat before is out
    for (uint64_t j = 0; j < beats; ++j) {
        const uint64_t end = (j + 1) * width;  // the frame's bytes through beat j
        const uint64_t need = end <= hdr ? 0 : std::min(payload, end - hdr);
        if (need) out = std::max(out, arrival_of(spans, need));
        out += cycle_ps;
    }
    return out;
}

}  // namespace

bool TxBuildBlock::rtl_header(std::vector<uint8_t>& b, uint64_t& in_cycles, uint64_t& hdr_latency, uint64_t& low,
                              sim::BlockStats& st) {
    rtl::TxHeaderDesc d;
    size_t hdr_len = 0;
    if (!rtl::tx_header_desc_of_frame(b.data(), b.size(), d, &hdr_len)) {
        ++nic.tx_build_rtl_skipped;  // sent as the datapath built it, at the C++ model's timing
        return false;
    }
    // The header's first beat is the frame's first into the queue to MAC
    // TX: while that is full, m_axis_tready_i is low on its edges (the ICRC
    // engine after the builder gets no beat either).
    const uint64_t s0 = now_ps();
    const rtl::TxBuildResult r = nic.tx_build_rtl->build(d, [&](uint64_t first_edge) {
        return low = nic.wait_room_from(nic.txb_to_mac, s0 + nic.cycles(first_edge), st, &nic.tx_build_rtl_ready_low,
                                        nic.icrc_rtl ? &nic.icrc_rtl_ready_low : nullptr);
    });
    if (r.held_valid != r.held) {
        ++nic.tx_build_rtl_mismatch;
        nic.rtl_mismatch("tx_build",
                         "the header's first beat was not held with m_axis_tready_i low: on the port unchanged after " +
                             std::to_string(r.held_valid) + " of " + std::to_string(r.held) + " edges",
                         b);
    }
    // Its own cycles: the descriptor's stalls, the header's beats as the
    // RTL sent them (bubbles included), then the beats that carry payload
    // only; its latency to the first beat is pipelined like the ICRC's.
    const uint64_t hdr_beats = nic.cfg.beats(uint32_t(hdr_len));
    in_cycles = (r.desc_cycles - 1) + r.out_cycles + (in_cycles - std::min(in_cycles, hdr_beats));
    hdr_latency = nic.tx_build_rtl_latency = r.latency;
    if (r.header.size() == hdr_len && std::equal(r.header.begin(), r.header.end(), b.begin())) return true;
    ++nic.tx_build_rtl_mismatch;
    size_t at = 0;
    while (at < hdr_len && at < r.header.size() && r.header[at] == b[at]) ++at;
    char w[160];
    if (at < hdr_len && at < r.header.size())
        std::snprintf(w, sizeof w, "header byte %zu from the RTL %02x, from the datapath %02x (%zu header bytes)", at,
                      r.header[at], b[at], hdr_len);
    else
        std::snprintf(w, sizeof w, "header of %zu bytes from the RTL, %zu from the datapath", r.header.size(),
                      hdr_len);
    nic.rtl_mismatch("tx_build", w, b);
    // The RTL's header goes on the wire, as the parser's record is the one
    // the RX pipeline follows, and the ICRC after it covers it (the ICRC
    // engine's place in the stage). One of another length cannot replace
    // the datapath's: that frame goes as built.
    if (r.header.size() != hdr_len || b.size() < hdr_len + roce::kIcrcBytes) return true;
    std::copy(r.header.begin(), r.header.end(), b.begin());
    const size_t l3 = d.has_vlan ? 18 : 14, l4 = l3 + (d.ip_version == 6 ? 40 : 20);
    const uint32_t icrc = roce::compute_icrc(b.data(), b.size(), l3, l4,
                                             d.ip_version == 6 ? roce::IpVersion::V6 : roce::IpVersion::V4);
    for (size_t k = 0; k < 4; ++k) b[b.size() - 4 + k] = uint8_t(icrc >> (8 * k));
    return true;
}

void TxBuildBlock::main() {
    for (;;) {
        // Responses (ACKs, READ responses) first: they are short and the
        // peer's requester is waiting on them.
        sim::wait_any(either_, nic.rxt_to_txb, nic.qp1_to_txb, nic.req_to_txb);
        uint64_t pushed = 0;
        FrameTok f = !nic.rxt_to_txb.empty()   ? nic.rxt_to_txb.read(&pushed)
                     : !nic.qp1_to_txb.empty() ? nic.qp1_to_txb.read(&pushed)
                                               : nic.req_to_txb.read(&pushed);
        sim::BlockStats& st = nic.blk[Nic::kTxBuild];
        const uint64_t in = std::max(pushed, f.ready_ps);
        // Payload still on its way from host memory: store-and-forward
        // waits for all of it; streamed, TX build starts when the first of
        // it comes in and paces its beats to the rest (paced_last_beat).
        const bool stream = nic.cut_through && streamable(f.f.bytes.size(), f.payload);
        sim::stall_until(st, stream ? f.payload.front().start_ps : f.ready_ps);
        uint64_t ready = 0;
        {
            sim::BusyScope busy(st);
            std::vector<uint8_t>& b = f.f.bytes;
            // The C++ model: tx_build.latency_cycles to the first beat, the
            // frame's beats, then icrc.latency_cycles.
            const uint64_t beats = nic.cfg.beats(uint32_t(b.size()));
            uint64_t in_cycles = beats, latency = nic.cfg.icrc.latency_cycles;
            uint64_t hdr_latency = nic.cfg.tx_build.latency_cycles;
            // Where the frame starts, and the edges an RTL held its first
            // beat for room in the queue to MAC TX (the C++ model hands the
            // frame on whenever the queue has room, as before).
            const uint64_t s0 = now_ps();
            uint64_t low = 0;
            // The RTL builds the headers from the frame's descriptor,
            // checked against the datapath's; its own cycles set the timing,
            // and its first beat waits for room after TX build.
            const bool rtl_built = nic.tx_build_rtl && rtl_header(b, in_cycles, hdr_latency, low, st);
            if (!rtl_built && nic.icrc_rtl && nic.txb_to_mac.full()) {
                // The ICRC engine has no output ready, so the stage does not
                // offer it the frame (s_axis_tvalid_i low) while the queue
                // its result goes to is full: the frame waits at its first
                // beat.
                low = nic.wait_room_from(nic.txb_to_mac, s0 + nic.cycles(1 + hdr_latency), st,
                                         &nic.icrc_rtl_ready_low);
            }
            // The frame goes on `low` cycles later than it could have.
            const uint64_t s = s0 + nic.cycles(low);
            if (nic.icrc_rtl && b.size() >= 4) {
                // The RTL's ICRC goes on the frame, checked against the one
                // the datapath computed; its own cycles set the timing.
                const uint32_t carried = uint32_t(b[b.size() - 4]) | uint32_t(b[b.size() - 3]) << 8 |
                                         uint32_t(b[b.size() - 2]) << 16 | uint32_t(b[b.size() - 1]) << 24;
                const std::vector<rtl::IcrcResult> r = nic.icrc_rtl->run({b});
                if (!r.empty() && !r[0].err) {
                    // The engine's stream cycles, and the header builder's
                    // stalls and bubbles in front of it (the stream is theirs
                    // in turn).
                    in_cycles = r[0].last_beat_cycle - r[0].first_beat_cycle + 1 +
                                (in_cycles > beats ? in_cycles - beats : 0);
                    latency = nic.icrc_rtl_latency = r[0].valid_cycle - r[0].last_beat_cycle;
                    if (r[0].icrc != carried) {
                        ++nic.icrc_rtl_mismatch;
                        char w[64];
                        std::snprintf(w, sizeof w, "TX ICRC from the RTL %08x, from the datapath %08x", r[0].icrc,
                                      carried);
                        nic.rtl_mismatch("tx_build", w, b);
                    }
                    for (int k = 0; k < 4; ++k) b[b.size() - 4 + size_t(k)] = uint8_t(r[0].icrc >> (8 * k));
                }
            }
            if (nic.cut_through) {
                // The frame streams on to MAC TX: its first beat is out a
                // cycle after it started, its last after all its beats, each
                // no earlier than a cycle after its payload came in, and the
                // ICRC that goes at its end.
                // Beats held for payload (none without a streamed payload: an
                // ACK, inline data).
                const uint64_t paced =
                    stream ? paced_last_beat(s, nic.cycles(1), nic.cfg.mac.width_bytes, b.size(), f.payload) : 0;
                const uint64_t waited = paced - std::min(paced, s + nic.cycles(beats));
                f.head_ps = s + nic.cycles(1 + hdr_latency);
                f.ready_ps = s + nic.cycles(in_cycles + hdr_latency + latency) + waited;
                ready = f.ready_ps;
                f.payload.clear();
                wait_until(f.head_ps);
                nic.txb_to_mac.write(std::move(f), &st);
                wait_until(s + nic.cycles(in_cycles) + waited);  // the rest of its beats (latency pipelined)
            } else {
                const uint64_t end = s + nic.cycles(in_cycles);
                wait_until(end);
                f.ready_ps = ready = end + nic.cycles(hdr_latency + latency);
            }
        }
        if (!nic.cut_through) nic.txb_to_mac.write(std::move(f), &st);
        nic.stage_sample(Nic::kTxBuild, in, std::max(now_ps(), ready));
    }
}

}  // namespace simnic::model
