// SPDX-License-Identifier: Apache-2.0
// simnic firmware: helpers private to fw/src.
#pragma once

#include <cstddef>
#include <cstdint>

#include "simnic/fw/firmware.h"
#include "simnic/hw/field.h"
#include "simnic/hw/layout.h"

namespace simnic::fw {

// The hop limit of a route the host's IP stack resolves (ip_default_ttl).
inline constexpr std::uint8_t kRouteHopLimit = 64;

// The ten AV fields, wherever a layout embeds an AV (QP_ATTR, CMD_CREATE_AH_IN,
// QPC, AH_ENTRY): one descriptor set per layout, all from layout.h.
struct AvFields {
    hw::Field dgid, sgid_index, hop_limit, traffic_class, sl, grh, net_type, flow_label,
        static_rate, dmac;
};

#define SIMNIC_FW_AV_FIELDS(ns)                                                              \
    AvFields {                                                                     \
        ns::av_dgid, ns::av_sgid_index, ns::av_hop_limit, ns::av_traffic_class, ns::av_sl,    \
            ns::av_grh, ns::av_net_type, ns::av_flow_label, ns::av_static_rate, ns::av_dmac \
    }
inline const AvFields kAvQpAttr = SIMNIC_FW_AV_FIELDS(hw::qp_attr);
inline const AvFields kAvAhIn = SIMNIC_FW_AV_FIELDS(hw::cmd_create_ah_in);
inline const AvFields kAvQpc = SIMNIC_FW_AV_FIELDS(hw::qpc);
inline const AvFields kAvAhEntry = SIMNIC_FW_AV_FIELDS(hw::ah_entry);
#undef SIMNIC_FW_AV_FIELDS

// Records a failure; returns false so checks read `if (...) return fail(...)`.
inline bool fail(CmdResult& r, hw::CmdStatus s, Syndrome syn) {
    r.status = s;
    r.syndrome = static_cast<std::uint32_t>(syn);
    return false;
}

// Writes an integer field, truncating to its width (callers range-check first).
inline void put(std::uint8_t* buf, std::size_t len, hw::Field f, std::uint64_t v) {
    hw::set(buf, len, f, v & hw::mask_of(f.width));
}

// Entry accessors bound to one table entry.
struct Entry {
    std::uint8_t* p;
    std::size_t n;
    Entry(std::uint8_t* bytes, Table t) : p(bytes), n(entry_size(t)) {}
    std::uint64_t operator[](hw::Field f) const { return hw::get(p, n, f); }
    void set(hw::Field f, std::uint64_t v) { put(p, n, f, v); }
    void clear() {
        for (std::size_t i = 0; i < n; ++i) p[i] = 0;
    }
};

inline std::uint64_t pow2(std::uint64_t log) { return std::uint64_t{1} << log; }

}  // namespace simnic::fw
