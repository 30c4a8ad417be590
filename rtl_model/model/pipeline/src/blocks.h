// The pipeline's blocks, one SC_MODULE each, in the order work flows:
//
//  TX: DoorbellBlock -> RequesterBlock -> TxBuildBlock -> MacTxBlock -> wire
//  RX: wire -> MacRxBlock -> ParserBlock -> IcrcCheckBlock -> RxTransportBlock
//      (responder / completer) -> TxBuildBlock (ACKs, READ responses)
//  Host writes: CqeWriterBlock (CQEs), EqeWriterBlock (EQEs, interrupts).
//  Control: MgmtCoreBlock (firmware commands).
//
// Each block is a thread that reads its input channel, spends the cycles
// its configuration gives, and writes its output channel; a block whose
// output is full stalls.
#pragma once

#include "nic.h"

namespace simnic::model {

struct BlockBase : sc_core::sc_module {
    BlockBase(sc_core::sc_module_name n, Nic& nic) : sc_core::sc_module(n), nic(nic) {}
    Nic& nic;
};

// Doorbells: QPC lookup, then the functional datapath fetches and decodes the
// WQEs (their DMA reads are waited for here: the requester cannot start
// before the WQE is in the device).
struct DoorbellBlock : BlockBase {
    SC_HAS_PROCESS(DoorbellBlock);
    DoorbellBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) { SC_THREAD(main); }
    void main();
};

// Segmentation and PSNs are the datapath's; here each request packet costs
// cycles_per_packet, its MR lookups, and issues its payload's DMA reads
// (not waited for: the reads of consecutive packets overlap, up to the DMA
// engine's tags).
struct RequesterBlock : BlockBase {
    SC_HAS_PROCESS(RequesterBlock);
    RequesterBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) { SC_THREAD(main); }
    void main();
};

// Header build and ICRC insert: a frame streams through at one beat per
// cycle once its payload has arrived, and is out icrc.latency_cycles after
// its last beat. With icrc.impl = rtl the Verilated ICRC engine computes the
// ICRC that goes on the wire.
struct TxBuildBlock : BlockBase {
    SC_HAS_PROCESS(TxBuildBlock);
    TxBuildBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) { SC_THREAD(main); }
    void main();
};

// MAC TX: a frame occupies the datapath for its beats and the line for its
// bytes plus the inter-frame gap at line rate, whichever is longer.
struct MacTxBlock : BlockBase {
    SC_HAS_PROCESS(MacTxBlock);
    MacTxBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) { SC_THREAD(main); }
    void main();
};

struct MacRxBlock : BlockBase {
    SC_HAS_PROCESS(MacRxBlock);
    MacRxBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) { SC_THREAD(main); }
    void main();
};

// Parser: the header vector (roce/header_vector.h), from the C++ twin or the
// Verilated parser; malformed frames are dropped and counted.
struct ParserBlock : BlockBase {
    SC_HAS_PROCESS(ParserBlock);
    ParserBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) { SC_THREAD(main); }
    void main();
};

// ICRC check: frames whose ICRC is wrong are dropped and counted.
struct IcrcCheckBlock : BlockBase {
    SC_HAS_PROCESS(IcrcCheckBlock);
    IcrcCheckBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) { SC_THREAD(main); }
    void main();
};

// The responder (requests) and completer (responses, timers): QPC lookup,
// then the datapath runs the transport core on the packet; its payload
// writes, READ-response reads, ACKs and CQEs are played here.
struct RxTransportBlock : BlockBase {
    SC_HAS_PROCESS(RxTransportBlock);
    RxTransportBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) {
        SC_THREAD(main);
        SC_THREAD(timers);
    }
    void main();
    void timers();
    void play(Txn& t, sim::BlockStats& st);
    sc_core::sc_mutex busy;  // the responder and completer share one datapath
};

// CQE writer: each CQE is a posted DMA write after the payload it completes;
// the bench's host model sees it when it is visible.
struct CqeWriterBlock : BlockBase {
    SC_HAS_PROCESS(CqeWriterBlock);
    CqeWriterBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) {
        SC_THREAD(main);
        SC_THREAD(visible);
    }
    void main();
    void visible();
};

// EQE writer and interrupt.
struct EqeWriterBlock : BlockBase {
    SC_HAS_PROCESS(EqeWriterBlock);
    EqeWriterBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) { SC_THREAD(main); }
    void main();
};

// The management core: each firmware command costs fw.command_cycles at
// fw.core_mhz.
struct MgmtCoreBlock : BlockBase {
    SC_HAS_PROCESS(MgmtCoreBlock);
    MgmtCoreBlock(sc_core::sc_module_name n, Nic& nic) : BlockBase(n, nic) { SC_THREAD(main); }
    void main();
};

}  // namespace simnic::model
