// Decoded work requests, as the engine hands them to the transport core.
//
// These are the verbs' view (ibv_send_wr / ibv_recv_wr) after the engine has
// parsed its own ring format; the core never sees ring layouts.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "simnic/hw/verbs.h"
#include "simnic/transport/qp_config.h"

namespace simnic::transport {

// rxe's limit (ibv_devinfo: max_sge 32).
inline constexpr size_t kMaxSge = 32;

struct Sge {
    uint64_t addr = 0;
    uint32_t length = 0;
    uint32_t lkey = 0;
};

// A scatter/gather list with rxe's fixed capacity: no allocation per WQE.
struct SgList {
    std::array<Sge, kMaxSge> sge{};
    uint8_t num_sge = 0;

    bool push(const Sge& s) {
        if (num_sge >= kMaxSge) return false;
        sge[num_sge++] = s;
        return true;
    }
    uint64_t total_length() const {
        uint64_t n = 0;
        for (size_t i = 0; i < num_sge; ++i) n += sge[i].length;
        return n;
    }
};

// Destination of a UD send (ibv_send_wr.wr.ud plus the resolved AH).
struct UdDest {
    uint32_t remote_qpn = 0;
    uint32_t remote_qkey = 0;  // high bit set: use the QP's own Q_Key (IBA 10.2.5)
    AddressVector av;
};

// BIND_MW's arguments (ibv_mw_bind_info with the window's keys; hw-spec 6.2
// BIND_SEG).
struct MwBind {
    uint32_t mw_rkey = 0;   // the window's current rkey
    uint32_t new_rkey = 0;  // its rkey after the bind: only the key byte is taken
    uint32_t mr_lkey = 0;   // the MR to bind to (ignored when length is 0)
    uint64_t addr = 0;
    uint64_t length = 0;
    uint32_t access = 0;    // hw::access, kZeroBased included
};

struct SendWqe {
    uint64_t wr_id = 0;
    hw::WrOpcode opcode = hw::WrOpcode::Send;
    uint32_t send_flags = 0;  // hw::send_flags
    SgList sg;
    std::vector<uint8_t> inline_data;  // used instead of sg when send_flags::kInline is set
    // RDMA and atomics
    uint64_t remote_addr = 0;
    uint32_t rkey = 0;
    uint64_t compare_add = 0;  // CMP_AND_SWP: compare; FETCH_AND_ADD: add
    uint64_t swap = 0;         // CMP_AND_SWP: swap
    // FLUSH: the range's length (the RETH's DMA length) and the FETH's
    // placement type and selectivity level (roce::feth). ATOMIC_WRITE's 8
    // bytes are its inline data.
    uint32_t flush_len = 0;
    uint8_t flush_placement = 0;
    uint8_t flush_selectivity = 0;
    // WITH_IMM (host order; the wire carries it big-endian) or WITH_INV
    uint32_t imm_data = 0;
    uint32_t invalidate_rkey = 0;  // SEND_WITH_INV, LOCAL_INV
    MwBind bind;                   // BIND_MW
    UdDest ud;

    bool is_inline() const { return (send_flags & hw::send_flags::kInline) != 0; }
    uint64_t length() const { return is_inline() ? inline_data.size() : sg.total_length(); }
};

struct RecvWqe {
    uint64_t wr_id = 0;
    SgList sg;
};

}  // namespace simnic::transport
