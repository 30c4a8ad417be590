// The translation layer's devices and contexts (see provider.h): the device
// list and source, sysfs emulation, open/close, the ops tables, and the
// queries. Values come only from the device: the CAP_BLOCK image of
// QUERY_DEVICE, the PORT_BLOCK image of QUERY_PORT, the ID_BLOCK in BAR0, and
// the GID / P_Key commands (hw-spec 2.3-2.5, 5.6.2), read with layout.h.
#include "provider_internal.h"

#include <endian.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

namespace simnic::verbs {

using namespace detail;

namespace {

// ---------------------------------------------------------------------------
// Devices (SimDevice: provider_internal.h)
// ---------------------------------------------------------------------------
struct Registry {
    std::mutex mu;
    DeviceSource source;
    bool source_set = false;
    std::vector<std::unique_ptr<SimDevice>> devices;  // never shrinks

    DeviceSource src() {
        std::lock_guard<std::mutex> lk(mu);
        if (!source_set) {
            source = default_device_source();
            source_set = true;
        }
        return source;
    }
};

Registry& registry() {
    static Registry* r = new Registry;  // never destroyed: objects outlive static teardown
    return *r;
}

SimDevice* find_device(const ibv_device* dev) {
    if (dev == nullptr) return nullptr;
    Registry& r = registry();
    std::lock_guard<std::mutex> lk(r.mu);
    for (auto& d : r.devices)
        if (&d->ibdev == dev) return d.get();
    return nullptr;
}

void copy_str(char* dst, std::size_t cap, const std::string& s) {
    const std::size_t n = std::min(cap - 1, s.size());
    std::memcpy(dst, s.data(), n);
    dst[n] = '\0';
}

SimDevice* device_for(Registry& r, const host::DeviceEntry& e) {
    for (auto& d : r.devices)
        if (d->name == e.name) {
            d->netdev = e.netdev;
            d->type = e.type;
            return d.get();
        }
    auto d = std::make_unique<SimDevice>();
    d->name = e.name;
    d->netdev = e.netdev;
    d->type = e.type;
    d->ibdev.node_type = IBV_NODE_CA;
    d->ibdev.transport_type = IBV_TRANSPORT_IB;
    const std::string uverbs = "simnic_uverbs" + std::to_string(r.devices.size());
    copy_str(d->ibdev.name, sizeof d->ibdev.name, e.name);
    copy_str(d->ibdev.dev_name, sizeof d->ibdev.dev_name, uverbs);
    copy_str(d->ibdev.dev_path, sizeof d->ibdev.dev_path,
             "/sys/class/infiniband_verbs/" + uverbs);
    copy_str(d->ibdev.ibdev_path, sizeof d->ibdev.ibdev_path,
             "/sys/class/infiniband/" + e.name);
    r.devices.push_back(std::move(d));
    return r.devices.back().get();
}

// ---------------------------------------------------------------------------
// Contexts (SimContext, ContextShell: provider_internal.h)
// ---------------------------------------------------------------------------
// Finds a global-area block by walking the chain from offset 0 (hw-spec 2.2);
// falls back to this revision's fixed offset if the chain does not name it.
std::uint32_t find_block(host::Context& hc, hw::BlockType type, std::uint32_t fixed) {
    namespace h = hw::reg_block_header;
    std::uint32_t off = 0;
    for (int hops = 0; hops < 64; ++hops) {
        std::array<std::uint8_t, h::kSize> hdr{};
        if (!hc.read_bar(off, hdr.data(), hdr.size())) break;
        const auto t = hw::get(hdr.data(), hdr.size(), h::type);
        const auto major = hw::get(hdr.data(), hdr.size(), h::version) >> 16;
        if (t == static_cast<std::uint32_t>(type) && major == (hw::kBlockVersion >> 16))
            return off;
        const auto next = static_cast<std::uint32_t>(hw::get(hdr.data(), hdr.size(), h::next));
        if (next == 0 || next <= off) break;
        off = next;
    }
    return fixed;
}

bool read_id_block(host::Context& hc, std::array<std::uint8_t, hw::id_block::kSize>& id) {
    const std::uint32_t off = find_block(hc, hw::BlockType::Id, hw::kBar0IdBlock);
    if (!hc.read_bar(off, id.data(), id.size())) return false;
    return hw::get(id.data(), id.size(), hw::id_block::magic) == hw::kMagic;
}

int query_cap(SimContext& c, std::array<std::uint8_t, hw::cap_block::kSize>& cap) {
    host::CmdOutcome r;
    const int e = run(c, hw::CmdOpcode::QueryDevice, nullptr, 0, cap.size(), r);
    if (e != 0) return e;
    if (r.out.size() < cap.size()) return EIO;
    std::copy_n(r.out.begin(), cap.size(), cap.begin());
    return 0;
}

int query_port_block(SimContext& c, std::uint8_t port,
                     std::array<std::uint8_t, hw::port_block::kSize>& pb) {
    std::array<std::uint8_t, hw::cmd_query_port_in::kSize> in{};
    hw::set(in.data(), in.size(), hw::cmd_query_port_in::port_num, port);
    host::CmdOutcome r;
    int e = run(c, hw::CmdOpcode::QueryPort, in.data(), in.size(), pb.size(), r);
    if (e == ENOENT) e = EINVAL;  // no such port: libibverbs says EINVAL
    if (e != 0) return e;
    if (r.out.size() < pb.size()) return EIO;
    std::copy_n(r.out.begin(), pb.size(), pb.begin());
    return 0;
}

// PORT_BLOCK gid_gen and gid_tbl_len of port 1 as BAR0 shows them now (a
// load from the mapped page, no command); false if the block cannot be read.
bool gid_generation(SimContext& c, std::uint32_t& gen, std::uint32_t& len) {
    namespace pb = hw::port_block;
    std::array<std::uint8_t, pb::kSize> b{};
    const std::uint32_t off = find_block(*c.hc, hw::BlockType::Port, hw::kBar0PortBlock);
    if (!c.hc->read_bar(off, b.data(), b.size())) return false;
    gen = static_cast<std::uint32_t>(hw::get(b.data(), b.size(), pb::gid_gen));
    len = static_cast<std::uint32_t>(hw::get(b.data(), b.size(), pb::gid_tbl_len));
    return true;
}

// One GID_ENTRY image; 0 or an errno. Port 1's entries come from the
// context's cache while BAR0's gid_gen is the one read before they were
// fetched (hw-spec 9.8), as the kernel's GID cache answers ibv_query_gid
// and the sysfs files without a device command: perftest asks for every
// index of the 1024-entry table about four times as it starts, each a
// round trip to the daemon otherwise.
int query_gid_entry(SimContext& c, std::uint32_t port, std::uint32_t index,
                    std::array<std::uint8_t, hw::gid_entry::kSize>& ge) {
    if (port > 0xFF || index > 0xFFFF) return EINVAL;
    std::uint32_t gen = 0, len = 0;
    const bool cacheable = port == 1 && !c.fatal.load(std::memory_order_acquire) && gid_generation(c, gen, len) &&
                           index < len;
    if (cacheable) {
        std::lock_guard<std::mutex> lk(c.gid_mu);
        if (index < c.gids.size() && c.gids[index].known && c.gids[index].gen == gen) {
            ge = c.gids[index].entry;
            return 0;
        }
    }
    namespace q = hw::cmd_query_gid_in;
    std::array<std::uint8_t, q::kSize> in{};
    hw::set(in.data(), in.size(), q::port_num, port);
    hw::set(in.data(), in.size(), q::index, index);
    host::CmdOutcome r;
    int e = run(c, hw::CmdOpcode::QueryGid, in.data(), in.size(), ge.size(), r);
    if (e == ENOENT) e = EINVAL;
    if (e != 0) return e;
    if (r.out.size() < ge.size()) return EIO;
    std::copy_n(r.out.begin(), ge.size(), ge.begin());
    // Kept under the generation read before the command: if the table
    // changed meanwhile, BAR0 shows a newer one and this entry is asked
    // for again next time.
    if (cacheable) {
        std::lock_guard<std::mutex> lk(c.gid_mu);
        if (c.gids.size() < len) c.gids.resize(len);
        c.gids[index] = {true, gen, ge};
    }
    return 0;
}

// ---------------------------------------------------------------------------
// The ops tables. What the data path will provide is not there yet: those
// entries fail with EOPNOTSUPP in each verb's own convention, never crash.
// ---------------------------------------------------------------------------
template <typename F>
struct Unsupported;
template <typename... A>
struct Unsupported<int(A...)> {
    static int fn(A...) { return EOPNOTSUPP; }
};
template <typename T, typename... A>
struct Unsupported<T*(A...)> {
    static T* fn(A...) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
};
template <typename F>
void unsupported(F*& slot) {
    slot = &Unsupported<F>::fn;
}

// The data path (datapath.cc) and the objects (objects.cc) go in by name.
int op_post_srq_ops(ibv_srq*, ibv_ops_wr* op, ibv_ops_wr** bad) {
    if (bad) *bad = op;
    return EOPNOTSUPP;
}
int op_query_port(ibv_context* ctx, std::uint8_t port, ibv_port_attr* attr, std::size_t len) {
    return query_port(ctx, port, attr, len);
}
int op_compat_query_port(ibv_context* ctx, std::uint8_t port, _compat_ibv_port_attr* attr) {
    return query_port(ctx, port, reinterpret_cast<ibv_port_attr*>(attr), kCompatPortAttrSize);
}

ibv_qp* op_create_qp_ex(ibv_context* ctx, ibv_qp_init_attr_ex* attr) {
    return create_qp_ex(ctx, attr);
}

void fill_ops(ContextShell& s) {
    verbs_context& v = s.vctx;
    ibv_context_ops& o = v.context.ops;
    o._compat_query_device = &query_device;
    o._compat_query_port = &op_compat_query_port;
    unsupported(o._compat_alloc_pd);
    unsupported(o._compat_dealloc_pd);
    unsupported(o._compat_reg_mr);
    unsupported(o._compat_rereg_mr);
    unsupported(o._compat_dereg_mr);
    o.alloc_mw = &alloc_mw;
    o.bind_mw = &bind_mw;
    o.dealloc_mw = &dealloc_mw;
    unsupported(o._compat_create_cq);
    o.poll_cq = &op_poll_cq;
    o.req_notify_cq = &op_req_notify_cq;
    unsupported(o._compat_cq_event);
    unsupported(o._compat_resize_cq);
    unsupported(o._compat_destroy_cq);
    unsupported(o._compat_create_srq);
    unsupported(o._compat_modify_srq);
    unsupported(o._compat_query_srq);
    unsupported(o._compat_destroy_srq);
    o.post_srq_recv = &op_post_srq_recv;
    unsupported(o._compat_create_qp);
    unsupported(o._compat_query_qp);
    unsupported(o._compat_modify_qp);
    unsupported(o._compat_destroy_qp);
    o.post_send = &op_post_send;
    o.post_recv = &op_post_recv;
    unsupported(o._compat_create_ah);
    unsupported(o._compat_destroy_ah);
    unsupported(o._compat_attach_mcast);
    unsupported(o._compat_detach_mcast);
    unsupported(o._compat_async_event);

    v.query_port = &op_query_port;
    v.advise_mr = &advise_mr;
    unsupported(v.alloc_null_mr);
    unsupported(v.read_counters);
    unsupported(v.attach_counters_point_flow);
    unsupported(v.create_counters);
    unsupported(v.destroy_counters);
    unsupported(v.reg_dm_mr);
    unsupported(v.alloc_dm);
    unsupported(v.free_dm);
    unsupported(v.modify_flow_action_esp);
    unsupported(v.destroy_flow_action);
    unsupported(v.create_flow_action_esp);
    unsupported(v.modify_qp_rate_limit);
    unsupported(v.alloc_parent_domain);
    unsupported(v.dealloc_td);
    unsupported(v.alloc_td);
    v.modify_cq = &modify_cq;
    v.post_srq_ops = &op_post_srq_ops;
    unsupported(v.destroy_rwq_ind_table);
    unsupported(v.create_rwq_ind_table);
    unsupported(v.destroy_wq);
    unsupported(v.modify_wq);
    unsupported(v.create_wq);
    unsupported(v.query_rt_values);
    v.create_cq_ex = &create_cq_ex;
    v.priv = nullptr;  // libibverbs' own, never touched for these contexts
    v.query_device_ex = &query_device_ex;
    unsupported(v.ibv_destroy_flow);
    unsupported(v.ibv_create_flow);
    unsupported(v.open_qp);
    v.create_qp_ex = &op_create_qp_ex;
    unsupported(v.get_srq_num);
    v.create_srq_ex = &create_srq_ex;
    unsupported(v.open_xrcd);
    unsupported(v.close_xrcd);
    v.sz = sizeof(verbs_context);
}

std::string guid_text(std::uint64_t g) {
    char b[32];
    std::snprintf(b, sizeof b, "%04x:%04x:%04x:%04x", static_cast<unsigned>(g >> 48) & 0xFFFF,
                  static_cast<unsigned>(g >> 32) & 0xFFFF, static_cast<unsigned>(g >> 16) & 0xFFFF,
                  static_cast<unsigned>(g) & 0xFFFF);
    return b;
}

std::unique_ptr<host::Context> open_host(SimDevice& d, int& err) {
    const DeviceSource src = registry().src();
    err = 0;
    std::unique_ptr<host::Context> hc = src.open ? src.open(d.name, err) : nullptr;
    if (!hc && err == 0) err = ENODEV;
    return hc;
}

}  // namespace

// ---------------------------------------------------------------------------
// Device source
// ---------------------------------------------------------------------------
DeviceSource default_device_source() {
    DeviceSource s;
    s.list = [](std::vector<host::DeviceEntry>& out) { return host::list_devices(out); };
    s.open = [](const std::string& name, int& err) { return host::open_context(name, err); };
    return s;
}

void set_device_source(DeviceSource src) {
    Registry& r = registry();
    std::lock_guard<std::mutex> lk(r.mu);
    r.source = std::move(src);
    r.source_set = true;
}

// ---------------------------------------------------------------------------
// Devices
// ---------------------------------------------------------------------------
int current_devices(std::vector<ibv_device*>& out) {
    out.clear();
    const DeviceSource src = registry().src();
    if (!src.list) return 0;
    std::vector<host::DeviceEntry> entries;
    const int e = src.list(entries);
    if (e != 0) return e;
    Registry& r = registry();
    std::lock_guard<std::mutex> lk(r.mu);
    for (const auto& en : entries) out.push_back(&device_for(r, en)->ibdev);
    return 0;
}

bool is_device(const ibv_device* dev) { return find_device(dev) != nullptr; }

const char* device_name(ibv_device* dev) {
    SimDevice* d = find_device(dev);
    return d ? d->ibdev.name : nullptr;
}

__be64 device_guid(ibv_device* dev) {
    SimDevice* d = find_device(dev);
    if (d == nullptr) {
        errno = ENODEV;
        return 0;
    }
    {
        std::lock_guard<std::mutex> lk(registry().mu);
        if (d->guid != 0) return d->guid;
    }
    int err = 0;
    std::unique_ptr<host::Context> hc = open_host(*d, err);
    if (!hc) {
        errno = err;
        return 0;
    }
    std::array<std::uint8_t, hw::id_block::kSize> id{};
    if (!read_id_block(*hc, id)) {
        errno = EIO;
        return 0;
    }
    const __be64 g = htobe64(hw::get(id.data(), id.size(), hw::id_block::node_guid));
    std::lock_guard<std::mutex> lk(registry().mu);
    d->guid = g;
    return g;
}

// ---------------------------------------------------------------------------
// sysfs emulation
// ---------------------------------------------------------------------------
namespace {

bool same_dir(const char* dir, const char* path) {
    std::size_t n = std::strlen(dir);
    while (n > 1 && dir[n - 1] == '/') --n;
    return std::strlen(path) == n && std::strncmp(dir, path, n) == 0;
}

// The contents kernel rxe's sysfs files would have (without the newline);
// false for files rxe does not have.
bool sysfs_text(SimDevice& d, bool ibdev_dir, const std::string& file, std::string& text) {
    if (!ibdev_dir) {  // /sys/class/infiniband_verbs/uverbsN
        if (file == "ibdev") text = d.name;
        else if (file == "abi_version") text = "1";
        else return false;
        return true;
    }
    if (file == "node_type") {
        text = "1: CA";
        return true;
    }
    if (file == "node_desc") {
        text = d.name;
        return true;
    }
    int err = 0;
    std::unique_ptr<host::Context> hc = open_host(d, err);
    if (!hc) return false;
    // ports/P/gid_attrs/{types,ndevs}/I: each GID's RoCE version and netdev,
    // which UCX reads to pick its GID (kernel: show_port_gid_attr_*). An
    // unused index has a type (IB/RoCE v1, as ibv_query_gid_type says) and
    // no netdev.
    unsigned port = 0, index = 0;
    char kind[8] = {};
    int used = 0;
    if (std::sscanf(file.c_str(), "ports/%u/gid_attrs/%7[a-z]/%u%n", &port, kind, &index, &used) == 3 &&
        std::size_t(used) == file.size() && (std::strcmp(kind, "types") == 0 || std::strcmp(kind, "ndevs") == 0)) {
        namespace q = hw::cmd_query_gid_in;
        std::array<std::uint8_t, q::kSize> in{};
        if (port > 0xFF || index > 0xFFFF) return false;
        hw::set(in.data(), in.size(), q::port_num, port);
        hw::set(in.data(), in.size(), q::index, index);
        host::CmdOutcome r;
        if (hc->command(hw::CmdOpcode::QueryGid, in.data(), in.size(), hw::gid_entry::kSize, r) != 0 ||
            r.status != hw::CmdStatus::Ok || r.out.size() < hw::gid_entry::kSize)
            return false;
        const bool valid = hw::get(r.out.data(), r.out.size(), hw::gid_entry::valid) != 0;
        if (kind[0] == 'n') {
            if (!valid || d.netdev.empty()) return false;
            text = d.netdev;
        } else {
            const bool v2 = valid && hw::get(r.out.data(), r.out.size(), hw::gid_entry::gid_type) ==
                                         static_cast<std::uint64_t>(hw::GidType::RoceV2);
            text = v2 ? "RoCE v2" : "IB/RoCE v1";
        }
        return true;
    }
    std::array<std::uint8_t, hw::id_block::kSize> id{};
    if (!read_id_block(*hc, id)) return false;
    auto g = [&id](hw::Field f) { return hw::get(id.data(), id.size(), f); };
    if (file == "fw_ver") {
        text = std::to_string(g(hw::id_block::fw_major)) + "." +
               std::to_string(g(hw::id_block::fw_minor)) + "." +
               std::to_string(g(hw::id_block::fw_subminor));
    } else if (file == "node_guid") {
        text = guid_text(g(hw::id_block::node_guid));
    } else if (file == "sys_image_guid") {
        text = guid_text(g(hw::id_block::sys_image_guid));
    } else {
        return false;  // board_id, hw_rev, hca_type, ...: rxe has none of them
    }
    return true;
}

}  // namespace

bool sysfs_path_text(const char* path, std::string& text) {
    if (path == nullptr) return false;
    SimDevice* dev = nullptr;
    std::string file;
    {
        Registry& r = registry();
        std::lock_guard<std::mutex> lk(r.mu);
        for (auto& d : r.devices) {
            const std::size_t n = std::strlen(d->ibdev.ibdev_path);
            if (std::strncmp(path, d->ibdev.ibdev_path, n) == 0 && path[n] == '/') {
                dev = d.get();
                file = path + n + 1;
                break;
            }
        }
    }
    if (dev == nullptr) return false;
    if (!sysfs_text(*dev, true, file, text)) {
        errno = ENOENT;
        text.clear();
        return true;
    }
    text += '\n';
    return true;
}

bool read_sysfs_file(const char* dir, const char* file, char* buf, std::size_t size, int& ret) {
    if (dir == nullptr || file == nullptr) return false;
    SimDevice* dev = nullptr;
    bool ibdev_dir = false;
    {
        Registry& r = registry();
        std::lock_guard<std::mutex> lk(r.mu);
        for (auto& d : r.devices) {
            if (same_dir(dir, d->ibdev.ibdev_path)) {
                dev = d.get();
                ibdev_dir = true;
                break;
            }
            if (same_dir(dir, d->ibdev.dev_path)) {
                dev = d.get();
                break;
            }
        }
    }
    if (dev == nullptr) return false;
    std::string text;
    if (!sysfs_text(*dev, ibdev_dir, file, text)) {
        errno = ENOENT;
        ret = -1;
        return true;
    }
    if (buf == nullptr || size == 0) {
        errno = EINVAL;
        ret = -1;
        return true;
    }
    const std::size_t n = std::min(size - 1, text.size());
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
    ret = static_cast<int>(n);
    return true;
}

// ---------------------------------------------------------------------------
// Contexts
// ---------------------------------------------------------------------------
// is_context: datapath.cc, beside op_poll_cq (whose address identifies a
// simnic context), so the data path inlines it.

host::Context* host_context(ibv_context* ctx) {
    SimContext* c = sim(ctx);
    return c ? c->hc.get() : nullptr;
}

ibv_context* open_device_on(ibv_device* dev, std::unique_ptr<host::Context> hc) {
    SimDevice* d = find_device(dev);
    if (d == nullptr || !hc) {
        errno = ENODEV;
        return nullptr;
    }
    auto* impl = new (std::nothrow) SimContext;
    auto* shell = static_cast<ContextShell*>(std::calloc(1, sizeof(ContextShell)));
    if (impl == nullptr || shell == nullptr) {
        delete impl;
        std::free(shell);
        errno = ENOMEM;
        return nullptr;
    }
    impl->dev = d;
    impl->hc = std::move(hc);
    impl->shell = shell;
    shell->impl = impl;
    fill_ops(*shell);
    ibv_context& c = shell->vctx.context;
    c.device = &d->ibdev;
    c.cmd_fd = -1;  // no kernel behind it
    c.num_comp_vectors = 1;
    pthread_mutex_init(&c.mutex, nullptr);
    c.abi_compat = __VERBS_ABI_IS_EXTENDED;
    if (query_cap(*impl, impl->cap) == 0) {
        const auto n = impl->cap_get(hw::cap_block::num_comp_vectors);
        if (n > 0) c.num_comp_vectors = static_cast<int>(n);
    }
    // The async fd is ours (readable while async events are queued); the
    // event thread feeds it and the completion channels.
    const int e = start_events(*impl);
    if (e != 0) {
        pthread_mutex_destroy(&c.mutex);
        delete impl;
        std::free(shell);
        errno = e;
        return nullptr;
    }
    c.async_fd = impl->async.fd;
    return &c;
}

ibv_context* open_device(ibv_device* dev) {
    SimDevice* d = find_device(dev);
    if (d == nullptr) {
        errno = ENODEV;
        return nullptr;
    }
    int err = 0;
    std::unique_ptr<host::Context> hc = open_host(*d, err);
    if (!hc) {
        errno = err;
        return nullptr;
    }
    return open_device_on(dev, std::move(hc));
}

int close_device(ibv_context* ctx) {
    SimContext* c = sim(ctx);
    if (c == nullptr) return EINVAL;
    ContextShell* shell = c->shell;
    stop_events(*c);
    shell->vctx.context.ops.poll_cq = nullptr;  // no longer a simnic context
    pthread_mutex_destroy(&shell->vctx.context.mutex);
    for (SimPd* p : c->pds) std::free(p);
    delete c;  // closes the host context: the device frees what it still owns
    std::free(shell);
    return 0;
}

// ---------------------------------------------------------------------------
// Queries
// ---------------------------------------------------------------------------
namespace {

void fill_device_attr(const std::array<std::uint8_t, hw::cap_block::kSize>& cap,
                      const std::array<std::uint8_t, hw::id_block::kSize>& id,
                      ibv_device_attr& a) {
    auto c = [&cap](hw::Field f) { return hw::get(cap.data(), cap.size(), f); };
    auto i = [&id](hw::Field f) { return hw::get(id.data(), id.size(), f); };
    auto i32 = [](std::uint64_t v) {
        return static_cast<int>(std::min<std::uint64_t>(v, std::numeric_limits<int>::max()));
    };
    std::memset(&a, 0, sizeof a);
    std::snprintf(a.fw_ver, sizeof a.fw_ver, "%u.%u.%u",
                  static_cast<unsigned>(i(hw::id_block::fw_major)),
                  static_cast<unsigned>(i(hw::id_block::fw_minor)),
                  static_cast<unsigned>(i(hw::id_block::fw_subminor)));
    a.node_guid = htobe64(i(hw::id_block::node_guid));
    a.sys_image_guid = htobe64(i(hw::id_block::sys_image_guid));
    a.max_mr_size = c(hw::cap_block::max_mr_size);
    a.page_size_cap = c(hw::cap_block::page_size_cap);
    a.vendor_id = static_cast<std::uint32_t>(i(hw::id_block::vendor_id));
    a.vendor_part_id = static_cast<std::uint32_t>(i(hw::id_block::vendor_part_id));
    a.hw_ver = static_cast<std::uint32_t>(i(hw::id_block::hw_rev));
    a.max_qp = i32(c(hw::cap_block::max_qp));
    a.max_qp_wr = i32(c(hw::cap_block::max_qp_wr));
    a.device_cap_flags = static_cast<unsigned>(c(hw::cap_block::device_cap_flags) & 0xFFFFFFFFu);
    a.max_sge = i32(c(hw::cap_block::max_sge));
    a.max_sge_rd = i32(c(hw::cap_block::max_sge_rd));
    a.max_cq = i32(c(hw::cap_block::max_cq));
    a.max_cqe = i32(c(hw::cap_block::max_cqe));
    a.max_mr = i32(c(hw::cap_block::max_mr));
    a.max_pd = i32(c(hw::cap_block::max_pd));
    a.max_qp_rd_atom = i32(c(hw::cap_block::max_qp_rd_atom));
    a.max_ee_rd_atom = 0;
    a.max_res_rd_atom = i32(c(hw::cap_block::max_res_rd_atom));
    a.max_qp_init_rd_atom = i32(c(hw::cap_block::max_qp_init_rd_atom));
    a.max_ee_init_rd_atom = 0;
    a.atomic_cap = static_cast<ibv_atomic_cap>(c(hw::cap_block::atomic_cap));
    a.max_ee = 0;
    a.max_rdd = 0;
    a.max_mw = i32(c(hw::cap_block::max_mw));
    a.max_raw_ipv6_qp = 0;
    a.max_raw_ethy_qp = 0;
    a.max_mcast_grp = i32(c(hw::cap_block::max_mcast_grp));
    a.max_mcast_qp_attach = i32(c(hw::cap_block::max_mcast_qp_attach));
    a.max_total_mcast_qp_attach = i32(c(hw::cap_block::max_total_mcast_qp_attach));
    a.max_ah = i32(c(hw::cap_block::max_ah));
    a.max_fmr = 0;
    a.max_map_per_fmr = 0;
    a.max_srq = i32(c(hw::cap_block::max_srq));
    a.max_srq_wr = i32(c(hw::cap_block::max_srq_wr));
    a.max_srq_sge = i32(c(hw::cap_block::max_srq_sge));
    a.max_pkeys = static_cast<std::uint16_t>(c(hw::cap_block::max_pkeys));
    a.local_ca_ack_delay = static_cast<std::uint8_t>(c(hw::cap_block::local_ca_ack_delay));
    a.phys_port_cnt = static_cast<std::uint8_t>(c(hw::cap_block::phys_port_cnt));
}

int device_attr(SimContext& c, ibv_device_attr_ex& ex) {
    std::memset(&ex, 0, sizeof ex);
    std::array<std::uint8_t, hw::cap_block::kSize> cap{};
    const int e = query_cap(c, cap);
    if (e != 0) return e;
    std::array<std::uint8_t, hw::id_block::kSize> id{};
    if (!read_id_block(*c.hc, id)) return EIO;
    fill_device_attr(cap, id, ex.orig_attr);
    ex.device_cap_flags_ex = hw::get(cap.data(), cap.size(), hw::cap_block::device_cap_flags);
    ex.phys_port_cnt_ex = ex.orig_attr.phys_port_cnt;
    auto cb = [&cap](hw::Field f) { return static_cast<std::uint32_t>(hw::get(cap.data(), cap.size(), f)); };
    ex.odp_caps.general_caps = cb(hw::cap_block::odp_general_caps);
    ex.odp_caps.per_transport_caps.rc_odp_caps = cb(hw::cap_block::odp_rc_caps);
    ex.odp_caps.per_transport_caps.uc_odp_caps = cb(hw::cap_block::odp_uc_caps);
    ex.odp_caps.per_transport_caps.ud_odp_caps = cb(hw::cap_block::odp_ud_caps);
    return 0;
}

}  // namespace

int query_device(ibv_context* ctx, ibv_device_attr* attr) {
    SimContext* c = sim(ctx);
    if (c == nullptr || attr == nullptr) return EINVAL;
    ibv_device_attr_ex ex;
    const int e = device_attr(*c, ex);
    if (e == 0) *attr = ex.orig_attr;
    return e;
}

int query_device_ex(ibv_context* ctx, const ibv_query_device_ex_input* input,
                    ibv_device_attr_ex* attr, std::size_t attr_size) {
    SimContext* c = sim(ctx);
    if (c == nullptr || attr == nullptr) return EINVAL;
    if (input != nullptr && input->comp_mask != 0) return EINVAL;
    if (attr_size < sizeof(ibv_device_attr)) return EINVAL;
    ibv_device_attr_ex ex;
    const int e = device_attr(*c, ex);
    if (e != 0) return e;
    std::memcpy(attr, &ex, std::min(attr_size, sizeof ex));
    return 0;
}

int query_port(ibv_context* ctx, std::uint8_t port_num, ibv_port_attr* attr,
               std::size_t attr_size) {
    SimContext* c = sim(ctx);
    if (c == nullptr || attr == nullptr) return EINVAL;
    if (attr_size < kCompatPortAttrSize) return EINVAL;
    std::array<std::uint8_t, hw::port_block::kSize> pb{};
    const int e = query_port_block(*c, port_num, pb);
    if (e != 0) return e;
    auto p = [&pb](hw::Field f) { return hw::get(pb.data(), pb.size(), f); };
    ibv_port_attr a;
    std::memset(&a, 0, sizeof a);
    a.state = static_cast<ibv_port_state>(p(hw::port_block::state));
    a.max_mtu = static_cast<ibv_mtu>(p(hw::port_block::max_mtu));
    a.active_mtu = static_cast<ibv_mtu>(p(hw::port_block::active_mtu));
    a.gid_tbl_len = static_cast<int>(p(hw::port_block::gid_tbl_len));
    a.port_cap_flags = static_cast<std::uint32_t>(p(hw::port_block::port_cap_flags));
    a.max_msg_sz = static_cast<std::uint32_t>(p(hw::port_block::max_msg_sz));
    a.bad_pkey_cntr = static_cast<std::uint32_t>(p(hw::port_block::bad_pkey_cntr));
    a.qkey_viol_cntr = static_cast<std::uint32_t>(p(hw::port_block::qkey_viol_cntr));
    a.pkey_tbl_len = static_cast<std::uint16_t>(p(hw::port_block::pkey_tbl_len));
    a.lid = 0;     // RoCE: no LIDs, no subnet manager
    a.sm_lid = 0;
    a.lmc = 0;
    a.max_vl_num = static_cast<std::uint8_t>(p(hw::port_block::max_vl_num));
    a.sm_sl = 0;
    a.subnet_timeout = 0;
    a.init_type_reply = 0;
    a.active_width = static_cast<std::uint8_t>(p(hw::port_block::active_width));
    a.active_speed = static_cast<std::uint8_t>(p(hw::port_block::active_speed));
    a.phys_state = static_cast<std::uint8_t>(p(hw::port_block::phys_state));
    a.link_layer = static_cast<std::uint8_t>(p(hw::port_block::link_layer));
    a.flags = 0;
    a.port_cap_flags2 = 0;
    std::memcpy(attr, &a, std::min(attr_size, sizeof a));
    return 0;
}

int query_gid_ex(ibv_context* ctx, std::uint32_t port_num, std::uint32_t index,
                 ibv_gid_entry* entry, std::uint32_t flags, std::size_t entry_size) {
    SimContext* c = sim(ctx);
    if (c == nullptr || entry == nullptr || flags != 0 || entry_size < sizeof(ibv_gid_entry))
        return EINVAL;
    std::array<std::uint8_t, hw::gid_entry::kSize> ge{};
    const int e = query_gid_entry(*c, port_num, index, ge);
    if (e != 0) return e;
    namespace g = hw::gid_entry;
    if (hw::get(ge.data(), ge.size(), g::valid) == 0) return ENODATA;
    ibv_gid_entry out;
    std::memset(&out, 0, sizeof out);
    hw::get_bytes(ge.data(), ge.size(), g::gid, out.gid.raw, sizeof out.gid.raw);
    out.gid_index = index;
    out.port_num = port_num;
    out.gid_type = static_cast<std::uint32_t>(hw::get(ge.data(), ge.size(), g::gid_type));
    out.ndev_ifindex = static_cast<std::uint32_t>(hw::get(ge.data(), ge.size(), g::ndev_ifindex));
    std::memcpy(entry, &out, sizeof out);
    return 0;
}

int query_gid(ibv_context* ctx, std::uint8_t port_num, int index, ibv_gid* gid) {
    if (gid == nullptr || index < 0) {
        errno = EINVAL;
        return -1;
    }
    ibv_gid_entry entry;
    const int e = query_gid_ex(ctx, port_num, static_cast<std::uint32_t>(index), &entry, 0,
                               sizeof entry);
    if (e == ENODATA) {  // an unused index reads as zeros, as libibverbs does
        std::memset(gid, 0, sizeof *gid);
        return 0;
    }
    if (e != 0) {
        errno = e;
        return -1;
    }
    *gid = entry.gid;
    return 0;
}

ssize_t query_gid_table(ibv_context* ctx, ibv_gid_entry* entries, std::size_t max_entries,
                        std::uint32_t flags, std::size_t entry_size) {
    SimContext* c = sim(ctx);
    if (c == nullptr || flags != 0 || entry_size < sizeof(ibv_gid_entry) ||
        (entries == nullptr && max_entries != 0))
        return -EINVAL;
    std::array<std::uint8_t, hw::cap_block::kSize> cap{};
    int e = query_cap(*c, cap);
    if (e != 0) return -e;
    const auto ports = hw::get(cap.data(), cap.size(), hw::cap_block::phys_port_cnt);
    std::size_t n = 0;
    for (std::uint32_t port = 1; port <= ports; ++port) {
        std::array<std::uint8_t, hw::port_block::kSize> pb{};
        e = query_port_block(*c, static_cast<std::uint8_t>(port), pb);
        if (e != 0) return -e;
        const auto len = hw::get(pb.data(), pb.size(), hw::port_block::gid_tbl_len);
        for (std::uint32_t i = 0; i < len; ++i) {
            ibv_gid_entry g;
            e = query_gid_ex(ctx, port, i, &g, 0, sizeof g);
            if (e == ENODATA) continue;
            if (e != 0) return -e;
            if (n >= max_entries) return -EINVAL;
            std::memcpy(reinterpret_cast<std::uint8_t*>(entries) + n * entry_size, &g, sizeof g);
            ++n;
        }
    }
    return static_cast<ssize_t>(n);
}

int query_gid_type(ibv_context* ctx, std::uint8_t port_num, unsigned int index, int* type) {
    ibv_gid_entry entry;
    if (type == nullptr) {
        errno = EINVAL;
        return -1;
    }
    const int e = query_gid_ex(ctx, port_num, index, &entry, 0, sizeof entry);
    if (e == ENODATA) {
        // rxe's sysfs lists a type for every index of the table: an unused
        // one reads as IB/RoCE v1.
        *type = kGidTypeSysfsIbRoceV1;
        return 0;
    }
    if (e != 0) {
        errno = e;
        return -1;
    }
    *type = entry.gid_type == static_cast<std::uint32_t>(hw::GidType::RoceV2)
                ? kGidTypeSysfsRoceV2
                : kGidTypeSysfsIbRoceV1;
    return 0;
}

int query_pkey(ibv_context* ctx, std::uint8_t port_num, int index, __be16* pkey) {
    SimContext* c = sim(ctx);
    if (c == nullptr || pkey == nullptr || index < 0 || index > 0xFFFF) {
        errno = EINVAL;
        return -1;
    }
    namespace q = hw::cmd_query_pkey_in;
    std::array<std::uint8_t, q::kSize> in{};
    hw::set(in.data(), in.size(), q::port_num, port_num);
    hw::set(in.data(), in.size(), q::index, static_cast<std::uint64_t>(index));
    host::CmdOutcome r;
    const int e = run(*c, hw::CmdOpcode::QueryPkey, in.data(), in.size(),
                      hw::cmd_query_pkey_out::kSize, r);
    if (e != 0) {
        errno = e;
        return -1;
    }
    if (r.out.size() < hw::cmd_query_pkey_out::kSize) {
        errno = EIO;
        return -1;
    }
    *pkey = htobe16(static_cast<std::uint16_t>(
        hw::get(r.out.data(), r.out.size(), hw::cmd_query_pkey_out::pkey)));
    return 0;
}

int get_pkey_index(ibv_context* ctx, std::uint8_t port_num, __be16 pkey) {
    SimContext* c = sim(ctx);
    if (c == nullptr) {
        errno = EINVAL;
        return -1;
    }
    std::array<std::uint8_t, hw::port_block::kSize> pb{};
    const int e = query_port_block(*c, port_num, pb);
    if (e != 0) {
        errno = e;
        return -1;
    }
    const auto len = hw::get(pb.data(), pb.size(), hw::port_block::pkey_tbl_len);
    for (std::uint32_t i = 0; i < len; ++i) {
        __be16 v = 0;
        if (query_pkey(ctx, port_num, static_cast<int>(i), &v) != 0) return -1;
        if (v == pkey) return static_cast<int>(i);
    }
    errno = ENOENT;
    return -1;
}

}  // namespace simnic::verbs
