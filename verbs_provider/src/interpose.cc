// libsimnic-verbs.so: loaded with LD_PRELOAD ahead of the system libibverbs,
// it defines libibverbs' exported entry points. A call that concerns a simnic
// object goes to the translation layer (provider.h); every other call goes on
// to the next definition, the real libibverbs, found with dlvsym(RTLD_NEXT)
// at the version the application was linked against.
//
// Unversioned definitions in a preloaded library bind to the applications'
// versioned imports (ibv_foo@IBVERBS_1.1, ibv_query_gid_type@IBVERBS_PRIVATE_34),
// so this file defines each symbol once, without version. exports.map keeps
// everything else (the provider's C++ and the static libraries) local.
//
// Verbs the data path will implement fail here for simnic objects with the
// documented error (NULL or -1 with errno EOPNOTSUPP, or EOPNOTSUPP
// returned), never by crashing and never by printing.
#include <dlfcn.h>
#include <infiniband/verbs.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "provider.h"
#include "real_symbol.h"

#undef ibv_query_port  // verbs.h's macro; the exported symbol takes the compat struct
#undef ibv_reg_mr       // likewise macros around the exported functions
#undef ibv_reg_mr_iova

namespace sv = simnic::verbs;

namespace {

using simnic::verbs::Real;

#define SIMNIC_REAL(fn, ver)                          \
    static Real<decltype(fn)>& real_##fn() {           \
        static Real<decltype(fn)> r(#fn, ver);         \
        return r;                                      \
    }

bool ours(const ibv_context* c) { return sv::is_context(c); }
template <typename T>
bool ours_obj(const T* o) {
    return o != nullptr && sv::is_context(o->context);
}

// Device lists we built: our array -> the real array inside it (maybe null).
std::mutex g_lists_mu;
std::unordered_map<ibv_device**, ibv_device**>& lists() {
    static auto* m = new std::unordered_map<ibv_device**, ibv_device**>;
    return *m;
}

}  // namespace

// Exported by libibverbs but declared only in rdma-core's private
// infiniband/driver.h, which is not installed. ibv_query_gid_type's last
// argument is an enum ibv_gid_type_sysfs, passed as int-sized storage.
extern "C" int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size);
extern "C" int ibv_query_gid_type(struct ibv_context* context, uint8_t port_num,
                                  unsigned int index, int* type);

// The real libibverbs' definitions, at the versions applications bind to.
SIMNIC_REAL(ibv_get_device_list, "IBVERBS_1.1")
SIMNIC_REAL(ibv_free_device_list, "IBVERBS_1.1")
SIMNIC_REAL(ibv_get_device_name, "IBVERBS_1.1")
SIMNIC_REAL(ibv_get_device_guid, "IBVERBS_1.1")
SIMNIC_REAL(ibv_get_device_index, "IBVERBS_1.9")
SIMNIC_REAL(ibv_open_device, "IBVERBS_1.1")
SIMNIC_REAL(ibv_close_device, "IBVERBS_1.1")
SIMNIC_REAL(ibv_read_sysfs_file, "IBVERBS_1.0")
SIMNIC_REAL(ibv_get_async_event, "IBVERBS_1.1")
SIMNIC_REAL(ibv_ack_async_event, "IBVERBS_1.1")
SIMNIC_REAL(ibv_query_device, "IBVERBS_1.1")
SIMNIC_REAL(ibv_query_port, "IBVERBS_1.1")
SIMNIC_REAL(ibv_query_gid, "IBVERBS_1.1")
SIMNIC_REAL(_ibv_query_gid_ex, "IBVERBS_1.11")
SIMNIC_REAL(_ibv_query_gid_table, "IBVERBS_1.11")
SIMNIC_REAL(ibv_query_pkey, "IBVERBS_1.1")
SIMNIC_REAL(ibv_get_pkey_index, "IBVERBS_1.5")
SIMNIC_REAL(ibv_alloc_pd, "IBVERBS_1.1")
SIMNIC_REAL(ibv_dealloc_pd, "IBVERBS_1.1")
SIMNIC_REAL(ibv_import_pd, "IBVERBS_1.10")
SIMNIC_REAL(ibv_unimport_pd, "IBVERBS_1.10")
SIMNIC_REAL(ibv_reg_mr, "IBVERBS_1.1")
SIMNIC_REAL(ibv_reg_mr_iova, "IBVERBS_1.7")
SIMNIC_REAL(ibv_reg_mr_iova2, "IBVERBS_1.8")
SIMNIC_REAL(ibv_reg_dmabuf_mr, "IBVERBS_1.12")
SIMNIC_REAL(ibv_rereg_mr, "IBVERBS_1.1")
SIMNIC_REAL(ibv_dereg_mr, "IBVERBS_1.1")
SIMNIC_REAL(ibv_import_mr, "IBVERBS_1.10")
SIMNIC_REAL(ibv_unimport_mr, "IBVERBS_1.10")
SIMNIC_REAL(ibv_import_dm, "IBVERBS_1.13")
SIMNIC_REAL(ibv_unimport_dm, "IBVERBS_1.13")
SIMNIC_REAL(ibv_create_comp_channel, "IBVERBS_1.0")
SIMNIC_REAL(ibv_destroy_comp_channel, "IBVERBS_1.0")
SIMNIC_REAL(ibv_create_cq, "IBVERBS_1.1")
SIMNIC_REAL(ibv_resize_cq, "IBVERBS_1.1")
SIMNIC_REAL(ibv_destroy_cq, "IBVERBS_1.1")
SIMNIC_REAL(ibv_get_cq_event, "IBVERBS_1.1")
SIMNIC_REAL(ibv_ack_cq_events, "IBVERBS_1.1")
SIMNIC_REAL(ibv_create_srq, "IBVERBS_1.1")
SIMNIC_REAL(ibv_modify_srq, "IBVERBS_1.1")
SIMNIC_REAL(ibv_query_srq, "IBVERBS_1.1")
SIMNIC_REAL(ibv_destroy_srq, "IBVERBS_1.1")
SIMNIC_REAL(ibv_create_qp, "IBVERBS_1.1")
SIMNIC_REAL(ibv_query_qp, "IBVERBS_1.1")
SIMNIC_REAL(ibv_modify_qp, "IBVERBS_1.1")
SIMNIC_REAL(ibv_destroy_qp, "IBVERBS_1.1")
SIMNIC_REAL(ibv_qp_to_qp_ex, "IBVERBS_1.6")
SIMNIC_REAL(ibv_query_qp_data_in_order, "IBVERBS_1.14")
SIMNIC_REAL(ibv_query_ece, "IBVERBS_1.10")
SIMNIC_REAL(ibv_set_ece, "IBVERBS_1.10")
SIMNIC_REAL(ibv_create_ah, "IBVERBS_1.1")
SIMNIC_REAL(ibv_destroy_ah, "IBVERBS_1.1")
SIMNIC_REAL(ibv_init_ah_from_wc, "IBVERBS_1.1")
SIMNIC_REAL(ibv_create_ah_from_wc, "IBVERBS_1.1")
SIMNIC_REAL(ibv_resolve_eth_l2_from_gid, "IBVERBS_1.1")
SIMNIC_REAL(ibv_attach_mcast, "IBVERBS_1.1")
SIMNIC_REAL(ibv_detach_mcast, "IBVERBS_1.1")

SIMNIC_REAL(ibv_query_gid_type, "IBVERBS_PRIVATE_34")

// "No such function" from a missing libibverbs.
#define SIMNIC_NO_REAL_PTR() (errno = ENOSYS, nullptr)
#define SIMNIC_NO_REAL_INT() (errno = ENOSYS, -1)

#define SIMNIC_EXPORT extern "C" __attribute__((visibility("default")))

// ---------------------------------------------------------------------------
// Devices
// ---------------------------------------------------------------------------
SIMNIC_EXPORT struct ibv_device** ibv_get_device_list(int* num_devices) {
    int real_n = 0;
    ibv_device** real = nullptr;
    int real_err = 0;
    if (auto* f = real_ibv_get_device_list().get()) {
        errno = 0;
        real = f(&real_n);
        real_err = errno;
    } else {
        real_err = ENOSYS;
    }
    if (real == nullptr) real_n = 0;

    std::vector<ibv_device*> sims;
    sv::current_devices(sims);  // no daemon: none, and the real list alone
    if (sims.empty()) {
        if (num_devices) *num_devices = real_n;
        // No kernel RDMA (libibverbs says ENOSYS) and no simnic device: a
        // process run with the provider wants simnic devices, and there are
        // none (no daemon, or none added): ENODEV says that.
        if (real == nullptr) errno = real_err == ENOSYS ? ENODEV : real_err;
        return real;
    }
    const std::size_t total = static_cast<std::size_t>(real_n) + sims.size();
    auto** out = static_cast<ibv_device**>(std::calloc(total + 1, sizeof(ibv_device*)));
    if (out == nullptr) {
        if (real) real_ibv_free_device_list().get()(real);
        if (num_devices) *num_devices = 0;
        errno = ENOMEM;
        return nullptr;
    }
    for (int i = 0; i < real_n; ++i) out[i] = real[i];
    for (std::size_t i = 0; i < sims.size(); ++i) out[static_cast<std::size_t>(real_n) + i] = sims[i];
    {
        std::lock_guard<std::mutex> lk(g_lists_mu);
        lists()[out] = real;
    }
    if (num_devices) *num_devices = static_cast<int>(total);
    return out;
}

SIMNIC_EXPORT void ibv_free_device_list(struct ibv_device** list) {
    ibv_device** real = list;
    {
        std::lock_guard<std::mutex> lk(g_lists_mu);
        auto it = lists().find(list);
        if (it != lists().end()) {
            real = it->second;
            lists().erase(it);
            std::free(list);
        }
    }
    if (real == nullptr) return;
    if (auto* f = real_ibv_free_device_list().get()) f(real);
}

SIMNIC_EXPORT const char* ibv_get_device_name(struct ibv_device* device) {
    if (sv::is_device(device)) return sv::device_name(device);
    auto* f = real_ibv_get_device_name().get();
    return f ? f(device) : SIMNIC_NO_REAL_PTR();
}

SIMNIC_EXPORT __be64 ibv_get_device_guid(struct ibv_device* device) {
    if (sv::is_device(device)) return sv::device_guid(device);
    auto* f = real_ibv_get_device_guid().get();
    if (!f) {
        errno = ENOSYS;
        return 0;
    }
    return f(device);
}

SIMNIC_EXPORT int ibv_get_device_index(struct ibv_device* device) {
    if (sv::is_device(device)) return -1;  // no kernel index
    auto* f = real_ibv_get_device_index().get();
    return f ? f(device) : -1;
}

SIMNIC_EXPORT struct ibv_context* ibv_open_device(struct ibv_device* device) {
    if (sv::is_device(device)) return sv::open_device(device);
    auto* f = real_ibv_open_device().get();
    return f ? f(device) : SIMNIC_NO_REAL_PTR();
}

SIMNIC_EXPORT int ibv_close_device(struct ibv_context* context) {
    if (ours(context)) return sv::close_device(context);
    auto* f = real_ibv_close_device().get();
    return f ? f(context) : ENOSYS;
}

SIMNIC_EXPORT int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
    int ret = 0;
    if (sv::read_sysfs_file(dir, file, buf, size, ret)) return ret;
    auto* f = real_ibv_read_sysfs_file().get();
    return f ? f(dir, file, buf, size) : SIMNIC_NO_REAL_INT();
}

// ---------------------------------------------------------------------------
// Async events
// ---------------------------------------------------------------------------
SIMNIC_EXPORT int ibv_get_async_event(struct ibv_context* context, struct ibv_async_event* event) {
    if (ours(context)) return sv::get_async_event(context, event);
    auto* f = real_ibv_get_async_event().get();
    return f ? f(context, event) : SIMNIC_NO_REAL_INT();
}

SIMNIC_EXPORT void ibv_ack_async_event(struct ibv_async_event* event) {
    if (event == nullptr) return;
    // Port and device events name no object: acknowledging them is a no-op
    // for libibverbs too, so they may go either way.
    if (ours(sv::async_event_context(event))) return sv::ack_async_event(event);
    if (auto* f = real_ibv_ack_async_event().get()) f(event);
}

// ---------------------------------------------------------------------------
// Queries
// ---------------------------------------------------------------------------
SIMNIC_EXPORT int ibv_query_device(struct ibv_context* context,
                                   struct ibv_device_attr* device_attr) {
    if (ours(context)) return sv::query_device(context, device_attr);
    auto* f = real_ibv_query_device().get();
    return f ? f(context, device_attr) : ENOSYS;
}

SIMNIC_EXPORT int ibv_query_port(struct ibv_context* context, uint8_t port_num,
                                 struct _compat_ibv_port_attr* port_attr) {
    if (ours(context))
        return sv::query_port(context, port_num, reinterpret_cast<ibv_port_attr*>(port_attr),
                              sv::kCompatPortAttrSize);
    auto* f = real_ibv_query_port().get();
    return f ? f(context, port_num, port_attr) : ENOSYS;
}

SIMNIC_EXPORT int ibv_query_gid(struct ibv_context* context, uint8_t port_num, int index,
                                union ibv_gid* gid) {
    if (ours(context)) return sv::query_gid(context, port_num, index, gid);
    auto* f = real_ibv_query_gid().get();
    return f ? f(context, port_num, index, gid) : SIMNIC_NO_REAL_INT();
}

SIMNIC_EXPORT int _ibv_query_gid_ex(struct ibv_context* context, uint32_t port_num,
                                    uint32_t gid_index, struct ibv_gid_entry* entry,
                                    uint32_t flags, size_t entry_size) {
    if (ours(context))
        return sv::query_gid_ex(context, port_num, gid_index, entry, flags, entry_size);
    auto* f = real__ibv_query_gid_ex().get();
    return f ? f(context, port_num, gid_index, entry, flags, entry_size) : ENOSYS;
}

SIMNIC_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context* context,
                                           struct ibv_gid_entry* entries, size_t max_entries,
                                           uint32_t flags, size_t entry_size) {
    if (ours(context))
        return sv::query_gid_table(context, entries, max_entries, flags, entry_size);
    auto* f = real__ibv_query_gid_table().get();
    return f ? f(context, entries, max_entries, flags, entry_size) : -ENOSYS;
}

SIMNIC_EXPORT int ibv_query_gid_type(struct ibv_context* context, uint8_t port_num,
                                     unsigned int index, int* type) {
    if (ours(context)) return sv::query_gid_type(context, port_num, index, type);
    auto* f = real_ibv_query_gid_type().get();
    return f ? f(context, port_num, index, type) : SIMNIC_NO_REAL_INT();
}

SIMNIC_EXPORT int ibv_query_pkey(struct ibv_context* context, uint8_t port_num, int index,
                                 __be16* pkey) {
    if (ours(context)) return sv::query_pkey(context, port_num, index, pkey);
    auto* f = real_ibv_query_pkey().get();
    return f ? f(context, port_num, index, pkey) : SIMNIC_NO_REAL_INT();
}

SIMNIC_EXPORT int ibv_get_pkey_index(struct ibv_context* context, uint8_t port_num,
                                     __be16 pkey) {
    if (ours(context)) return sv::get_pkey_index(context, port_num, pkey);
    auto* f = real_ibv_get_pkey_index().get();
    return f ? f(context, port_num, pkey) : SIMNIC_NO_REAL_INT();
}

// ---------------------------------------------------------------------------
// Protection domains
// ---------------------------------------------------------------------------
SIMNIC_EXPORT struct ibv_pd* ibv_alloc_pd(struct ibv_context* context) {
    if (ours(context)) return sv::alloc_pd(context);
    auto* f = real_ibv_alloc_pd().get();
    return f ? f(context) : SIMNIC_NO_REAL_PTR();
}

SIMNIC_EXPORT int ibv_dealloc_pd(struct ibv_pd* pd) {
    if (ours_obj(pd)) return sv::dealloc_pd(pd);
    auto* f = real_ibv_dealloc_pd().get();
    return f ? f(pd) : ENOSYS;
}

SIMNIC_EXPORT struct ibv_pd* ibv_import_pd(struct ibv_context* context, uint32_t pd_handle) {
    if (ours(context)) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    auto* f = real_ibv_import_pd().get();
    return f ? f(context, pd_handle) : SIMNIC_NO_REAL_PTR();
}

SIMNIC_EXPORT void ibv_unimport_pd(struct ibv_pd* pd) {
    if (ours_obj(pd)) return;  // nothing is ever imported
    if (auto* f = real_ibv_unimport_pd().get()) f(pd);
}

// ---------------------------------------------------------------------------
// The verbs below arrive with the data path. For simnic objects they fail
// with the documented error; everything else passes through.
// ---------------------------------------------------------------------------
#define SIMNIC_PTR_VERB(ret, name, owner_check, params, args) \
    SIMNIC_EXPORT ret* name params {                             \
        if (owner_check) {                                       \
            errno = EOPNOTSUPP;                                  \
            return nullptr;                                      \
        }                                                        \
        auto* f = real_##name().get();                           \
        return f ? f args : SIMNIC_NO_REAL_PTR();                \
    }
#define SIMNIC_ERRNO_VERB(name, owner_check, params, args) \
    SIMNIC_EXPORT int name params {                         \
        if (owner_check) return EOPNOTSUPP;                 \
        auto* f = real_##name().get();                      \
        return f ? f args : ENOSYS;                         \
    }
#define SIMNIC_MINUS1_VERB(name, owner_check, params, args) \
    SIMNIC_EXPORT int name params {                          \
        if (owner_check) {                                   \
            errno = EOPNOTSUPP;                              \
            return -1;                                       \
        }                                                    \
        auto* f = real_##name().get();                       \
        return f ? f args : SIMNIC_NO_REAL_INT();            \
    }

// Implemented verbs: simnic objects go to the translation layer.
#define SIMNIC_FWD(ret, name, impl, owner_check, params, args, noreal) \
    SIMNIC_EXPORT ret name params {                                   \
        if (owner_check) return sv::impl args;                        \
        auto* f = real_##name().get();                                \
        return f ? f args : noreal;                                   \
    }

// Memory regions
SIMNIC_EXPORT struct ibv_mr* ibv_reg_mr(struct ibv_pd* pd, void* addr, size_t length, int access) {
    if (ours_obj(pd))
        return sv::reg_mr(pd, addr, length, reinterpret_cast<uintptr_t>(addr),
                          static_cast<unsigned>(access));
    auto* f = real_ibv_reg_mr().get();
    return f ? f(pd, addr, length, access) : SIMNIC_NO_REAL_PTR();
}
SIMNIC_EXPORT struct ibv_mr* ibv_reg_mr_iova(struct ibv_pd* pd, void* addr, size_t length,
                                             uint64_t iova, int access) {
    if (ours_obj(pd)) return sv::reg_mr(pd, addr, length, iova, static_cast<unsigned>(access));
    auto* f = real_ibv_reg_mr_iova().get();
    return f ? f(pd, addr, length, iova, access) : SIMNIC_NO_REAL_PTR();
}
SIMNIC_EXPORT struct ibv_mr* ibv_reg_mr_iova2(struct ibv_pd* pd, void* addr, size_t length,
                                              uint64_t iova, unsigned int access) {
    if (ours_obj(pd)) return sv::reg_mr(pd, addr, length, iova, access);
    auto* f = real_ibv_reg_mr_iova2().get();
    return f ? f(pd, addr, length, iova, access) : SIMNIC_NO_REAL_PTR();
}
SIMNIC_PTR_VERB(struct ibv_mr, ibv_reg_dmabuf_mr, ours_obj(pd),
                (struct ibv_pd * pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                 int access),
                (pd, offset, length, iova, fd, access))
SIMNIC_PTR_VERB(struct ibv_mr, ibv_import_mr, ours_obj(pd),
                (struct ibv_pd * pd, uint32_t mr_handle), (pd, mr_handle))
SIMNIC_EXPORT int ibv_dereg_mr(struct ibv_mr* mr) {
    if (ours_obj(mr)) return sv::dereg_mr(mr);
    auto* f = real_ibv_dereg_mr().get();
    return f ? f(mr) : ENOSYS;
}

SIMNIC_EXPORT int ibv_rereg_mr(struct ibv_mr* mr, int flags, struct ibv_pd* pd, void* addr,
                               size_t length, int access) {
    if (ours_obj(mr)) return sv::rereg_mr(mr, flags, pd, addr, length, access);
    if (ours_obj(pd)) {  // a simnic PD for another provider's MR
        errno = EINVAL;
        return IBV_REREG_MR_ERR_INPUT;
    }
    auto* f = real_ibv_rereg_mr().get();
    if (!f) {
        errno = ENOSYS;
        return IBV_REREG_MR_ERR_INPUT;
    }
    return f(mr, flags, pd, addr, length, access);
}

SIMNIC_EXPORT void ibv_unimport_mr(struct ibv_mr* mr) {
    if (ours_obj(mr)) return;
    if (auto* f = real_ibv_unimport_mr().get()) f(mr);
}

SIMNIC_PTR_VERB(struct ibv_dm, ibv_import_dm, ours(context),
                (struct ibv_context * context, uint32_t dm_handle), (context, dm_handle))

SIMNIC_EXPORT void ibv_unimport_dm(struct ibv_dm* dm) {
    if (ours_obj(dm)) return;
    if (auto* f = real_ibv_unimport_dm().get()) f(dm);
}

// Completion channels and CQs
SIMNIC_FWD(struct ibv_comp_channel*, ibv_create_comp_channel, create_comp_channel, ours(context),
           (struct ibv_context * context), (context), SIMNIC_NO_REAL_PTR())
SIMNIC_FWD(int, ibv_destroy_comp_channel, destroy_comp_channel, ours_obj(channel),
           (struct ibv_comp_channel * channel), (channel), ENOSYS)
SIMNIC_FWD(struct ibv_cq*, ibv_create_cq, create_cq, ours(context),
           (struct ibv_context * context, int cqe, void* cq_context,
            struct ibv_comp_channel* channel, int comp_vector),
           (context, cqe, cq_context, channel, comp_vector), SIMNIC_NO_REAL_PTR())
SIMNIC_FWD(int, ibv_resize_cq, resize_cq, ours_obj(cq), (struct ibv_cq * cq, int cqe), (cq, cqe),
           ENOSYS)
SIMNIC_FWD(int, ibv_destroy_cq, destroy_cq, ours_obj(cq), (struct ibv_cq * cq), (cq), ENOSYS)
SIMNIC_FWD(int, ibv_get_cq_event, get_cq_event, ours_obj(channel),
           (struct ibv_comp_channel * channel, struct ibv_cq * *cq, void** cq_context),
           (channel, cq, cq_context), SIMNIC_NO_REAL_INT())

SIMNIC_EXPORT void ibv_ack_cq_events(struct ibv_cq* cq, unsigned int nevents) {
    if (ours_obj(cq)) return sv::ack_cq_events(cq, nevents);
    if (auto* f = real_ibv_ack_cq_events().get()) f(cq, nevents);
}

// SRQs
SIMNIC_FWD(struct ibv_srq*, ibv_create_srq, create_srq, ours_obj(pd),
           (struct ibv_pd * pd, struct ibv_srq_init_attr* srq_init_attr), (pd, srq_init_attr),
           SIMNIC_NO_REAL_PTR())
SIMNIC_FWD(int, ibv_modify_srq, modify_srq, ours_obj(srq),
           (struct ibv_srq * srq, struct ibv_srq_attr* srq_attr, int srq_attr_mask),
           (srq, srq_attr, srq_attr_mask), ENOSYS)
SIMNIC_FWD(int, ibv_query_srq, query_srq, ours_obj(srq),
           (struct ibv_srq * srq, struct ibv_srq_attr* srq_attr), (srq, srq_attr), ENOSYS)
SIMNIC_FWD(int, ibv_destroy_srq, destroy_srq, ours_obj(srq), (struct ibv_srq * srq), (srq),
           ENOSYS)

// QPs
SIMNIC_FWD(struct ibv_qp*, ibv_create_qp, create_qp, ours_obj(pd),
           (struct ibv_pd * pd, struct ibv_qp_init_attr* qp_init_attr), (pd, qp_init_attr),
           SIMNIC_NO_REAL_PTR())
SIMNIC_FWD(int, ibv_query_qp, query_qp, ours_obj(qp),
           (struct ibv_qp * qp, struct ibv_qp_attr* attr, int attr_mask,
            struct ibv_qp_init_attr* init_attr),
           (qp, attr, attr_mask, init_attr), ENOSYS)
SIMNIC_FWD(int, ibv_modify_qp, modify_qp, ours_obj(qp),
           (struct ibv_qp * qp, struct ibv_qp_attr* attr, int attr_mask), (qp, attr, attr_mask),
           ENOSYS)
SIMNIC_FWD(int, ibv_destroy_qp, destroy_qp, ours_obj(qp), (struct ibv_qp * qp), (qp), ENOSYS)
SIMNIC_FWD(struct ibv_qp_ex*, ibv_qp_to_qp_ex, qp_to_qp_ex, ours_obj(qp), (struct ibv_qp * qp),
           (qp), SIMNIC_NO_REAL_PTR())
SIMNIC_ERRNO_VERB(ibv_query_ece, ours_obj(qp), (struct ibv_qp * qp, struct ibv_ece* ece),
                  (qp, ece))
SIMNIC_ERRNO_VERB(ibv_set_ece, ours_obj(qp), (struct ibv_qp * qp, struct ibv_ece* ece),
                  (qp, ece))

SIMNIC_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp* qp, enum ibv_wr_opcode op,
                                             uint32_t flags) {
    if (ours_obj(qp)) return 0;  // no in-order guarantee is claimed
    auto* f = real_ibv_query_qp_data_in_order().get();
    return f ? f(qp, op, flags) : 0;
}

// Address handles
SIMNIC_FWD(struct ibv_ah*, ibv_create_ah, create_ah, ours_obj(pd),
           (struct ibv_pd * pd, struct ibv_ah_attr* attr), (pd, attr), SIMNIC_NO_REAL_PTR())
SIMNIC_FWD(int, ibv_destroy_ah, destroy_ah, ours_obj(ah), (struct ibv_ah * ah), (ah), ENOSYS)
SIMNIC_FWD(int, ibv_init_ah_from_wc, init_ah_from_wc, ours(context),
           (struct ibv_context * context, uint8_t port_num, struct ibv_wc* wc,
            struct ibv_grh* grh, struct ibv_ah_attr* ah_attr),
           (context, port_num, wc, grh, ah_attr), SIMNIC_NO_REAL_INT())
SIMNIC_FWD(struct ibv_ah*, ibv_create_ah_from_wc, create_ah_from_wc, ours_obj(pd),
           (struct ibv_pd * pd, struct ibv_wc* wc, struct ibv_grh* grh, uint8_t port_num),
           (pd, wc, grh, port_num), SIMNIC_NO_REAL_PTR())
SIMNIC_ERRNO_VERB(ibv_resolve_eth_l2_from_gid, ours(context),
                  (struct ibv_context * context, struct ibv_ah_attr* attr,
                   uint8_t eth_mac[ETHERNET_LL_SIZE], uint16_t* vid),
                  (context, attr, eth_mac, vid))

// Multicast
SIMNIC_FWD(int, ibv_attach_mcast, attach_mcast, ours_obj(qp),
           (struct ibv_qp * qp, const union ibv_gid* gid, uint16_t lid), (qp, gid, lid), ENOSYS)
SIMNIC_FWD(int, ibv_detach_mcast, detach_mcast, ours_obj(qp),
           (struct ibv_qp * qp, const union ibv_gid* gid, uint16_t lid), (qp, gid, lid), ENOSYS)
