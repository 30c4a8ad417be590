// The verbs vocabulary (simnic/hw/verbs.h) against libibverbs' own numbers.
//
// The provider passes an application's opcodes, flags, states and masks into
// WQEs and commands unchanged, and hands CQE and EQE values back unchanged
// (hw-spec 1.4). That is only right while every value hwspec declares equals
// libibverbs' (<infiniband/verbs.h>, rdma-core 44); this file is the one
// place that says so, value by value, at compile time. The provider is the
// only code that includes <infiniband/verbs.h>, so the checks live here and
// the device side builds without libibverbs.
#include <infiniband/verbs.h>

#include "simnic/hw/layout.h"
#include "simnic/hw/verbs.h"

namespace {

namespace hw = simnic::hw;

template <typename E>
constexpr int v(E e) {
    return static_cast<int>(e);
}

// ibv_wr_opcode: CTRL_SEG.opcode (hw-spec 6.3).
static_assert(v(hw::WrOpcode::RdmaWrite) == IBV_WR_RDMA_WRITE);
static_assert(v(hw::WrOpcode::RdmaWriteWithImm) == IBV_WR_RDMA_WRITE_WITH_IMM);
static_assert(v(hw::WrOpcode::Send) == IBV_WR_SEND);
static_assert(v(hw::WrOpcode::SendWithImm) == IBV_WR_SEND_WITH_IMM);
static_assert(v(hw::WrOpcode::RdmaRead) == IBV_WR_RDMA_READ);
static_assert(v(hw::WrOpcode::AtomicCmpAndSwp) == IBV_WR_ATOMIC_CMP_AND_SWP);
static_assert(v(hw::WrOpcode::AtomicFetchAndAdd) == IBV_WR_ATOMIC_FETCH_AND_ADD);
static_assert(v(hw::WrOpcode::LocalInv) == IBV_WR_LOCAL_INV);
static_assert(v(hw::WrOpcode::BindMw) == IBV_WR_BIND_MW);
static_assert(v(hw::WrOpcode::SendWithInv) == IBV_WR_SEND_WITH_INV);
static_assert(v(hw::WrOpcode::AtomicWrite) == IBV_WR_ATOMIC_WRITE);
// FLUSH: rdma-core 44 has no IBV_WR_FLUSH; 14 is the kernel's
// IB_UVERBS_WR_FLUSH, which later rdma-core releases take.
static_assert(v(hw::WrOpcode::Flush) == IBV_WR_DRIVER1 + 3);

// ibv_send_flags. CTRL_SEG carries them as separate bits (fence, signaled,
// solicited, inline_data), so these are the verbs' word, not a field value.
static_assert(hw::send_flags::kFence == IBV_SEND_FENCE);
static_assert(hw::send_flags::kSignaled == IBV_SEND_SIGNALED);
static_assert(hw::send_flags::kSolicited == IBV_SEND_SOLICITED);
static_assert(hw::send_flags::kInline == IBV_SEND_INLINE);

// ibv_wc_status: CQE.status (hw-spec 7.1).
static_assert(v(hw::WcStatus::Success) == IBV_WC_SUCCESS);
static_assert(v(hw::WcStatus::LocLenErr) == IBV_WC_LOC_LEN_ERR);
static_assert(v(hw::WcStatus::LocQpOpErr) == IBV_WC_LOC_QP_OP_ERR);
static_assert(v(hw::WcStatus::LocEecOpErr) == IBV_WC_LOC_EEC_OP_ERR);
static_assert(v(hw::WcStatus::LocProtErr) == IBV_WC_LOC_PROT_ERR);
static_assert(v(hw::WcStatus::WrFlushErr) == IBV_WC_WR_FLUSH_ERR);
static_assert(v(hw::WcStatus::MwBindErr) == IBV_WC_MW_BIND_ERR);
static_assert(v(hw::WcStatus::BadRespErr) == IBV_WC_BAD_RESP_ERR);
static_assert(v(hw::WcStatus::LocAccessErr) == IBV_WC_LOC_ACCESS_ERR);
static_assert(v(hw::WcStatus::RemInvReqErr) == IBV_WC_REM_INV_REQ_ERR);
static_assert(v(hw::WcStatus::RemAccessErr) == IBV_WC_REM_ACCESS_ERR);
static_assert(v(hw::WcStatus::RemOpErr) == IBV_WC_REM_OP_ERR);
static_assert(v(hw::WcStatus::RetryExcErr) == IBV_WC_RETRY_EXC_ERR);
static_assert(v(hw::WcStatus::RnrRetryExcErr) == IBV_WC_RNR_RETRY_EXC_ERR);
static_assert(v(hw::WcStatus::LocRddViolErr) == IBV_WC_LOC_RDD_VIOL_ERR);
static_assert(v(hw::WcStatus::RemInvRdReqErr) == IBV_WC_REM_INV_RD_REQ_ERR);
static_assert(v(hw::WcStatus::RemAbortErr) == IBV_WC_REM_ABORT_ERR);
static_assert(v(hw::WcStatus::InvEecnErr) == IBV_WC_INV_EECN_ERR);
static_assert(v(hw::WcStatus::InvEecStateErr) == IBV_WC_INV_EEC_STATE_ERR);
static_assert(v(hw::WcStatus::FatalErr) == IBV_WC_FATAL_ERR);
static_assert(v(hw::WcStatus::RespTimeoutErr) == IBV_WC_RESP_TIMEOUT_ERR);
static_assert(v(hw::WcStatus::GeneralErr) == IBV_WC_GENERAL_ERR);

// ibv_wc_opcode: CQE.opcode (hw-spec 7.1).
static_assert(v(hw::WcOpcode::Send) == IBV_WC_SEND);
static_assert(v(hw::WcOpcode::RdmaWrite) == IBV_WC_RDMA_WRITE);
static_assert(v(hw::WcOpcode::RdmaRead) == IBV_WC_RDMA_READ);
static_assert(v(hw::WcOpcode::CompSwap) == IBV_WC_COMP_SWAP);
static_assert(v(hw::WcOpcode::FetchAdd) == IBV_WC_FETCH_ADD);
static_assert(v(hw::WcOpcode::BindMw) == IBV_WC_BIND_MW);
static_assert(v(hw::WcOpcode::LocalInv) == IBV_WC_LOCAL_INV);
static_assert(v(hw::WcOpcode::AtomicWrite) == IBV_WC_ATOMIC_WRITE);
// FLUSH: IB_UVERBS_WC_FLUSH, after IBV_WC_TSO (rdma-core 44 does not name it).
static_assert(v(hw::WcOpcode::Flush) == IBV_WC_TSO + 1);
static_assert(v(hw::WcOpcode::Recv) == IBV_WC_RECV);
static_assert(v(hw::WcOpcode::RecvRdmaWithImm) == IBV_WC_RECV_RDMA_WITH_IMM);

// ibv_wc_flags: CQE.wc_flags (hw-spec 7.1).
static_assert(hw::wc_flags::kGrh == IBV_WC_GRH);
static_assert(hw::wc_flags::kWithImm == IBV_WC_WITH_IMM);
static_assert(hw::wc_flags::kWithInv == IBV_WC_WITH_INV);

// ibv_qp_type: CMD_CREATE_QP_IN.qp_type, QPC.qp_type.
static_assert(v(hw::QpType::Rc) == IBV_QPT_RC);
static_assert(v(hw::QpType::Uc) == IBV_QPT_UC);
static_assert(v(hw::QpType::Ud) == IBV_QPT_UD);

// ibv_qp_state: QP_ATTR.qp_state / cur_state, QPC.state.
static_assert(v(hw::QpState::Reset) == IBV_QPS_RESET);
static_assert(v(hw::QpState::Init) == IBV_QPS_INIT);
static_assert(v(hw::QpState::Rtr) == IBV_QPS_RTR);
static_assert(v(hw::QpState::Rts) == IBV_QPS_RTS);
static_assert(v(hw::QpState::Sqd) == IBV_QPS_SQD);
static_assert(v(hw::QpState::Sqe) == IBV_QPS_SQE);
static_assert(v(hw::QpState::Err) == IBV_QPS_ERR);

// ibv_qp_attr_mask: QP_ATTR.attr_mask, and the CM's rdma_init_qp_attr masks.
static_assert(hw::qp_attr_mask::kState == IBV_QP_STATE);
static_assert(hw::qp_attr_mask::kCurState == IBV_QP_CUR_STATE);
static_assert(hw::qp_attr_mask::kEnSqdAsyncNotify == IBV_QP_EN_SQD_ASYNC_NOTIFY);
static_assert(hw::qp_attr_mask::kAccessFlags == IBV_QP_ACCESS_FLAGS);
static_assert(hw::qp_attr_mask::kPkeyIndex == IBV_QP_PKEY_INDEX);
static_assert(hw::qp_attr_mask::kPort == IBV_QP_PORT);
static_assert(hw::qp_attr_mask::kQkey == IBV_QP_QKEY);
static_assert(hw::qp_attr_mask::kAv == IBV_QP_AV);
static_assert(hw::qp_attr_mask::kPathMtu == IBV_QP_PATH_MTU);
static_assert(hw::qp_attr_mask::kTimeout == IBV_QP_TIMEOUT);
static_assert(hw::qp_attr_mask::kRetryCnt == IBV_QP_RETRY_CNT);
static_assert(hw::qp_attr_mask::kRnrRetry == IBV_QP_RNR_RETRY);
static_assert(hw::qp_attr_mask::kRqPsn == IBV_QP_RQ_PSN);
static_assert(hw::qp_attr_mask::kMaxQpRdAtomic == IBV_QP_MAX_QP_RD_ATOMIC);
static_assert(hw::qp_attr_mask::kAltPath == IBV_QP_ALT_PATH);
static_assert(hw::qp_attr_mask::kMinRnrTimer == IBV_QP_MIN_RNR_TIMER);
static_assert(hw::qp_attr_mask::kSqPsn == IBV_QP_SQ_PSN);
static_assert(hw::qp_attr_mask::kMaxDestRdAtomic == IBV_QP_MAX_DEST_RD_ATOMIC);
static_assert(hw::qp_attr_mask::kPathMigState == IBV_QP_PATH_MIG_STATE);
static_assert(hw::qp_attr_mask::kCap == IBV_QP_CAP);
static_assert(hw::qp_attr_mask::kDestQpn == IBV_QP_DEST_QPN);
static_assert(hw::qp_attr_mask::kRateLimit == IBV_QP_RATE_LIMIT);

// ibv_access_flags: MPT_ENTRY.access, QPC.qp_access_flags, BIND_SEG.access.
static_assert(hw::access::kLocalWrite == IBV_ACCESS_LOCAL_WRITE);
static_assert(hw::access::kRemoteWrite == IBV_ACCESS_REMOTE_WRITE);
static_assert(hw::access::kRemoteRead == IBV_ACCESS_REMOTE_READ);
static_assert(hw::access::kRemoteAtomic == IBV_ACCESS_REMOTE_ATOMIC);
static_assert(hw::access::kMwBind == IBV_ACCESS_MW_BIND);
static_assert(hw::access::kZeroBased == IBV_ACCESS_ZERO_BASED);
static_assert(hw::access::kAll == (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                   IBV_ACCESS_REMOTE_ATOMIC));
static_assert(hw::access::kAllMr == (hw::access::kAll | IBV_ACCESS_MW_BIND));
// CMD_REG_MR_IN.access and CMD_REREG_MR_IN.access carry it as bit 6.
static_assert(hw::access::kOnDemand == IBV_ACCESS_ON_DEMAND);

// ibv_advise_mr_advice: CMD_ADVISE_MR_IN.advice.
static_assert(v(hw::MrAdvice::Prefetch) == IBV_ADVISE_MR_ADVICE_PREFETCH);
static_assert(v(hw::MrAdvice::PrefetchWrite) == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE);
static_assert(v(hw::MrAdvice::PrefetchNoFault) == IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT);

// ibv_odp_general_caps and ibv_odp_transport_cap_bits: CAP_BLOCK.odp_*.
static_assert(hw::caps_default::odp_general_caps == (IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT));
static_assert(hw::caps_default::odp_rc_caps ==
              (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
               IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV));
static_assert(hw::caps_default::odp_uc_caps ==
              (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_SRQ_RECV));
static_assert(hw::caps_default::odp_ud_caps ==
              (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_SRQ_RECV));

// ibv_mw_type: CMD_ALLOC_MW_IN.type, and MPT_ENTRY.kind for a window.
static_assert(v(hw::MwType::Type1) == IBV_MW_TYPE_1);
static_assert(v(hw::MwType::Type2) == IBV_MW_TYPE_2);
// MPT_ENTRY.kind holds MR (0) or the window's ibv_mw_type: layout.h derives
// its MW kinds from MwType, so they are libibverbs' numbers too.
static_assert(v(hw::MptKind::MwType1) == IBV_MW_TYPE_1 && v(hw::MptKind::MwType2) == IBV_MW_TYPE_2);

// ibv_rereg_mr_flags: CMD_REREG_MR_IN.flags.
static_assert(hw::rereg_flags::kChangeTranslation == IBV_REREG_MR_CHANGE_TRANSLATION);
static_assert(hw::rereg_flags::kChangePd == IBV_REREG_MR_CHANGE_PD);
static_assert(hw::rereg_flags::kChangeAccess == IBV_REREG_MR_CHANGE_ACCESS);
static_assert(hw::rereg_flags::kAll == IBV_REREG_MR_FLAGS_SUPPORTED);

// ibv_srq_attr_mask: CMD_MODIFY_SRQ_IN.attr_mask.
static_assert(hw::srq_attr_mask::kMaxWr == IBV_SRQ_MAX_WR);
static_assert(hw::srq_attr_mask::kLimit == IBV_SRQ_LIMIT);

// ibv_event_type: EQE.event_type 0x00-0x13 (hw-spec 8.2), which dispatch()
// hands to ibv_get_async_event unchanged. COMPLETION and CMD_COMPLETION are
// simnic's own and never leave the provider.
static_assert(v(hw::EventType::CqErr) == IBV_EVENT_CQ_ERR);
static_assert(v(hw::EventType::QpFatal) == IBV_EVENT_QP_FATAL);
static_assert(v(hw::EventType::QpReqErr) == IBV_EVENT_QP_REQ_ERR);
static_assert(v(hw::EventType::QpAccessErr) == IBV_EVENT_QP_ACCESS_ERR);
static_assert(v(hw::EventType::CommEst) == IBV_EVENT_COMM_EST);
static_assert(v(hw::EventType::SqDrained) == IBV_EVENT_SQ_DRAINED);
static_assert(v(hw::EventType::PathMig) == IBV_EVENT_PATH_MIG);
static_assert(v(hw::EventType::PathMigErr) == IBV_EVENT_PATH_MIG_ERR);
static_assert(v(hw::EventType::DeviceFatal) == IBV_EVENT_DEVICE_FATAL);
static_assert(v(hw::EventType::PortActive) == IBV_EVENT_PORT_ACTIVE);
static_assert(v(hw::EventType::PortErr) == IBV_EVENT_PORT_ERR);
static_assert(v(hw::EventType::LidChange) == IBV_EVENT_LID_CHANGE);
static_assert(v(hw::EventType::PkeyChange) == IBV_EVENT_PKEY_CHANGE);
static_assert(v(hw::EventType::SmChange) == IBV_EVENT_SM_CHANGE);
static_assert(v(hw::EventType::SrqErr) == IBV_EVENT_SRQ_ERR);
static_assert(v(hw::EventType::SrqLimitReached) == IBV_EVENT_SRQ_LIMIT_REACHED);
static_assert(v(hw::EventType::QpLastWqeReached) == IBV_EVENT_QP_LAST_WQE_REACHED);
static_assert(v(hw::EventType::ClientReregister) == IBV_EVENT_CLIENT_REREGISTER);
static_assert(v(hw::EventType::GidChange) == IBV_EVENT_GID_CHANGE);
static_assert(v(hw::EventType::WqFatal) == IBV_EVENT_WQ_FATAL);
static_assert(v(hw::EventType::Completion) > IBV_EVENT_WQ_FATAL &&
                  v(hw::EventType::CmdCompletion) > IBV_EVENT_WQ_FATAL,
              "simnic's own events lie above ibv_event_type's");

// Ports and GIDs: PORT_BLOCK (hw-spec 2.5), QP_ATTR.path_mtu, GID_ENTRY.
static_assert(v(hw::Mtu::M256) == IBV_MTU_256);
static_assert(v(hw::Mtu::M512) == IBV_MTU_512);
static_assert(v(hw::Mtu::M1024) == IBV_MTU_1024);
static_assert(v(hw::Mtu::M2048) == IBV_MTU_2048);
static_assert(v(hw::Mtu::M4096) == IBV_MTU_4096);
static_assert(v(hw::PortState::Down) == IBV_PORT_DOWN);
static_assert(v(hw::PortState::Init) == IBV_PORT_INIT);
static_assert(v(hw::PortState::Armed) == IBV_PORT_ARMED);
static_assert(v(hw::PortState::Active) == IBV_PORT_ACTIVE);
static_assert(hw::kLinkLayerEthernet == IBV_LINK_LAYER_ETHERNET);
static_assert(v(hw::GidType::Ib) == IBV_GID_TYPE_IB);
static_assert(v(hw::GidType::RoceV1) == IBV_GID_TYPE_ROCE_V1);
static_assert(v(hw::GidType::RoceV2) == IBV_GID_TYPE_ROCE_V2);

}  // namespace
