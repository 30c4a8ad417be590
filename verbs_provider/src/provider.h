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

}  // namespace simnic::verbs
