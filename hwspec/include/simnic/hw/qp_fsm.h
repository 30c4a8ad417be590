// SPDX-License-Identifier: Apache-2.0
// simnic hardware spec: the QP state machine MODIFY_QP enforces (hw-spec.md 5.7),
// as data.
//
// qp_fsm::kTransitions holds the rows of the table in hw-spec.md 5.7, in the
// same order: a set of "from" states, one "to" state, a set of QP types, and the
// qp_attr_mask bits each such transition requires and accepts optionally.
// hwspec/tests/test_hwspec.cpp parses that table and checks it against these
// rows, row by row and for every (from, to, type), so change both together.
//
// STATE is not in the masks: MODIFY_QP always requires it (hw-spec.md 5.6.7).
// A transition with no row is illegal (BAD_STATE); an attribute outside
// required | optional, or a missing required one, is BAD_ATTR_MASK.
#pragma once

#include <cstddef>
#include <cstdint>

#include "simnic/hw/layout.h"

namespace simnic::hw {

// Sets of QP states and of QP types: one bit per enumerator value.
constexpr std::uint8_t qp_state_bit(QpState s) noexcept {
    return static_cast<std::uint8_t>(1u << static_cast<unsigned>(s));
}
constexpr std::uint8_t qp_type_bit(QpType t) noexcept {
    return static_cast<std::uint8_t>(1u << static_cast<unsigned>(t));
}

struct QpTransitionRow {
    std::uint8_t from;       // set of qp_state_bit()
    QpState to;
    std::uint8_t types;      // set of qp_type_bit()
    std::uint32_t required;  // qp_attr_mask bits, STATE excluded
    std::uint32_t optional;  // qp_attr_mask bits, STATE excluded
};

namespace qp_fsm {

constexpr std::uint8_t kReset = qp_state_bit(QpState::Reset);
constexpr std::uint8_t kInit = qp_state_bit(QpState::Init);
constexpr std::uint8_t kRtr = qp_state_bit(QpState::Rtr);
constexpr std::uint8_t kRts = qp_state_bit(QpState::Rts);
constexpr std::uint8_t kSqd = qp_state_bit(QpState::Sqd);
constexpr std::uint8_t kSqe = qp_state_bit(QpState::Sqe);
constexpr std::uint8_t kErr = qp_state_bit(QpState::Err);
constexpr std::uint8_t kAnyState = kReset | kInit | kRtr | kRts | kSqd | kSqe | kErr;

constexpr std::uint8_t kRc = qp_type_bit(QpType::Rc);
constexpr std::uint8_t kUc = qp_type_bit(QpType::Uc);
constexpr std::uint8_t kUd = qp_type_bit(QpType::Ud);
constexpr std::uint8_t kAllTypes = kRc | kUc | kUd;

namespace attr = qp_attr_mask;

// hw-spec.md 5.7, row for row: {From, To, Type, Required, Optional}.
constexpr QpTransitionRow kTransitions[] = {
    {kReset, QpState::Init, kRc | kUc, attr::kPkeyIndex | attr::kPort | attr::kAccessFlags, 0},
    {kReset, QpState::Init, kUd, attr::kPkeyIndex | attr::kPort | attr::kQkey, 0},
    {kInit, QpState::Init, kRc | kUc, 0, attr::kPkeyIndex | attr::kPort | attr::kAccessFlags},
    {kInit, QpState::Init, kUd, 0, attr::kPkeyIndex | attr::kPort | attr::kQkey},
    {kInit, QpState::Rtr, kRc,
     attr::kAv | attr::kPathMtu | attr::kDestQpn | attr::kRqPsn | attr::kMaxDestRdAtomic |
         attr::kMinRnrTimer,
     attr::kAccessFlags | attr::kPkeyIndex},
    {kInit, QpState::Rtr, kUc, attr::kAv | attr::kPathMtu | attr::kDestQpn | attr::kRqPsn,
     attr::kAccessFlags | attr::kPkeyIndex},
    {kInit, QpState::Rtr, kUd, 0, attr::kPkeyIndex | attr::kQkey},
    {kRtr, QpState::Rts, kRc,
     attr::kSqPsn | attr::kTimeout | attr::kRetryCnt | attr::kRnrRetry | attr::kMaxQpRdAtomic,
     attr::kCurState | attr::kAccessFlags | attr::kMinRnrTimer},
    {kRtr, QpState::Rts, kUc, attr::kSqPsn, attr::kCurState | attr::kAccessFlags},
    {kRtr, QpState::Rts, kUd, attr::kSqPsn, attr::kCurState | attr::kQkey},
    {kRts, QpState::Rts, kRc, 0, attr::kCurState | attr::kAccessFlags | attr::kMinRnrTimer},
    {kRts, QpState::Rts, kUc, 0, attr::kCurState | attr::kAccessFlags},
    {kRts, QpState::Rts, kUd, 0, attr::kCurState | attr::kQkey},
    {kRts, QpState::Sqd, kAllTypes, 0, attr::kEnSqdAsyncNotify},
    {kSqd, QpState::Rts, kRc, 0, attr::kCurState | attr::kAccessFlags | attr::kMinRnrTimer},
    {kSqd, QpState::Rts, kUc, 0, attr::kCurState | attr::kAccessFlags},
    {kSqd, QpState::Rts, kUd, 0, attr::kCurState | attr::kQkey},
    {kSqd, QpState::Sqd, kRc, 0,
     attr::kAv | attr::kPort | attr::kPkeyIndex | attr::kAccessFlags | attr::kTimeout |
         attr::kRetryCnt | attr::kRnrRetry | attr::kMaxQpRdAtomic | attr::kMaxDestRdAtomic |
         attr::kMinRnrTimer},
    {kSqd, QpState::Sqd, kUc, 0, attr::kAv | attr::kPkeyIndex | attr::kAccessFlags},
    {kSqd, QpState::Sqd, kUd, 0, attr::kPkeyIndex | attr::kQkey},
    {kSqe, QpState::Rts, kUc, 0, attr::kCurState | attr::kAccessFlags},
    {kSqe, QpState::Rts, kUd, 0, attr::kCurState | attr::kQkey},
    {kAnyState, QpState::Reset, kAllTypes, 0, attr::kCurState},
    {kAnyState, QpState::Err, kAllTypes, 0, attr::kCurState},
};

constexpr std::size_t kTransitionCount = sizeof(kTransitions) / sizeof(kTransitions[0]);

constexpr bool matches(const QpTransitionRow& r, QpState from, QpState to, QpType type) noexcept {
    return (r.from & qp_state_bit(from)) != 0 && r.to == to && (r.types & qp_type_bit(type)) != 0;
}

// Every row well formed, and no (from, to, type) named by two rows.
constexpr bool table_ok() noexcept {
    constexpr std::uint32_t kNotAttributes = attr::kState | attr::kUnsupported;
    for (std::size_t i = 0; i < kTransitionCount; ++i) {
        const QpTransitionRow& a = kTransitions[i];
        if (a.from == 0 || (a.from & ~kAnyState) != 0) return false;
        if (a.types == 0 || (a.types & ~kAllTypes) != 0) return false;
        if ((qp_state_bit(a.to) & kAnyState) == 0) return false;
        if ((a.required & a.optional) != 0) return false;
        if (((a.required | a.optional) & kNotAttributes) != 0) return false;
        for (std::size_t j = i + 1; j < kTransitionCount; ++j) {
            const QpTransitionRow& b = kTransitions[j];
            if ((a.from & b.from) != 0 && a.to == b.to && (a.types & b.types) != 0) return false;
        }
    }
    return true;
}
static_assert(table_ok(), "qp_fsm::kTransitions: malformed row or overlapping rows");

}  // namespace qp_fsm

struct QpTransition {
    bool legal;
    std::uint32_t required;  // qp_attr_mask bits, STATE excluded
    std::uint32_t optional;  // qp_attr_mask bits, STATE excluded

    // The attr_mask rule of hw-spec.md 5.7: STATE present, every required
    // attribute present, nothing outside required | optional. (NOT_SUPPORTED
    // bits and the CUR_STATE value are checked separately.)
    constexpr bool allows(std::uint32_t attr_mask) const noexcept {
        return legal && (attr_mask & qp_attr_mask::kState) != 0 &&
               (attr_mask & required) == required &&
               (attr_mask & ~(qp_attr_mask::kState | required | optional)) == 0;
    }
};

// The row of hw-spec.md 5.7 for (from, to, type); legal == false if none.
constexpr QpTransition qp_transition(QpState from, QpState to, QpType type) noexcept {
    for (const QpTransitionRow& r : qp_fsm::kTransitions)
        if (qp_fsm::matches(r, from, to, type)) return QpTransition{true, r.required, r.optional};
    return QpTransition{false, 0, 0};
}

}  // namespace simnic::hw
