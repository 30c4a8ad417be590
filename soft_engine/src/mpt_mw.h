// MPT entries of memory windows (hw-spec 9.5) as the transport core's
// records (simnic/transport/mw.h): the engine reads a window or the MR it
// binds, lets mw.h decide, and writes back the fields marked ENG.
#pragma once

#include <cstdint>

#include "simnic/hw/layout.h"
#include "simnic/transport/mw.h"

namespace simnic::soft_engine {

namespace me = hw::mpt_entry;
namespace tp = simnic::transport;

inline bool mpt_is_mw(const std::uint8_t* e) {
    return hw::get(e, me::kSize, me::kind) != static_cast<std::uint8_t>(hw::MptKind::Mr);
}

inline tp::MwRecord read_mw(const std::uint8_t* e) {
    auto g = [e](hw::Field f) { return hw::get(e, me::kSize, f); };
    tp::MwRecord r;
    r.type = g(me::kind) == static_cast<std::uint8_t>(hw::MptKind::MwType2) ? hw::MwType::Type2
                                                                            : hw::MwType::Type1;
    r.state = g(me::valid) ? static_cast<hw::MwState>(g(me::mw_state)) : hw::MwState::Invalid;
    r.rkey = static_cast<std::uint32_t>(g(me::key));
    r.pdn = static_cast<std::uint32_t>(g(me::pdn));
    r.qpn = static_cast<std::uint32_t>(g(me::bound_qpn));
    r.mr_key = static_cast<std::uint32_t>(g(me::mr_key));
    r.addr = g(me::iova_start);
    r.length = g(me::length);
    r.access = static_cast<std::uint32_t>(g(me::access));
    r.zero_based = g(me::zero_based) != 0;
    return r;
}

// The ENG fields of a window (the firmware's fields stay as they are).
inline void write_mw(std::uint8_t* e, const tp::MwRecord& r) {
    auto s = [e](hw::Field f, std::uint64_t v) { hw::set(e, me::kSize, f, v); };
    s(me::key, r.rkey);
    s(me::mw_state, static_cast<std::uint8_t>(r.state));
    s(me::bound_qpn, r.qpn);
    s(me::mr_key, r.mr_key);
    s(me::iova_start, r.addr);
    s(me::length, r.length);
    s(me::access, r.access);
    s(me::zero_based, r.zero_based ? 1 : 0);
}

inline tp::MrFacts read_mr_facts(const std::uint8_t* e) {
    auto g = [e](hw::Field f) { return hw::get(e, me::kSize, f); };
    tp::MrFacts m;
    m.lkey = static_cast<std::uint32_t>(g(me::key));
    m.iova = g(me::iova_start);
    m.length = g(me::length);
    m.access = static_cast<std::uint32_t>(g(me::access));
    m.zero_based = g(me::zero_based) != 0;
    return m;
}

}  // namespace simnic::soft_engine
