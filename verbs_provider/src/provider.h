// The verbs provider's translation layer: libibverbs' public objects for
// simnic devices, built on simnic::host::Context (docs/hw-spec.md through the
// host driver). interpose.cc exports libibverbs' entry points and calls these
// functions for simnic objects; unit tests call them directly, on in-process
// contexts, without LD_PRELOAD.
//
// Only the public ABI of <infiniband/verbs.h> is used. Every function follows
// the return convention of the libibverbs function of the same name (errno as
// return value, or -1 / NULL with errno set), and none of them prints.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "simnic/host/context.h"

namespace simnic::verbs {

// Where devices come from. The default lists the daemon's devices
// (host::list_devices) and opens them there (host::open_context).
struct DeviceSource {
    std::function<int(std::vector<host::DeviceEntry>&)> list;
    std::function<std::unique_ptr<host::Context>(const std::string& name, int& err)> open;
};
DeviceSource default_device_source();
// Replaces the source (tests). Devices already handed out stay valid.
void set_device_source(DeviceSource src);

// ---- devices ----
// The simnic devices the source lists now, as ibv_device objects. A device
// object lives as long as the process (libibverbs keeps its own the same
// way), so lists handed out earlier never dangle. Returns 0 or an errno.
int current_devices(std::vector<ibv_device*>& out);
bool is_device(const ibv_device* dev);
const char* device_name(ibv_device* dev);
// Node GUID (network order) from the device's ID_BLOCK; 0 and errno if the
// device cannot be opened.
__be64 device_guid(ibv_device* dev);

// ---- sysfs emulation (ibv_read_sysfs_file) ----
// If `dir` is one of a simnic device's sysfs paths (ibdev_path, dev_path),
// answers as kernel rxe's sysfs would: returns true and sets `ret` to the
// length read (or -1 with errno ENOENT for a file rxe does not have).
bool read_sysfs_file(const char* dir, const char* file, char* buf, std::size_t size, int& ret);
// A simnic device's file under /sys/class/infiniband/<name>/ by its path:
// false if the path is not one of a simnic device (call the C library);
// else true with `text` its contents, newline included, or empty with errno
// ENOENT for a file kernel rxe does not have.
bool sysfs_path_text(const char* path, std::string& text);

// ---- contexts ----
bool is_context(const ibv_context* ctx);
ibv_context* open_device(ibv_device* dev);
// Opens `dev` on an existing host context (tests).
ibv_context* open_device_on(ibv_device* dev, std::unique_ptr<host::Context> hc);
int close_device(ibv_context* ctx);
// The host context behind a simnic ibv_context (tests, the data path).
host::Context* host_context(ibv_context* ctx);

// ---- queries ----
int query_device(ibv_context* ctx, ibv_device_attr* attr);
int query_device_ex(ibv_context* ctx, const ibv_query_device_ex_input* input,
                    ibv_device_attr_ex* attr, std::size_t attr_size);
// `attr_size` bytes of `attr` are written (the compat entry point passes the
// size of libibverbs' _compat_ibv_port_attr).
int query_port(ibv_context* ctx, std::uint8_t port_num, ibv_port_attr* attr,
               std::size_t attr_size);
// Size of struct _compat_ibv_port_attr: ibv_port_attr up to port_cap_flags2.
constexpr std::size_t kCompatPortAttrSize = offsetof(ibv_port_attr, port_cap_flags2);
// _ibv_query_gid_ex: 0, ENODATA for an unused index, EINVAL out of range.
int query_gid_ex(ibv_context* ctx, std::uint32_t port_num, std::uint32_t index,
                 ibv_gid_entry* entry, std::uint32_t flags, std::size_t entry_size);
// ibv_query_gid: 0 (zeros for an unused index) or -1 and errno.
int query_gid(ibv_context* ctx, std::uint8_t port_num, int index, ibv_gid* gid);
// _ibv_query_gid_table: the number of valid entries, or a negative errno.
ssize_t query_gid_table(ibv_context* ctx, ibv_gid_entry* entries, std::size_t max_entries,
                        std::uint32_t flags, std::size_t entry_size);
// ibv_query_gid_type (IBVERBS_PRIVATE_34): `type` is rdma-core's
// enum ibv_gid_type_sysfs, 0 = IB / RoCE v1, 1 = RoCE v2. 0 or -1 and errno.
constexpr int kGidTypeSysfsIbRoceV1 = 0;
constexpr int kGidTypeSysfsRoceV2 = 1;
int query_gid_type(ibv_context* ctx, std::uint8_t port_num, unsigned int index, int* type);
// ibv_query_pkey: 0 or -1 and errno. ibv_get_pkey_index: index or -1.
int query_pkey(ibv_context* ctx, std::uint8_t port_num, int index, __be16* pkey);
int get_pkey_index(ibv_context* ctx, std::uint8_t port_num, __be16 pkey);

// ---- protection domains ----
ibv_pd* alloc_pd(ibv_context* ctx);
int dealloc_pd(ibv_pd* pd);
// The device's PD number of a simnic PD.
std::uint32_t pd_number(const ibv_pd* pd);

// ---- memory regions (REG_MR direct mode in the bootstrap domain) ----
// ibv_reg_mr is reg_mr(pd, addr, len, (uintptr_t)addr, access).
ibv_mr* reg_mr(ibv_pd* pd, void* addr, std::size_t length, std::uint64_t iova,
               unsigned int access);
int dereg_mr(ibv_mr* mr);
// ibv_advise_mr (ADVISE_MR per SGE, hw-spec 5.6.13): the device checks each
// SGE; the pages of a prefetch are then made present here, in the process
// that owns them.
int advise_mr(ibv_pd* pd, ibv_advise_mr_advice advice, std::uint32_t flags, ibv_sge* sg_list,
              std::uint32_t num_sge);
// ibv_rereg_mr (libibverbs' exported function, whose input checks it repeats):
// 0, or an IBV_REREG_MR_ERR_* value with errno set. As rxe: CHANGE_PD and
// CHANGE_ACCESS only; CHANGE_TRANSLATION fails with EOPNOTSUPP.
int rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, std::size_t length, int access);

// ---- memory windows (mw.cc; hw-spec 5.6.10, 6.5) ----
// The ibv_context_ops slots ibv_alloc_mw, ibv_dealloc_mw and ibv_bind_mw
// (inline in verbs.h) call. bind_mw posts a BIND_MW WQE with the window's
// next rkey (ibv_inc_rkey) and sets mw->rkey to it, as rdma-core's rxe does.
ibv_mw* alloc_mw(ibv_pd* pd, ibv_mw_type type);
int dealloc_mw(ibv_mw* mw);
int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* bind);

// ---- completion channels and CQs ----
// A channel's fd is an eventfd, readable while events are queued.
ibv_comp_channel* create_comp_channel(ibv_context* ctx);
int destroy_comp_channel(ibv_comp_channel* channel);
ibv_cq* create_cq(ibv_context* ctx, int cqe, void* cq_context, ibv_comp_channel* channel,
                  int comp_vector);
// ibv_create_cq_ex (verbs_context.create_cq_ex): a CQ like create_cq's whose
// ibv_cq_ex polls the same ring (start_poll/next_poll/end_poll, read_*), and
// whose ibv_cq_ex_to_cq works with every ibv_cq verb. The wc_flags kernel
// rxe's provider accepts; others (timestamps, CVLAN, flow tag, TM info) fail
// with EOPNOTSUPP, as do comp_mask bits other than FLAGS | PD and create
// flags other than SINGLE_THREADED. NULL and errno on failure.
constexpr std::uint64_t kCqExSupportedWcFlags =
    IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |
    IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | IBV_WC_EX_WITH_DLID_PATH_BITS;
ibv_cq_ex* create_cq_ex(ibv_context* ctx, ibv_cq_init_attr_ex* attr);
int resize_cq(ibv_cq* cq, int cqe);
// ibv_modify_cq: the CQ's interrupt moderation (IBV_CQ_ATTR_MODERATE) through
// MODIFY_CQ (hw-spec 5.6.6). EINVAL for an attribute mask that is empty or
// has another bit, or a cq_period above 4095 us (mlx5's); errno values
// returned, as libibverbs' op.
int modify_cq(ibv_cq* cq, ibv_modify_cq_attr* attr);
int destroy_cq(ibv_cq* cq);
int get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context);
void ack_cq_events(ibv_cq* cq, unsigned int nevents);

// ---- async events (the context's async_fd is readable while queued) ----
int get_async_event(ibv_context* ctx, ibv_async_event* event);
void ack_async_event(ibv_async_event* event);
// The context an async event's element belongs to (null for port/device events).
const ibv_context* async_event_context(const ibv_async_event* event);

// ---- SRQs ----
ibv_srq* create_srq(ibv_pd* pd, ibv_srq_init_attr* attr);
ibv_srq* create_srq_ex(ibv_context* ctx, ibv_srq_init_attr_ex* attr);
int modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask);
int query_srq(ibv_srq* srq, ibv_srq_attr* attr);
int destroy_srq(ibv_srq* srq);

// ---- QPs ----
ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr);
ibv_qp* create_qp_ex(ibv_context* ctx, ibv_qp_init_attr_ex* attr);
int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask);
int query_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init_attr);
int destroy_qp(ibv_qp* qp);
ibv_qp_ex* qp_to_qp_ex(ibv_qp* qp);

// ---- address handles ----
ibv_ah* create_ah(ibv_pd* pd, ibv_ah_attr* attr);
int destroy_ah(ibv_ah* ah);
// ibv_attach_mcast / ibv_detach_mcast (hw-spec 5.6.12): 0 or an errno. On
// RoCE the LID is not used.
int attach_mcast(ibv_qp* qp, const ibv_gid* gid, std::uint16_t lid);
int detach_mcast(ibv_qp* qp, const ibv_gid* gid, std::uint16_t lid);
int init_ah_from_wc(ibv_context* ctx, std::uint8_t port_num, ibv_wc* wc, ibv_grh* grh,
                    ibv_ah_attr* ah_attr);
ibv_ah* create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, std::uint8_t port_num);

// A command creating a PD, CQ, SRQ, QP, AH or MW that the device refused
// with NO_RESOURCES (its table for the object is full: hw-spec 5.5) fails as
// rxe's verb does when the object's pool is full: __rxe_add_to_pool answers
// EINVAL (rxe_pool.c in 6.1 and 6.12; the PD and CQ pools of 6.1 are bounded
// by max_pd and max_cq from 6.1.9), not the ENOMEM that NO_RESOURCES means
// elsewhere. MRs keep ENOMEM: 6.1 takes them from rxe_alloc, which fails
// with ENOMEM (6.12 says EINVAL).
inline int pool_full_errno(int e, const host::CmdOutcome& r) {
    return e != 0 && r.status == hw::CmdStatus::NoResources ? EINVAL : e;
}

// ---- ring geometry (tests) ----
struct QueueView {
    std::uint8_t* base;
    std::uint32_t entries;
    std::uint32_t stride;
};
QueueView sq_view(ibv_qp* qp);
QueueView rq_view(ibv_qp* qp);
QueueView srq_view(ibv_srq* srq);
QueueView cq_view(ibv_cq* cq);
std::uint32_t cq_number(ibv_cq* cq);

}  // namespace simnic::verbs
