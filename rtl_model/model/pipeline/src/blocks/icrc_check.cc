#include "blocks/icrc_check.h"

#include <string>

#include "icrc_engine_rtl.h"
#include "simnic/roce/opcode.h"
#include "simnic/roce/packet.h"

namespace simnic::model {

using sim::now_ps;
using sim::wait_ps;
using sim::wait_until;

void IcrcCheckBlock::main() {
    for (;;) {
        uint64_t pushed = 0;
        TxnPtr t = nic.parser_to_icrc.read(&pushed);
        // Cut-through: the ICRC check starts on the frame's first beat;
        // the stage is what it adds to the frame's last beat.
        const uint64_t in = nic.cut_through ? t->ready_ps : std::max(pushed, t->ready_ps);
        const uint64_t start = nic.cut_through ? t->head_ps : t->ready_ps;
        // The check's work from `start` touches nothing another block sees
        // until it hands the frame on: it is timed from `start` and waited
        // for once, at the hand-over (one wake of this process per frame,
        // not two). With its RTL the stage looks at the queue it hands on
        // to, and placing before the verdict hands on at `start`: those
        // wait for it first.
        if (nic.icrc_rtl || nic.place_before_verdict) wait_until(start);
        uint64_t s = std::max(start, now_ps());  // when the check starts
        sim::BlockStats& st = nic.blk[Nic::kIcrcCheck];
        // The ICRC engine has no output ready: with its RTL the stage holds
        // the frame back (s_axis_tvalid_i low) while the queue its verdict
        // goes to is full, and offers it on the first edge with room.
        if (nic.icrc_rtl && nic.rx_in.full()) {
            wait_until(s + nic.cycles(nic.wait_room_from(nic.rx_in, s, st, &nic.icrc_rtl_ready_low)));
            s = now_ps();
        }
        bool ok = false, handed_on = false;
        {
            sim::BusyScope busy(st, true, s);
            const std::vector<uint8_t>& b = t->frame;
            // The C++ model: the frame's beats, then icrc.latency_cycles.
            uint64_t in_cycles = nic.cfg.beats(uint32_t(b.size())), latency = nic.cfg.icrc.latency_cycles;
            // The packet the parser decoded: only its ICRC is computed here
            // (the same check decode_frame makes). Without it (an RTL
            // parser passed a frame its C++ twin did not), decoded anew.
            roce::DecodeResult dr;
            if (t->decoded) {
                dr = roce::check_icrc(b.data(), *t->pkt);
            } else {
                roce::Packet p;
                roce::DecodeOptions o;
                o.check_ip_checksum = false;
                dr = roce::decode_frame(b.data(), b.size(), p, o);
            }
            const bool cpp_ok = dr.error != roce::DecodeError::BadIcrc;
            ok = cpp_ok;
            // Decoded with its ICRC right: the datapath need not check it
            // again (exec_rx). A frame the decoder failed for another
            // reason was not checked, and one that only the RTL passes is
            // checked there.
            t->icrc_good = dr.ok();
            if (nic.icrc_rtl) {
                // The RTL's verdict is the one the pipeline follows, and its
                // own cycles set the timing (beats taken, then its latency);
                // the C++ verdict is the reference it is checked against.
                const std::vector<rtl::IcrcResult> r = nic.icrc_rtl->run({b});
                ok = !r.empty() && r[0].ok && !r[0].err;
                if (!r.empty() && !r[0].err) {
                    in_cycles = r[0].last_beat_cycle - r[0].first_beat_cycle + 1;
                    latency = nic.icrc_rtl_latency = r[0].valid_cycle - r[0].last_beat_cycle;
                }
                if (ok != cpp_ok) {
                    ++nic.icrc_rx_rtl_mismatch;
                    nic.rtl_mismatch("icrc_check", std::string("RTL verdict ") + (ok ? "good" : "bad") +
                                                       ", C++ verdict " + (cpp_ok ? "good" : "bad"),
                                     b);
                }
            }
            if (nic.cut_through) {
                // The CRC runs over the beats as they come; the verdict is
                // out `latency` after the last. The frame goes to the
                // transport only with its verdict (and its header vector):
                // its payload waits on chip until then, so a frame with a
                // bad ICRC is never delivered, as with store-and-forward.
                const uint64_t last = std::max(s + nic.cycles(in_cycles), t->ready_ps + nic.cycles(1));
                const uint64_t verdict = std::max(last + nic.cycles(latency), t->hdr_ps);
                const roce::OpcodeInfo& oi = roce::opcode_info(t->opcode);
                if (nic.place_before_verdict && oi.has(roce::kRequest) && oi.has(roce::kPayload) &&
                    (oi.has(roce::kSend) || oi.has(roce::kWrite))) {
                    // Placed before the verdict: a SEND or WRITE goes to the
                    // responder with its header vector, its payload
                    // streaming behind; the verdict follows it (the
                    // responder completes and acknowledges only then, or
                    // drops the packet after placing it).
                    t->payload_in_ps = last;
                    t->verdict_ps = verdict;
                    t->icrc_bad = !ok;
                    t->ready_ps = std::max(now_ps(), t->hdr_ps);
                    nic.rx_in.write(t, &st);
                    handed_on = true;
                    wait_until(last);
                } else {
                    wait_until(last);
                    t->ready_ps = verdict;
                }
            } else {
                wait_until(s + nic.cycles(in_cycles));
                t->ready_ps = now_ps() + nic.cycles(latency);
            }
        }
        if (handed_on) {
            // The responder counts the drop (after placing the payload).
            if (!ok) ++nic.rx_drops_icrc;
            nic.stage_sample(Nic::kIcrcCheck, in, std::max(now_ps(), t->verdict_ps));
            continue;
        }
        if (!ok) {
            nic.stage_sample(Nic::kIcrcCheck, in, t->ready_ps);
            ++nic.rx_drops_icrc;
            nic.be.rx_dropped(true);
            continue;
        }
        nic.rx_in.write(t, &st);
        nic.stage_sample(Nic::kIcrcCheck, in, std::max(now_ps(), t->ready_ps));
    }
}

}  // namespace simnic::model
