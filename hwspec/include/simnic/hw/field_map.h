// SPDX-License-Identifier: Apache-2.0
// simnic hardware spec: value structs bound to layouts.
//
// A codec's value struct (a WQE segment, a CQE, an EQE) says once which of
// its members is which field of layout.h: a FieldMap, a tuple of
// (member, field) pairs. encode_fields() and decode_fields() walk the same
// tuple, so the two directions cannot disagree about a field, and no field
// is written out twice.
//
// Members are integers, enums and bools (integer fields: a value wider than
// its field is truncated to it, since the field is all the other side sees),
// or byte arrays (wide fields such as GIDs and MACs, in wire order).
#pragma once

#include <cstdint>
#include <tuple>
#include <type_traits>

#include "simnic/hw/field.h"

namespace simnic::hw {

template <typename V, typename M>
struct MemberField {
    M V::*member;
    Field field;
};

// One pair of a FieldMap: member `m` of V is field `f`.
template <typename V, typename M>
constexpr MemberField<V, M> member_field(M V::*m, Field f) noexcept {
    return {m, f};
}

namespace field_map_detail {
template <typename M>
inline void put(std::uint8_t* p, std::uint32_t len, Field f, const M& v) noexcept {
    if constexpr (std::is_same_v<M, bool>) {
        set(p, len, f, v ? 1 : 0);
    } else if constexpr (std::is_integral_v<M> || std::is_enum_v<M>) {
        set(p, len, f, static_cast<std::uint64_t>(v) & mask_of(f.width));
    } else {
        set_bytes(p, len, f, v.data(), v.size());
    }
}
template <typename M>
inline void take(const std::uint8_t* p, std::uint32_t len, Field f, M& v) noexcept {
    if constexpr (std::is_same_v<M, bool>) {
        v = get(p, len, f) != 0;
    } else if constexpr (std::is_integral_v<M> || std::is_enum_v<M>) {
        v = static_cast<M>(get(p, len, f));
    } else {
        get_bytes(p, len, f, v.data(), v.size());
    }
}
}  // namespace field_map_detail

// A value type's whole map: the layout's size and the (member, field) pairs.
template <typename V, typename... M>
struct FieldMap {
    std::uint32_t size;
    std::tuple<MemberField<V, M>...> fields;
};
template <typename V, typename... M>
constexpr FieldMap<V, M...> field_map(std::uint32_t size, MemberField<V, M>... pairs) noexcept {
    return {size, std::make_tuple(pairs...)};
}

// Writes every mapped member of `v` into the `len` bytes at `p`; the bits of
// no mapped field are left as they are.
template <typename V, typename... M>
inline void encode_fields(std::uint8_t* p, std::uint32_t len, const V& v,
                          const std::tuple<MemberField<V, M>...>& map) noexcept {
    std::apply([&](const auto&... m) { (field_map_detail::put(p, len, m.field, v.*(m.member)), ...); }, map);
}

// Reads every mapped member of `v` from the `len` bytes at `p`; the other
// members are left as they are.
template <typename V, typename... M>
inline void decode_fields(const std::uint8_t* p, std::uint32_t len, V& v,
                          const std::tuple<MemberField<V, M>...>& map) noexcept {
    std::apply([&](const auto&... m) { (field_map_detail::take(p, len, m.field, v.*(m.member)), ...); }, map);
}

// A value type V with a map declares it as an overload
//     constexpr auto field_map_of(const V*) { return field_map(...); }
// beside V (found by argument-dependent lookup); then these encode and
// decode it at `p`, which has the layout's size behind it.
template <typename V>
inline void encode_value(std::uint8_t* p, const V& v) noexcept {
    constexpr auto m = field_map_of(static_cast<const V*>(nullptr));
    encode_fields(p, m.size, v, m.fields);
}
template <typename V>
inline V decode_value(const std::uint8_t* p) noexcept {
    constexpr auto m = field_map_of(static_cast<const V*>(nullptr));
    V v;
    decode_fields(p, m.size, v, m.fields);
    return v;
}

}  // namespace simnic::hw
