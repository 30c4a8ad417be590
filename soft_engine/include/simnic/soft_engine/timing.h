// How a timing model plugs into the engine (a `model` device's cycle-level
// pipeline, rtl_model/model): the interface is the engine's, so the engine
// links no SystemC and knows no model, and the model depends on the engine's
// header, never the other way round.
//
// The cycle model is execution-driven: a pipeline stage calls the functional
// datapath (the same code the soft device runs, so the protocol is never
// forked) at the simulated instant the work reaches that stage, and the
// datapath records here every table access, DMA transfer, frame, CQE and EQE
// it performed. The stage then plays the record through the blocks that own
// those resources (caches, DMA engine, TX path, CQ/EQ writers), which is
// where the time goes.
//
// Without a timing model (a `soft` device) the engine executes each input
// the moment it arrives and records nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "simnic/roce/packet.h"
#include "simnic/transport/segmentation.h"

namespace simnic::soft_engine {

// Why a DMA transfer happened (the DMA engine counts bytes per purpose).
enum class DmaPurpose : uint8_t { WqeFetch, RecvWqe, Payload, Atomic, Cqe, Eqe, Context, kCount };

struct Op {
    enum class Kind : uint8_t {
        Qpc,       // id = qpn: the QP's context is needed (QPC cache)
        Mpt,       // id = MPT index of the key being checked (MPT cache)
        Mtt,       // id = MTT index of one translated page (MTT cache)
        DmaRead,   // bytes read from host memory, purpose
        DmaWrite,  // bytes written to host memory, purpose
        WqeFetched,  // id = qpn, aux = WQE ring index (a send WQE entered the requester)
        TxFrame,   // aux = index into OpRecord::frames
        Cqe,       // id = cqn, aux = WQE index, is_send, cq_mod_*
        Eqe,       // id = event type, aux = the object (a completion event's CQN)
    };
    Kind kind;
    DmaPurpose purpose = DmaPurpose::Payload;
    bool is_send = false;
    // Cqe: the CQ's own interrupt moderation, as its CQC held it when the
    // CQE was written (MODIFY_CQ, hw-spec 5.6.6 and 9.3): whether it has
    // one (false: the device's default), CQEs per event and the longest
    // wait in us. Only a timing model uses it (its interrupt moderation);
    // one that delivers_cq_events() sends the application's event then.
    bool cq_mod_en = false;
    uint16_t cq_mod_count = 0;
    uint16_t cq_mod_period_us = 0;
    uint32_t id = 0;
    uint32_t bytes = 0;
    uint32_t aux = 0;
};

// A frame the datapath built: the complete Ethernet frame (ICRC included),
// and the header facts the timing blocks and statistics want.
struct TxFrameRec {
    std::vector<uint8_t> bytes;
    uint32_t qpn = 0;  // source QP
    uint32_t psn = 0;
    uint8_t opcode = 0;
    uint32_t payload = 0;  // payload bytes (without headers, pad, ICRC)
    // A request packet: the segmentation step that made it (the WQE with
    // start_pkt this packet, count 1 and the QP's AckReq count before it,
    // and what segmentation gave), for a model's segmentation stage.
    bool has_seg = false;
    transport::SegWqe seg_wqe;
    transport::SegPacket seg;
};

struct OpRecord {
    std::vector<Op> ops;
    std::vector<TxFrameRec> frames;
    void clear() {
        ops.clear();
        frames.clear();
    }
    void add(Op::Kind k, uint32_t id = 0, uint32_t bytes = 0, uint32_t aux = 0,
             DmaPurpose p = DmaPurpose::Payload, bool is_send = false) {
        Op o{k};
        o.id = id;
        o.bytes = bytes;
        o.aux = aux;
        o.purpose = p;
        o.is_send = is_send;
        ops.push_back(o);
    }
};

// A doorbell as the doorbell FIFO delivers it (hw-spec 3.4).
struct Doorbell {
    uint16_t ctx = 0;
    uint8_t kind = 0;  // hw::DbKind
    uint32_t num = 0;
    uint32_t index = 0;
    uint32_t cq_cmd = 0;
    uint32_t cq_seen = 0;  // CQ arm: the producer index the driver saw (hw-spec 7.3)
};

// The functional datapath, as a timing model's stages call it (the engine
// implements it). Each exec_* runs the protocol for one input and records
// what it did into `rec`.
class Datapath {
public:
    virtual ~Datapath() = default;
    virtual void exec_doorbell(const Doorbell& db, OpRecord& rec) = 0;
    // An Ethernet frame that passed the parser and the ICRC check.
    // `icrc_checked`: the model's C++ ICRC check found this frame's ICRC
    // right, so the datapath need not compute it again (a third of a
    // received frame's CRC work). False when only an RTL verdict let it
    // through, or nothing checked it: the datapath checks then.
    // `decoded`: the packet the model's parser decoded from `frame`
    // (roce::decode_frame, IPv4 header checksum checked), so that the
    // datapath need not decode it again; null: it decodes the frame.
    virtual void exec_rx(const uint8_t* frame, size_t len, bool icrc_checked, OpRecord& rec,
                         const roce::Packet* decoded) = 0;
    // A frame the model's RX dropped before exec_rx: its parser found a bad
    // header (`bad_icrc` false) or its ICRC check a bad ICRC. The engine
    // counts it in the device's statistics block under the names the soft
    // path's decode failures have (rx_drops_bad_hdr, icrc_errors), so that
    // `simnic stats` means the same on both device types.
    virtual void rx_dropped(bool bad_icrc) = 0;
    // A request frame whose payload a model that places before the ICRC
    // verdict (pipeline.place_before_verdict) wrote while it streamed in,
    // and whose ICRC then turned out bad: the payload bytes the responder
    // would have placed, and only inside memory its checks validated (the
    // RETH's rkey and range, the receive WQE's SGEs: Responder::placement),
    // 0 if none. Nothing is executed: no PSN advance, no CQE, no ACK, and
    // no data is written (the buffer's content is undefined until the
    // retransmitted copy completes; the model leaves it as it was). The
    // lookups it made (QPC, MPT, a receive WQE's read) go into `rec`.
    virtual uint32_t probe_placement(const uint8_t* frame, size_t len, OpRecord& rec) {
        (void)frame, (void)len, (void)rec;
        return 0;
    }
    virtual void exec_timer(uint32_t qpn, uint8_t timer, OpRecord& rec) = 0;
    // A frame leaves MAC TX (the engine puts it on the wire).
    virtual void wire_tx(const uint8_t* frame, size_t len) = 0;
    // The model's interrupt for CQ `cqn` (TimingModel::delivers_cq_events):
    // the application's completion event that the datapath raised for this
    // CQ (recorded as an Eqe op, EventType::Completion) and the engine has
    // held since goes to the host now, the oldest first. `period_ns`: the
    // CQ's moderation period held it this long (the count was not reached);
    // 0: the count, or no moderation, sent it. `cqes_to_count`: with a
    // period, the CQEs the count still wanted (0: no count), which the
    // engine counts in wall-clock time while the event waits out its period
    // there. A call that finds no event held for the CQ (destroyed since)
    // does nothing.
    virtual void cq_event(uint32_t cqn, uint64_t period_ns, uint32_t cqes_to_count) {
        (void)cqn, (void)period_ns, (void)cqes_to_count;
    }
};

// A timing model, as the engine drives it. With one, the engine hands every
// input (doorbell, received frame, timer) to the model instead of executing
// it, and the model calls back into the Datapath at the simulated instant
// each step happens. The engine calls these under its device lock only.
class TimingModel {
public:
    virtual ~TimingModel() = default;
    // Inputs, stamped with the model's current time.
    virtual void doorbell(const Doorbell& db) = 0;
    virtual void rx_frame(const uint8_t* frame, size_t len) = 0;
    // The same, for a frame the engine hands over whole (its buffer moves
    // into the model instead of being copied).
    virtual void rx_frame(std::vector<uint8_t>&& frame) { rx_frame(frame.data(), frame.size()); }
    // A frame built outside the datapath (QP1's MADs, which the host's CM
    // sends) enters the model's TX path at its current time and leaves as
    // the datapath's frames do. False: the model has no such path (its
    // device has a port of its own, which the engine sends the frame to).
    virtual bool tx_frame(const uint8_t* frame, size_t len) {
        (void)frame, (void)len;
        return false;
    }
    virtual void timer(uint32_t qpn, uint8_t timer) = 0;
    // A firmware command ran (the management core is charged for it).
    virtual void fw_command(uint16_t opcode) = 0;
    // The QP was reset, moved to error or destroyed: what it holds in flight
    // will never be acknowledged.
    virtual void qp_reset(uint32_t qpn) = 0;
    // The CQ, SRQ or QP (hw::DbKind `kind`, number `num`) is being
    // destroyed: doorbells rung for it and still inside the model are
    // dropped, so that they never reach an object that reuses the number.
    virtual void forget_doorbells(uint8_t kind, uint32_t num) = 0;
    // True: the model raises the applications' completion events itself,
    // when its interrupt (with its moderation) fires: the engine holds each
    // completion event the datapath raises while recording and posts it at
    // Datapath::cq_event. False: the engine posts them at once.
    virtual bool delivers_cq_events() const { return false; }
    // Runs the model until it has no work. Returns the time units advanced.
    virtual uint64_t run() = 0;
    // Runs the model until it has no work, or until frames it sent to the
    // wire may be answered (the model cuts its time in quanta for that);
    // true if work is left. The engine looks at its port in between, so
    // that what a device sent comes back (through the kernel, from a peer)
    // while it is still busy, not only once it went idle. Without quanta:
    // run() to idle.
    virtual bool run_quantum() {
        run();
        return false;
    }
    // run(), but it stops early, with work left (true), at the end of a
    // quantum in which frames went to the wire and `lagging()` became true:
    // the port's receive path has fallen behind them (Port::rx_lagging),
    // and the engine must take them in before the model sends more. Only
    // a burst that no window bounds gets there (a deep queue of UC SENDs to
    // the device itself); otherwise, and without quanta, this is run().
    // No input enters between the quanta, so the simulation is the same.
    virtual bool run_unless_lagging(const std::function<bool()>& lagging) {
        (void)lagging;
        run();
        return false;
    }
    // Runs the model until every doorbell given to it so far has been
    // taken (its WQEs fetched and decoded: a UD WQE's address vector read
    // from its AH), at least; true if work is left, which the engine then
    // simulates in its next pass. What a command that takes away what a
    // posted WQE names waits for (an AH: SoftEngine::ah_destroying). By
    // default run() to idle, which is bounded when protocol time is host
    // time: the model's own work ends.
    virtual bool take_doorbells() {
        run();
        return false;
    }
    // A quiet gap: nothing happens in the model for longer than a quantum
    // before its next event (a protocol timer, a paused link, a paced
    // sender's next packet): the simulated time to that event, in ns. 0
    // while busy (an event within the quantum) or idle (none at all). A
    // fabric's engines jump such a gap only once as much wall time has
    // passed with nothing new (EngineGroup::quiet_until_ns), so that its
    // timers never expire before a real application could act.
    virtual uint64_t quiet_gap_ns() const { return 0; }

    // Protocol time: the clock of the QPs' timers (retransmit, RNR, DCQCN's
    // rate limiter) and of DCQCN's reaction and notification points
    // (transport::TimerPort). By default it is the engine's host monotonic
    // clock, and the engine keeps the deadlines and hands an expired one to
    // timer(): right for a device whose peers are real (a slow peer never
    // meets a timer that fired early in simulated time). A model whose
    // every peer lives in its own simulated time (a fabric's device) says
    // so here, and then keeps protocol time itself: the engine reads the
    // time from now_ns() and gives it every arm and cancel; when a deadline
    // is reached in simulated time, the model runs the timer as it runs
    // timer()'s (Datapath::exec_timer).
    virtual bool simulated_protocol_time() const { return false; }
    // Simulated time, ns (with simulated_protocol_time() only).
    virtual uint64_t now_ns() const { return 0; }
    // Arms (or re-arms) timer `timer` of QP `qpn` for simulated time
    // `deadline_ns` (now if it has passed); cancels it. One deadline per QP
    // and timer, as the engine keeps them.
    virtual void arm_timer(uint32_t qpn, uint8_t timer, uint64_t deadline_ns) {
        (void)qpn, (void)timer, (void)deadline_ns;
    }
    virtual void cancel_timer(uint32_t qpn, uint8_t timer) { (void)qpn, (void)timer; }
};

// Builds the timing model of a device around the engine's datapath; null
// and `err` on failure. `standalone`: the engine has no wire (EngineConfig).
using TimingFactory =
    std::function<std::unique_ptr<TimingModel>(Datapath& datapath, bool standalone, std::string& err)>;

}  // namespace simnic::soft_engine
