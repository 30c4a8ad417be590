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
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

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

// put and take are forced inline with the accessors (field.h): each field
// of a map is then a constant, and encoding a CQE is its fields' shifts and
// masks.
namespace field_map_detail {
template <typename M>
SIMNIC_HW_INLINE void put(std::uint8_t* p, std::uint32_t len, Field f, const M& v) noexcept {
    if constexpr (std::is_same_v<M, bool>) {
        set(p, len, f, v ? 1 : 0);
    } else if constexpr (std::is_integral_v<M> || std::is_enum_v<M>) {
        set(p, len, f, static_cast<std::uint64_t>(v) & mask_of(f.width));
    } else {
        set_bytes(p, len, f, v.data(), v.size());
    }
}
template <typename M>
SIMNIC_HW_INLINE void take(const std::uint8_t* p, std::uint32_t len, Field f, M& v) noexcept {
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

// The walkers below take the map as a template argument (a constexpr
// object of static storage), so each field is a constant where it is
// written or read, and with put and take inlined a CQE's encode is its
// fields' shifts and masks. A map passed at run time was copied to the
// stack and walked with every field's checks (640 instructions a CQE).
namespace field_map_detail {
template <const auto& Map, std::size_t I, typename V>
SIMNIC_HW_INLINE void put_at(std::uint8_t* p, const V& v) noexcept {
    constexpr auto mf = std::get<I>(Map.fields);
    static_assert(fits(mf.field, Map.size), "a mapped field leaves its layout");
    put(p, Map.size, mf.field, v.*(mf.member));
}
template <const auto& Map, std::size_t I, typename V>
SIMNIC_HW_INLINE void take_at(const std::uint8_t* p, V& v) noexcept {
    constexpr auto mf = std::get<I>(Map.fields);
    static_assert(fits(mf.field, Map.size), "a mapped field leaves its layout");
    take(p, Map.size, mf.field, v.*(mf.member));
}
template <const auto& Map, typename V, std::size_t... I>
SIMNIC_HW_INLINE void put_all(std::uint8_t* p, const V& v, std::index_sequence<I...>) noexcept {
    (put_at<Map, I>(p, v), ...);
}
template <const auto& Map, typename V, std::size_t... I>
SIMNIC_HW_INLINE void take_all(const std::uint8_t* p, V& v, std::index_sequence<I...>) noexcept {
    (take_at<Map, I>(p, v), ...);
}
template <typename T>
struct field_count;
template <typename V, typename... M>
struct field_count<FieldMap<V, M...>> : std::integral_constant<std::size_t, sizeof...(M)> {};
}  // namespace field_map_detail

// Writes every member of `v` that `Map` (a FieldMap of static storage)
// maps into its layout at `p`, which has Map.size bytes behind it; the
// bits of no mapped field are left as they are.
template <const auto& Map, typename V>
inline void encode_fields(std::uint8_t* p, const V& v) noexcept {
    using T = std::remove_cv_t<std::remove_reference_t<decltype(Map)>>;
    field_map_detail::put_all<Map>(p, v, std::make_index_sequence<field_map_detail::field_count<T>::value>{});
}

// Reads every member of `v` that `Map` maps from the layout at `p`; the
// other members are left as they are.
template <const auto& Map, typename V>
inline void decode_fields(const std::uint8_t* p, V& v) noexcept {
    using T = std::remove_cv_t<std::remove_reference_t<decltype(Map)>>;
    field_map_detail::take_all<Map>(p, v, std::make_index_sequence<field_map_detail::field_count<T>::value>{});
}

// A value type V with a map declares it as an overload
//     constexpr auto field_map_of(const V*) { return field_map(...); }
// beside V (found by argument-dependent lookup); then these encode and
// decode it at `p`, which has the layout's size behind it.
template <typename V>
struct map_of {
    static constexpr auto value = field_map_of(static_cast<const V*>(nullptr));
};
template <typename V>
inline void encode_value(std::uint8_t* p, const V& v) noexcept {
    encode_fields<map_of<V>::value>(p, v);
}
template <typename V>
inline V decode_value(const std::uint8_t* p) noexcept {
    V v;
    decode_fields<map_of<V>::value>(p, v);
    return v;
}

}  // namespace simnic::hw
