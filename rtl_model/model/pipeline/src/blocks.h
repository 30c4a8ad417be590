// The pipeline's blocks, one SC_MODULE each in blocks/, in the order work
// flows:
//
//  TX: DoorbellBlock -> RequesterBlock -> TxBuildBlock -> MacTxBlock -> wire
//  RX: wire -> MacRxBlock -> ParserBlock -> IcrcCheckBlock -> RxTransportBlock
//      (responder / completer) -> TxBuildBlock (ACKs, READ responses)
//  Host writes: CqeWriterBlock (CQEs), EqeWriterBlock (EQEs, interrupts).
//  Control: MgmtCoreBlock (firmware commands); TimerBlock (protocol timers
//  in simulated time, into the completer).
//
// Each block is a thread that reads its input channel, spends the cycles
// its configuration gives, and writes its output channel; a block whose
// output is full stalls. What they share is in nic.h. Each has its own
// testbench (tests/tb_<block>.cpp, on tests/block_harness.h).
#pragma once

#include "blocks/cqe_writer.h"
#include "blocks/doorbell.h"
#include "blocks/eqe_writer.h"
#include "blocks/icrc_check.h"
#include "blocks/mac_rx.h"
#include "blocks/mac_tx.h"
#include "blocks/mgmt_core.h"
#include "blocks/parser.h"
#include "blocks/requester.h"
#include "blocks/rx_transport.h"
#include "blocks/timers.h"
#include "blocks/tx_build.h"
