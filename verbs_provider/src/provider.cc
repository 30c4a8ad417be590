// The translation layer: libibverbs' public objects for simnic devices (see
// provider.h). Values come only from the device: the CAP_BLOCK image of
// QUERY_DEVICE, the PORT_BLOCK image of QUERY_PORT, the ID_BLOCK in BAR0, and
// the GID / P_Key commands (hw-spec 2.3-2.5, 5.6.2), read with layout.h.
#include "provider.h"
#include "queue_arena.h"

#include <sched.h>
#include <endian.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>
#include <atomic>
#include <deque>
#include <map>
#include <set>
#include <thread>

#include <poll.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "simnic/hw/field.h"
#include "simnic/hw/layout.h"

namespace simnic::verbs {

namespace {

// ---------------------------------------------------------------------------
// Devices
// ---------------------------------------------------------------------------
struct SimDevice {
    ibv_device ibdev{};
    std::string name;
    std::string netdev;
    std::string type;
    __be64 guid = 0;  // cached node GUID, 0 until known
};

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
// Contexts
// ---------------------------------------------------------------------------
struct SimContext;

// The object handed to the application: a public verbs_context (context last,
// as verbs.h requires) preceded by our back pointer. Standard layout.
struct ContextShell {
    SimContext* impl;
    verbs_context vctx;
};

struct SimCq;
struct SimQp;
struct SimSrq;

// A queue of events behind a file descriptor that is readable exactly while
// the queue is not empty (completion channels, the async fd). The fd is a
// plain eventfd; every read and write of it happens under `mu`, after a
// zero-timeout poll, so neither ever blocks.
template <typename T>
struct FdQueue {
    std::mutex mu;
    std::deque<T> q;
    int fd = -1;

    void push(const T& v);
    // Pops one event; blocks (poll on fd) unless the fd is O_NONBLOCK.
    // 0, or an errno (EAGAIN when empty and non-blocking).
    int pop(T& out);
    template <typename P>
    void purge(P pred);

private:
    void drain_locked();
};

struct SimContext {
    SimDevice* dev = nullptr;
    std::unique_ptr<host::Context> hc;
    QueueArena queues;  // ring memory, shared with the device
    ContextShell* shell = nullptr;
    std::array<std::uint8_t, hw::cap_block::kSize> cap{};
    // Objects by device number, for event dispatch (obj_mu).
    std::mutex obj_mu;
    std::map<std::uint32_t, SimCq*> cqs;
    std::map<std::uint32_t, SimQp*> qps;
    std::map<std::uint32_t, SimSrq*> srqs;
    // PDs the application has not deallocated: freed with the context, as
    // the device frees the PDs themselves (obj_mu).
    std::set<struct SimPd*> pds;
    // Events: the thread waiting on hc->event_fd(), the async queue.
    FdQueue<ibv_async_event> async;
    std::thread ev_thread;
    int stop_fd = -1;
    // When the current empty spell of this context's CQs began (monotonic
    // ns; 0: a poll found a CQE since). Polling that has found nothing
    // anywhere for a while naps (cq_relax).
    std::atomic<std::uint64_t> last_cqe_ns{0};
    std::uint64_t cap_get(hw::Field f) const { return hw::get(cap.data(), cap.size(), f); }
};

struct SimPd {
    ibv_pd pd;  // first: the application's pointer is &pd
    std::uint32_t pdn;
};

int op_poll_cq(ibv_cq*, int, ibv_wc*);  // identifies simnic contexts

ContextShell* shell_of(ibv_context* ctx) {
    auto* v = reinterpret_cast<verbs_context*>(reinterpret_cast<std::uint8_t*>(ctx) -
                                               offsetof(verbs_context, context));
    return reinterpret_cast<ContextShell*>(reinterpret_cast<std::uint8_t*>(v) -
                                           offsetof(ContextShell, vctx));
}

SimContext* sim(ibv_context* ctx) { return is_context(ctx) ? shell_of(ctx)->impl : nullptr; }

// One command; 0 or the errno of hw-spec 5.5 (or of the transport).
int run(SimContext& c, hw::CmdOpcode op, const std::uint8_t* in, std::size_t in_len,
        std::size_t out_cap, host::CmdOutcome& r) {
    const int e = c.hc->command(op, in, in_len, out_cap, r);
    if (e != 0) return e;
    return hw::status_errno(r.status);
}

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

// One GID_ENTRY image; 0 or an errno.
int query_gid_entry(SimContext& c, std::uint32_t port, std::uint32_t index,
                    std::array<std::uint8_t, hw::gid_entry::kSize>& ge) {
    if (port > 0xFF || index > 0xFFFF) return EINVAL;
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

// The data path (defined with the objects below).
int op_post_send(ibv_qp*, ibv_send_wr* wr, ibv_send_wr** bad);
int op_post_recv(ibv_qp*, ibv_recv_wr* wr, ibv_recv_wr** bad);
int op_post_srq_recv(ibv_srq*, ibv_recv_wr* wr, ibv_recv_wr** bad);
int op_req_notify_cq(ibv_cq* cq, int solicited_only);
ibv_qp* op_create_qp_ex(ibv_context* ctx, ibv_qp_init_attr_ex* attr);
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
    unsupported(v.advise_mr);
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
    unsupported(v.modify_cq);
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
    unsupported(v.create_srq_ex);
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
bool is_context(const ibv_context* ctx) {
    return ctx != nullptr && ctx->abi_compat == __VERBS_ABI_IS_EXTENDED &&
           ctx->ops.poll_cq == &op_poll_cq;
}

host::Context* host_context(ibv_context* ctx) {
    SimContext* c = sim(ctx);
    return c ? c->hc.get() : nullptr;
}

namespace {
int start_events(SimContext& c);
void stop_events(SimContext& c);
}  // namespace

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

// ---------------------------------------------------------------------------
// Protection domains
// ---------------------------------------------------------------------------
ibv_pd* alloc_pd(ibv_context* ctx) {
    SimContext* c = sim(ctx);
    if (c == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    host::CmdOutcome r;
    const int e = run(*c, hw::CmdOpcode::AllocPd, nullptr, 0, hw::cmd_handle::kSize, r);
    if (e != 0) {
        errno = e;
        return nullptr;
    }
    if (r.out.size() < hw::cmd_handle::kSize) {
        errno = EIO;
        return nullptr;
    }
    const auto pdn =
        static_cast<std::uint32_t>(hw::get(r.out.data(), r.out.size(), hw::cmd_handle::handle));
    auto* p = static_cast<SimPd*>(std::calloc(1, sizeof(SimPd)));
    if (p == nullptr) {
        // Give the PD back; the allocation failure is what the caller sees.
        std::array<std::uint8_t, hw::cmd_handle::kSize> in{};
        hw::set(in.data(), in.size(), hw::cmd_handle::handle, pdn);
        host::CmdOutcome ignored;
        run(*c, hw::CmdOpcode::DeallocPd, in.data(), in.size(), 0, ignored);
        errno = ENOMEM;
        return nullptr;
    }
    p->pd.context = ctx;
    p->pd.handle = pdn;
    p->pdn = pdn;
    {
        std::lock_guard<std::mutex> lk(c->obj_mu);
        c->pds.insert(p);
    }
    return &p->pd;
}

int dealloc_pd(ibv_pd* pd) {
    if (pd == nullptr) return EINVAL;
    SimContext* c = sim(pd->context);
    if (c == nullptr) return EINVAL;
    auto* p = reinterpret_cast<SimPd*>(pd);
    std::array<std::uint8_t, hw::cmd_handle::kSize> in{};
    hw::set(in.data(), in.size(), hw::cmd_handle::handle, p->pdn);
    host::CmdOutcome r;
    const int e = run(*c, hw::CmdOpcode::DeallocPd, in.data(), in.size(), 0, r);
    if (e != 0) return e;
    {
        std::lock_guard<std::mutex> lk(c->obj_mu);
        c->pds.erase(p);
    }
    std::free(p);
    return 0;
}

std::uint32_t pd_number(const ibv_pd* pd) { return reinterpret_cast<const SimPd*>(pd)->pdn; }

// ===========================================================================
// The data path: MRs, CQs, completion channels, async events, QPs, SRQs, AHs.
// Objects embed the libibverbs struct as their first member; the
// application's pointer is that member, and the object is reached from it
// with a first-member (container_of) cast. Rings live in this process's
// memory, in the context's bootstrap domain (hw-spec 1.3, 4).
// ===========================================================================
namespace {

template <typename T, typename M>
T* outer(M* member) {  // container_of for a first member
    return reinterpret_cast<T*>(member);
}

std::uint8_t log2_ceil(std::uint64_t v) {
    std::uint8_t n = 0;
    while ((std::uint64_t{1} << n) < v) ++n;
    return n;
}

std::uint32_t round_up(std::uint32_t v, std::uint32_t unit) { return (v + unit - 1) / unit * unit; }


template <std::size_t N>
int run_in(SimContext& c, hw::CmdOpcode op, const std::array<std::uint8_t, N>& in,
           std::size_t out_cap, host::CmdOutcome& r) {
    return run(c, op, in.data(), in.size(), out_cap, r);
}

// A command that applies an address vector (MODIFY_QP with an AV,
// CREATE_AH). The firmware fails with AGAIN while the DGID's neighbour is
// unresolved, having started the lookup; like the kernel, which waits up to a
// second for the address to resolve before failing the verb, the caller
// waits and asks again.
template <std::size_t N>
int run_av(SimContext& c, hw::CmdOpcode op, const std::array<std::uint8_t, N>& in, std::size_t out_cap,
           host::CmdOutcome& r) {
    constexpr int kTries = 100;  // 10 ms apart: 1 s
    int e = run_in(c, op, in, out_cap, r);
    for (int i = 1; i < kTries && e == EAGAIN; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        e = run_in(c, op, in, out_cap, r);
    }
    return e;
}

// A command whose input is a CMD_HANDLE (the destroy commands).
int run_handle(SimContext& c, hw::CmdOpcode op, std::uint32_t handle) {
    std::array<std::uint8_t, hw::cmd_handle::kSize> in{};
    hw::set(in.data(), in.size(), hw::cmd_handle::handle, handle);
    host::CmdOutcome r;
    return run_in(c, op, in, 0, r);
}

// The CMD_HANDLE an object-creating command returned; 0 or an errno.
int out_handle(const host::CmdOutcome& r, std::uint32_t& h) {
    if (r.out.size() < hw::cmd_handle::kSize) return EIO;
    h = static_cast<std::uint32_t>(hw::get(r.out.data(), r.out.size(), hw::cmd_handle::handle));
    return 0;
}

// ---- event queues behind fds ----
template <typename T>
void FdQueue<T>::push(const T& v) {
    std::lock_guard<std::mutex> lk(mu);
    q.push_back(v);
    if (q.size() == 1) {
        const std::uint64_t one = 1;
        [[maybe_unused]] const ssize_t w = ::write(fd, &one, sizeof one);
    }
}

template <typename T>
void FdQueue<T>::drain_locked() {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 0) == 1 && (p.revents & POLLIN)) {
        std::uint64_t v = 0;
        [[maybe_unused]] const ssize_t r = ::read(fd, &v, sizeof v);
    }
}

template <typename T>
int FdQueue<T>::pop(T& out) {
    for (;;) {
        {
            std::lock_guard<std::mutex> lk(mu);
            if (!q.empty()) {
                out = q.front();
                q.pop_front();
                if (q.empty()) drain_locked();
                return 0;
            }
        }
        const int fl = ::fcntl(fd, F_GETFL);
        if (fl >= 0 && (fl & O_NONBLOCK)) return EAGAIN;
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, -1) < 0 && errno != EINTR) return errno;
    }
}

template <typename T>
template <typename P>
void FdQueue<T>::purge(P pred) {
    std::lock_guard<std::mutex> lk(mu);
    const bool had = !q.empty();
    q.erase(std::remove_if(q.begin(), q.end(), pred), q.end());
    if (had && q.empty()) drain_locked();
}

// ---- objects ----
struct SimChannel {
    ibv_comp_channel ch;  // first
    SimContext* ctx;
    FdQueue<SimCq*> events;
};

// A work queue ring (SQ, RQ, SRQ): the driver owns pi; ci follows the CQEs.
struct Wq {
    std::uint8_t* base = nullptr;
    std::uint8_t log_size = 0;
    std::uint8_t log_stride = 0;
    std::uint32_t pi = 0;                // under mu
    std::atomic<std::uint32_t> ci{0};    // from poll_cq (wqe_index + 1)
    std::mutex mu;
    std::uint32_t entries() const { return std::uint32_t{1} << log_size; }
    std::uint32_t stride() const { return std::uint32_t{1} << log_stride; }
    std::size_t bytes() const { return std::size_t{entries()} << log_stride; }
    std::uint8_t* slot(std::uint32_t i) const {
        return base + (std::size_t{hw::ring_slot(i, log_size)} << log_stride);
    }
    bool full() const {
        return hw::ring_used(pi, ci.load(std::memory_order_acquire)) >= entries();
    }
    void reset() {
        pi = 0;
        ci.store(0, std::memory_order_release);
    }
};

struct SimSrq {
    ibv_srq srq;  // first
    SimContext* ctx;
    std::uint32_t srqn;
    std::uint32_t max_sge;
    Wq wq;
};

struct SimCq {
    // First. The application's ibv_cq (ibv_create_cq) or ibv_cq_ex
    // (ibv_create_cq_ex): ibv_cq is the leading part of ibv_cq_ex, and
    // ibv_cq_ex_to_cq is a cast, so both name the same object.
    union {
        ibv_cq_ex cqx;
        ibv_cq cq;
    };
    SimContext* ctx;
    SimChannel* channel;
    std::uint32_t cqn;
    std::uint8_t log_size;
    std::uint8_t* ring;
    std::mutex mu;           // poll_cq; held from start_poll to end_poll
    std::uint32_t ci = 0;    // under mu
    std::uint32_t empty_polls = 0;  // consecutive empty polls (under mu)
    std::vector<SimQp*> qps; // QPs completing here (under mu)
    // ibv_cq_ex polling, between start_poll and end_poll (under mu): the
    // CQE the iterator is on (null after next_poll found none), its
    // translation, and how many CQEs the batch consumed.
    const std::uint8_t* ex_cqe = nullptr;
    ibv_wc ex_wc{};
    std::uint32_t ex_done = 0;
};

// Empty polls of one CQ before poll_cq yields the CPU once (see op_poll_cq).
constexpr std::uint32_t kPollsBeforeYield = 16;
std::uint64_t mono_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

// A context whose CQs have been empty this long naps in poll_cq, this long at
// most (see cq_relax).
constexpr std::uint64_t kNapAfterNs = 100'000;
constexpr std::uint64_t kNapNs = 500'000;

struct SimQp {
    ibv_qp_ex qpx;  // first; qpx.qp_base is the application's ibv_qp
    SimContext* ctx;
    std::uint32_t qpn;
    ibv_qp_type type;
    bool sq_sig_all;
    std::uint32_t max_send_sge, max_recv_sge, max_inline;
    SimCq* scq;
    SimCq* rcq;
    SimSrq* srq;
    Wq sq, rq;
    // The last state set by modify_qp takes send WRs (RTS, SQD, SQE, ERR).
    // Below RTS they are an immediate error (IB spec 10.3.1; rxe: EINVAL):
    // the engine ignores SQ doorbells in RESET and INIT (hw-spec 3.2), so a
    // WQE accepted there would run, stale, after the next doorbell.
    std::atomic<bool> sq_open{false};
    // ibv_wr_* state, between wr_start and wr_complete / wr_abort (sq.mu held)
    std::uint32_t ex_start = 0;
    int ex_err = 0;
    std::uint8_t* ex_wqe = nullptr;
    std::uint32_t ex_data_off = 0;
};

struct SimAh {
    ibv_ah ah;  // first
    std::uint32_t ahn;
};

SimCq* cq_of(ibv_cq* cq) { return outer<SimCq>(cq); }
SimQp* qp_of(ibv_qp* qp) { return outer<SimQp>(outer<ibv_qp_ex>(qp)); }
SimSrq* srq_of(ibv_srq* srq) { return outer<SimSrq>(srq); }
SimChannel* channel_of(ibv_comp_channel* ch) { return outer<SimChannel>(ch); }

// ---- the event thread ----
// EQE event types 0x00-0x13 are ibv_event_type's values (hw-spec 8.2):
// dispatch() hands them to ibv_get_async_event unchanged.
static_assert(static_cast<int>(hw::EventType::CqErr) == IBV_EVENT_CQ_ERR);
static_assert(static_cast<int>(hw::EventType::QpFatal) == IBV_EVENT_QP_FATAL);
static_assert(static_cast<int>(hw::EventType::QpReqErr) == IBV_EVENT_QP_REQ_ERR);
static_assert(static_cast<int>(hw::EventType::QpAccessErr) == IBV_EVENT_QP_ACCESS_ERR);
static_assert(static_cast<int>(hw::EventType::CommEst) == IBV_EVENT_COMM_EST);
static_assert(static_cast<int>(hw::EventType::SqDrained) == IBV_EVENT_SQ_DRAINED);
static_assert(static_cast<int>(hw::EventType::DeviceFatal) == IBV_EVENT_DEVICE_FATAL);
static_assert(static_cast<int>(hw::EventType::PortActive) == IBV_EVENT_PORT_ACTIVE);
static_assert(static_cast<int>(hw::EventType::PortErr) == IBV_EVENT_PORT_ERR);
static_assert(static_cast<int>(hw::EventType::SrqErr) == IBV_EVENT_SRQ_ERR);
static_assert(static_cast<int>(hw::EventType::SrqLimitReached) == IBV_EVENT_SRQ_LIMIT_REACHED);
static_assert(static_cast<int>(hw::EventType::QpLastWqeReached) == IBV_EVENT_QP_LAST_WQE_REACHED);
static_assert(static_cast<int>(hw::EventType::GidChange) == IBV_EVENT_GID_CHANGE);
static_assert(static_cast<int>(hw::EventType::WqFatal) == IBV_EVENT_WQ_FATAL);
void dispatch(SimContext& c, const std::array<std::uint8_t, hw::eqe::kSize>& e) {
    const auto type = static_cast<std::uint32_t>(hw::get(e.data(), e.size(), hw::eqe::event_type));
    const auto obj = static_cast<std::uint32_t>(hw::get(e.data(), e.size(), hw::eqe::obj_num));
    std::lock_guard<std::mutex> lk(c.obj_mu);
    if (type == static_cast<std::uint32_t>(hw::EventType::Completion)) {
        auto it = c.cqs.find(obj);
        if (it != c.cqs.end() && it->second->channel != nullptr)
            it->second->channel->events.push(it->second);
        return;
    }
    if (type > static_cast<std::uint32_t>(hw::EventType::WqFatal)) return;  // CMD_COMPLETION
    ibv_async_event ev;
    std::memset(&ev, 0, sizeof ev);
    ev.event_type = static_cast<ibv_event_type>(type);
    switch (ev.event_type) {
        case IBV_EVENT_CQ_ERR: {
            auto it = c.cqs.find(obj);
            if (it == c.cqs.end()) return;
            ev.element.cq = &it->second->cq;
            break;
        }
        case IBV_EVENT_QP_FATAL:
        case IBV_EVENT_QP_REQ_ERR:
        case IBV_EVENT_QP_ACCESS_ERR:
        case IBV_EVENT_COMM_EST:
        case IBV_EVENT_SQ_DRAINED:
        case IBV_EVENT_QP_LAST_WQE_REACHED: {
            auto it = c.qps.find(obj);
            if (it == c.qps.end()) return;
            ev.element.qp = &it->second->qpx.qp_base;
            break;
        }
        case IBV_EVENT_SRQ_ERR:
        case IBV_EVENT_SRQ_LIMIT_REACHED: {
            auto it = c.srqs.find(obj);
            if (it == c.srqs.end()) return;
            ev.element.srq = &it->second->srq;
            break;
        }
        case IBV_EVENT_PORT_ACTIVE:
        case IBV_EVENT_PORT_ERR:
        case IBV_EVENT_LID_CHANGE:
        case IBV_EVENT_PKEY_CHANGE:
        case IBV_EVENT_SM_CHANGE:
        case IBV_EVENT_CLIENT_REREGISTER:
        case IBV_EVENT_GID_CHANGE:
            ev.element.port_num = static_cast<int>(obj);
            break;
        case IBV_EVENT_DEVICE_FATAL:
            break;
        default:
            return;  // PATH_MIG*, WQ_FATAL: no such objects here
    }
    c.async.push(ev);
}

void event_loop(SimContext* c) {
    const int hfd = c->hc->event_fd();
    if (hfd < 0) return;
    for (;;) {
        // Drain, arm, and drain again, before every sleep including the
        // first: an EQE written before the arm took effect raised no
        // interrupt (hw-spec 8.3: arming "at once if pi != ci" is the
        // driver's check). The thread may start long after the context
        // opened, with events already queued. Repeat until arming finds the
        // queue empty, so no event waits for a later one to wake us.
        std::array<std::uint8_t, hw::eqe::kSize> e{};
        bool found = true;
        while (found) {
            while (c->hc->next_event(e)) dispatch(*c, e);
            c->hc->arm_events();
            found = false;
            while (c->hc->next_event(e)) {
                dispatch(*c, e);
                found = true;
            }
        }
        pollfd p[2] = {{hfd, POLLIN, 0}, {c->stop_fd, POLLIN, 0}};
        [[maybe_unused]] const int n = ::poll(p, 2, -1);
        if (p[1].revents != 0) return;
        if (p[0].revents & (POLLERR | POLLHUP | POLLNVAL)) return;  // device gone
        if (p[0].revents & POLLIN) {
            std::uint64_t v = 0;
            [[maybe_unused]] const ssize_t r = ::read(hfd, &v, sizeof v);
        }
    }
}

int start_events(SimContext& c) {
    c.async.fd = ::eventfd(0, EFD_CLOEXEC);
    c.stop_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (c.async.fd < 0 || c.stop_fd < 0) {
        const int e = errno;
        if (c.async.fd >= 0) ::close(c.async.fd);
        if (c.stop_fd >= 0) ::close(c.stop_fd);
        c.async.fd = c.stop_fd = -1;
        return e;
    }
    if (c.hc->event_fd() < 0) return 0;  // no interrupt: no thread
    try {
        c.ev_thread = std::thread(event_loop, &c);
    } catch (...) {
        ::close(c.async.fd);
        ::close(c.stop_fd);
        c.async.fd = c.stop_fd = -1;
        return EAGAIN;
    }
    return 0;
}

void stop_events(SimContext& c) {
    if (c.ev_thread.joinable()) {
        const std::uint64_t one = 1;
        [[maybe_unused]] const ssize_t w = ::write(c.stop_fd, &one, sizeof one);
        c.ev_thread.join();
    }
    if (c.stop_fd >= 0) ::close(c.stop_fd);
    if (c.async.fd >= 0) ::close(c.async.fd);
    c.stop_fd = c.async.fd = -1;
}

// Drops queued async events naming `match` (the object is being destroyed).
void purge_async(SimContext& c, const void* match) {
    c.async.purge([match](const ibv_async_event& ev) {
        return static_cast<const void*>(ev.element.cq) == match ||
               static_cast<const void*>(ev.element.qp) == match ||
               static_cast<const void*>(ev.element.srq) == match;
    });
}

// ---- CQ polling ----
void retire(SimCq& cq, const std::uint8_t* e) {
    const auto qpn = static_cast<std::uint32_t>(hw::get(e, hw::cqe::kSize, hw::cqe::qp_num));
    const auto idx = static_cast<std::uint32_t>(hw::get(e, hw::cqe::kSize, hw::cqe::wqe_index));
    const bool is_send = hw::get(e, hw::cqe::kSize, hw::cqe::is_send) != 0;
    for (SimQp* qp : cq.qps) {
        if (qp->qpn != qpn) continue;
        // Everything up to and including the completed WQE is free (6.1).
        Wq& wq = is_send ? qp->sq : (qp->srq ? qp->srq->wq : qp->rq);
        wq.ci.store(idx + 1, std::memory_order_release);
        return;
    }
}

void translate(const std::uint8_t* e, ibv_wc& wc) {
    auto g = [e](hw::Field f) { return hw::get(e, hw::cqe::kSize, f); };
    std::memset(&wc, 0, sizeof wc);
    wc.wr_id = g(hw::cqe::wr_id);
    wc.status = static_cast<ibv_wc_status>(g(hw::cqe::status));
    wc.opcode = static_cast<ibv_wc_opcode>(g(hw::cqe::opcode));
    wc.vendor_err = static_cast<std::uint32_t>(g(hw::cqe::vendor_err));
    wc.byte_len = static_cast<std::uint32_t>(g(hw::cqe::byte_len));
    const auto flags = static_cast<std::uint8_t>(g(hw::cqe::wc_flags));
    const auto imm = static_cast<std::uint32_t>(g(hw::cqe::imm_inv));
    if (flags & hw::wc_flags::kWithImm) wc.imm_data = htobe32(imm);  // 7.1
    else if (flags & hw::wc_flags::kWithInv) wc.invalidated_rkey = imm;
    wc.qp_num = static_cast<std::uint32_t>(g(hw::cqe::qp_num));
    wc.src_qp = static_cast<std::uint32_t>(g(hw::cqe::src_qp));
    unsigned wf = 0;
    if (flags & hw::wc_flags::kGrh) wf |= IBV_WC_GRH;
    if (flags & hw::wc_flags::kWithImm) wf |= IBV_WC_WITH_IMM;
    if (flags & hw::wc_flags::kWithInv) wf |= IBV_WC_WITH_INV;
    wc.wc_flags = wf;
    wc.pkey_index = static_cast<std::uint16_t>(g(hw::cqe::pkey_index));
    wc.slid = static_cast<std::uint16_t>(g(hw::cqe::slid));
    wc.sl = static_cast<std::uint8_t>(g(hw::cqe::sl));
    wc.dlid_path_bits = static_cast<std::uint8_t>(g(hw::cqe::dlid_path_bits));
}

// The CQE at the consumer index if the driver owns it (7.2), else null.
// Under cq.mu. 3.3 rule 2: the owner dword with acquire, then the rest.
const std::uint8_t* cq_peek(const SimCq& cq) {
    const std::uint8_t* e =
        cq.ring + (std::size_t{hw::ring_slot(cq.ci, cq.log_size)} * hw::cqe::kSize);
    const std::uint32_t ow = __atomic_load_n(
        reinterpret_cast<const std::uint32_t*>(e + hw::cqe::owner.offset), __ATOMIC_ACQUIRE);
    if (((ow >> hw::cqe::owner.lo) & 1u) != hw::phase_of(cq.ci, cq.log_size)) return nullptr;
    return e;
}

// Consumes the CQE cq_peek returned, once it has been read: its WQEs are
// free and the consumer index moves on. The device learns it at cq_batch_end.
void cq_pop(SimCq& cq, const std::uint8_t* e) {
    retire(cq, e);
    ++cq.ci;
}

// Ends a batch that consumed `n` CQEs (under cq.mu): one CQ doorbell for the
// batch, after the entries were read (rule 3). True if the caller should
// yield the CPU once it has let go of the CQ.
bool cq_batch_end(SimCq& cq, std::uint32_t n) {
    if (n > 0) {
        cq.ctx->hc->ring_doorbell(hw::DbKind::Cq, cq.cqn, cq.ci, 0);
        // A completion ends the context's empty spell (cq_relax starts the
        // next one's clock).
        if (cq.ctx->last_cqe_ns.load(std::memory_order_relaxed) != 0)
            cq.ctx->last_cqe_ns.store(0, std::memory_order_relaxed);
        cq.empty_polls = 0;
        return false;
    }
    // The device is a thread of the daemon, not silicon: an application
    // spinning on an empty CQ competes with it for the CPU. On a machine
    // with fewer cores than busy threads, giving the core away now and then
    // lets the engine produce the completion being waited for.
    return ++cq.empty_polls % kPollsBeforeYield == 0;
}

// After a yield point of an empty poll (outside cq.mu). Spinning stays the
// rule, as on a NIC: a completion that comes within kNapAfterNs of the last
// one is seen at once. Past that, the application is waiting for something
// slow (a bandwidth test's moderated completions, a peer that went quiet),
// and its spinning takes a core from the engine that would produce the
// completion; the thread then sleeps until the device writes any CQE of
// this context (hw-spec 3.5) or kNapNs pass, and poll_cq returns what it
// finds then. SIMNIC_POLL_NAP=0 turns this off.
void cq_relax(SimCq& cq) {
    static const bool nap = [] {
        const char* v = std::getenv("SIMNIC_POLL_NAP");
        return v == nullptr || std::strcmp(v, "0") != 0;
    }();
    if (nap) {
        SimContext& c = *cq.ctx;
        const std::uint64_t now = mono_ns();
        std::uint64_t last = c.last_cqe_ns.load(std::memory_order_relaxed);
        if (last == 0) {  // first empty spell of this context: start counting
            c.last_cqe_ns.compare_exchange_strong(last, now, std::memory_order_relaxed);
            last = now;
        }
        if (now - last >= kNapAfterNs &&
            c.hc->wait_cqe(kNapNs, [&cq] {
                std::lock_guard<std::mutex> lk(cq.mu);
                return cq_peek(cq) == nullptr;
            }))
            return;
    }
    sched_yield();
}

int op_poll_cq(ibv_cq* ibcq, int ne, ibv_wc* wc) {
    SimCq& cq = *cq_of(ibcq);
    int n = 0;
    bool yield = false;
    {
        std::lock_guard<std::mutex> lk(cq.mu);
        for (; n < ne; ++n) {
            const std::uint8_t* e = cq_peek(cq);
            if (e == nullptr) break;
            translate(e, wc[n]);
            cq_pop(cq, e);
        }
        yield = cq_batch_end(cq, static_cast<std::uint32_t>(n));
    }
    if (yield) cq_relax(cq);
    return n;
}

// ---- ibv_cq_ex: the iterator over the same ring and CQEs as poll_cq ----
// start_poll takes the CQ lock and keeps it until end_poll (or returns
// ENOENT without it). The current CQE is translated once, by poll_cq's
// translate(), and read_* return fields of that ibv_wc. A CQE is consumed
// when the iterator moves past it; the batch's doorbell is rung at end_poll.
SimCq& cqx_of(ibv_cq_ex* x) { return *outer<SimCq>(x); }

void cqx_load(SimCq& cq, const std::uint8_t* e) {
    cq.ex_cqe = e;
    translate(e, cq.ex_wc);
    cq.cqx.status = cq.ex_wc.status;
    cq.cqx.wr_id = cq.ex_wc.wr_id;
}

int cqx_start_poll(ibv_cq_ex* x, ibv_poll_cq_attr* /*attr: no fields, as rxe*/) {
    SimCq& cq = cqx_of(x);
    cq.mu.lock();
    const std::uint8_t* e = cq_peek(cq);
    if (e == nullptr) {
        const bool yield = cq_batch_end(cq, 0);
        cq.mu.unlock();
        if (yield) cq_relax(cq);
        errno = ENOENT;
        return ENOENT;
    }
    cq.ex_done = 0;
    cqx_load(cq, e);
    return 0;
}

int cqx_next_poll(ibv_cq_ex* x) {
    SimCq& cq = cqx_of(x);
    if (cq.ex_cqe != nullptr) {
        cq_pop(cq, cq.ex_cqe);
        ++cq.ex_done;
        cq.ex_cqe = nullptr;
    }
    const std::uint8_t* e = cq_peek(cq);
    if (e == nullptr) {
        errno = ENOENT;
        return ENOENT;  // the batch stays open: end_poll follows
    }
    cqx_load(cq, e);
    return 0;
}

void cqx_end_poll(ibv_cq_ex* x) {
    SimCq& cq = cqx_of(x);
    if (cq.ex_cqe != nullptr) {
        cq_pop(cq, cq.ex_cqe);
        ++cq.ex_done;
        cq.ex_cqe = nullptr;
    }
    cq_batch_end(cq, cq.ex_done);  // consumed at least the first: no yield
    cq.ex_done = 0;
    cq.mu.unlock();
}

ibv_wc_opcode cqx_read_opcode(ibv_cq_ex* x) { return cqx_of(x).ex_wc.opcode; }
std::uint32_t cqx_read_vendor_err(ibv_cq_ex* x) { return cqx_of(x).ex_wc.vendor_err; }
std::uint32_t cqx_read_byte_len(ibv_cq_ex* x) { return cqx_of(x).ex_wc.byte_len; }
// The immediate (network order) or, with IBV_WC_WITH_INV, the invalidated
// rkey (host order): ibv_wc's union, as ibv_wc_read_invalidated_rkey expects.
__be32 cqx_read_imm_data(ibv_cq_ex* x) { return cqx_of(x).ex_wc.imm_data; }
std::uint32_t cqx_read_qp_num(ibv_cq_ex* x) { return cqx_of(x).ex_wc.qp_num; }
std::uint32_t cqx_read_src_qp(ibv_cq_ex* x) { return cqx_of(x).ex_wc.src_qp; }
unsigned int cqx_read_wc_flags(ibv_cq_ex* x) { return cqx_of(x).ex_wc.wc_flags; }
std::uint32_t cqx_read_slid(ibv_cq_ex* x) { return cqx_of(x).ex_wc.slid; }
std::uint8_t cqx_read_sl(ibv_cq_ex* x) { return cqx_of(x).ex_wc.sl; }
std::uint8_t cqx_read_dlid_path_bits(ibv_cq_ex* x) { return cqx_of(x).ex_wc.dlid_path_bits; }

int op_req_notify_cq(ibv_cq* ibcq, int solicited_only) {
    SimCq& cq = *cq_of(ibcq);
    std::uint32_t ci;
    {
        std::lock_guard<std::mutex> lk(cq.mu);
        ci = cq.ci;
    }
    const auto cmd = solicited_only ? hw::CqArm::Solicited : hw::CqArm::Next;
    cq.ctx->hc->ring_doorbell(hw::DbKind::Cq, cq.cqn, ci, static_cast<std::uint8_t>(cmd));
    return 0;
}

// ---- send WQEs (6.2) ----
bool is_rdma(ibv_wr_opcode op) {
    return op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM || op == IBV_WR_RDMA_READ;
}
bool is_atomic(ibv_wr_opcode op) {
    return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}
bool opcode_ok(ibv_qp_type t, ibv_wr_opcode op) {
    switch (op) {
        case IBV_WR_SEND:
        case IBV_WR_SEND_WITH_IMM:
            return true;
        case IBV_WR_RDMA_WRITE:
        case IBV_WR_RDMA_WRITE_WITH_IMM:
        case IBV_WR_SEND_WITH_INV:
            return t == IBV_QPT_RC || t == IBV_QPT_UC;
        case IBV_WR_RDMA_READ:
        case IBV_WR_ATOMIC_CMP_AND_SWP:
        case IBV_WR_ATOMIC_FETCH_AND_ADD:
        case IBV_WR_LOCAL_INV:  // rxe's opcode table: RC only
            return t == IBV_QPT_RC;
        case IBV_WR_BIND_MW:
            return t == IBV_QPT_RC || t == IBV_QPT_UC;
        default:
            return false;
    }
}

// BIND_MW's segment (hw-spec 6.2 BIND_SEG) after CTRL. `info.mr` may be
// null for a type 1 unbind (length 0), which rdma-core's rxe provider would
// dereference.
int set_bind(std::uint8_t* w, const ibv_mw* mw, std::uint32_t new_rkey, const ibv_mw_bind_info& info) {
    if (mw == nullptr || !is_context(mw->context)) return EINVAL;
    if (info.mr == nullptr && (info.addr != 0 || info.length != 0)) return EINVAL;
    namespace b = hw::bind_seg;
    std::uint8_t* s = w + hw::ctrl_seg::kSize;
    hw::set(s, b::kSize, b::mw_rkey, mw->rkey);
    hw::set(s, b::kSize, b::new_rkey, new_rkey);
    hw::set(s, b::kSize, b::mr_lkey, info.mr ? info.mr->lkey : 0);
    hw::set(s, b::kSize, b::access, info.mw_access_flags);
    hw::set(s, b::kSize, b::addr, info.addr);
    hw::set(s, b::kSize, b::length, info.length);
    return 0;
}

// Starts a send WQE in `w` (the slot, zeroed here): CTRL and the fixed
// segments before the data. Returns the data offset.
std::uint32_t begin_send(SimQp& qp, std::uint8_t* w, ibv_wr_opcode op, unsigned flags,
                         std::uint64_t wr_id, std::uint32_t imm_inv) {
    const std::uint32_t stride = qp.sq.stride();
    std::memset(w, 0, stride);
    namespace c = hw::ctrl_seg;
    hw::set(w, stride, c::opcode, static_cast<std::uint64_t>(op));
    hw::set(w, stride, c::fence, (flags & IBV_SEND_FENCE) ? 1 : 0);
    hw::set(w, stride, c::signaled, (flags & IBV_SEND_SIGNALED) ? 1 : 0);
    hw::set(w, stride, c::solicited, (flags & IBV_SEND_SOLICITED) ? 1 : 0);
    hw::set(w, stride, c::imm_inv, imm_inv);
    hw::set(w, stride, c::wr_id, wr_id);
    std::uint32_t off = c::kSize;
    if (is_rdma(op) || is_atomic(op)) off += hw::raddr_seg::kSize;
    if (is_atomic(op)) off += hw::atomic_seg::kSize;
    if (qp.type == IBV_QPT_UD) off += hw::ud_seg::kSize;
    return off;
}

void set_raddr(SimQp& qp, std::uint8_t* w, std::uint64_t va, std::uint32_t rkey) {
    std::uint8_t* s = w + hw::ctrl_seg::kSize;
    hw::set(s, hw::raddr_seg::kSize, hw::raddr_seg::remote_va, va);
    hw::set(s, hw::raddr_seg::kSize, hw::raddr_seg::rkey, rkey);
    (void)qp;
}

void set_atomic(std::uint8_t* w, std::uint64_t cmp_add, std::uint64_t swap) {
    std::uint8_t* s = w + hw::ctrl_seg::kSize + hw::raddr_seg::kSize;
    hw::set(s, hw::atomic_seg::kSize, hw::atomic_seg::compare_add, cmp_add);
    hw::set(s, hw::atomic_seg::kSize, hw::atomic_seg::swap, swap);
}

void set_ud(std::uint8_t* w, std::uint32_t ahn, std::uint32_t qpn, std::uint32_t qkey) {
    std::uint8_t* s = w + hw::ctrl_seg::kSize;
    hw::set(s, hw::ud_seg::kSize, hw::ud_seg::ah_num, ahn);
    hw::set(s, hw::ud_seg::kSize, hw::ud_seg::dest_qpn, qpn & hw::kQpnMask);
    hw::set(s, hw::ud_seg::kSize, hw::ud_seg::qkey, qkey);
}

int set_sges(SimQp& qp, std::uint8_t* w, std::uint32_t off, const ibv_sge* sg, std::size_t n) {
    if (n > qp.max_send_sge) return EINVAL;
    const std::uint32_t stride = qp.sq.stride();
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < n; ++i, off += hw::data_seg::kSize) {
        std::uint8_t* d = w + off;
        hw::set(d, hw::data_seg::kSize, hw::data_seg::addr, sg[i].addr);
        hw::set(d, hw::data_seg::kSize, hw::data_seg::length, sg[i].length);
        hw::set(d, hw::data_seg::kSize, hw::data_seg::lkey, sg[i].lkey);
        total += sg[i].length;
    }
    hw::set(w, stride, hw::ctrl_seg::num_sge, n);
    hw::set(w, stride, hw::ctrl_seg::inline_data, 0);
    hw::set(w, stride, hw::ctrl_seg::total_len, static_cast<std::uint32_t>(total));
    return 0;
}

int set_inline(SimQp& qp, std::uint8_t* w, std::uint32_t off, const ibv_data_buf* b, std::size_t n) {
    std::size_t total = 0;
    for (std::size_t i = 0; i < n; ++i) total += b[i].length;
    if (total > qp.max_inline) return EINVAL;
    const std::uint32_t stride = qp.sq.stride();
    hw::set(w + off, hw::inline_seg::kSize, hw::inline_seg::byte_count, total);
    std::uint8_t* p = w + off + hw::inline_seg::kSize;
    for (std::size_t i = 0; i < n; ++i) {
        std::memcpy(p, b[i].addr, b[i].length);
        p += b[i].length;
    }
    hw::set(w, stride, hw::ctrl_seg::inline_data, 1);
    hw::set(w, stride, hw::ctrl_seg::num_sge, 0);
    hw::set(w, stride, hw::ctrl_seg::total_len, static_cast<std::uint32_t>(total));
    return 0;
}

std::uint32_t ah_number(ibv_ah* ah) { return outer<SimAh>(ah)->ahn; }

int build_send(SimQp& qp, const ibv_send_wr& wr, std::uint8_t* w) {
    const ibv_wr_opcode op = wr.opcode;
    if (!opcode_ok(qp.type, op)) return EINVAL;
    if (wr.num_sge < 0) return EINVAL;
    const bool inl = (wr.send_flags & IBV_SEND_INLINE) != 0;
    if (inl && (op == IBV_WR_RDMA_READ || is_atomic(op))) return EINVAL;
    if (is_atomic(op) && wr.num_sge != 1) return EINVAL;
    if (qp.type == IBV_QPT_UD && (wr.wr.ud.ah == nullptr || !is_context(wr.wr.ud.ah->context)))
        return EINVAL;
    std::uint32_t imm = 0;
    if (op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM) imm = be32toh(wr.imm_data);
    if (op == IBV_WR_SEND_WITH_INV || op == IBV_WR_LOCAL_INV) imm = wr.invalidate_rkey;
    // Local operations carry no data (rxe's validate_send_wr).
    if ((op == IBV_WR_BIND_MW || op == IBV_WR_LOCAL_INV) && (wr.num_sge != 0 || inl)) return EINVAL;
    const std::uint32_t off = begin_send(qp, w, op, wr.send_flags, wr.wr_id, imm);
    if (op == IBV_WR_BIND_MW) return set_bind(w, wr.bind_mw.mw, wr.bind_mw.rkey, wr.bind_mw.bind_info);
    if (op == IBV_WR_LOCAL_INV) return 0;
    if (is_atomic(op)) {
        set_raddr(qp, w, wr.wr.atomic.remote_addr, wr.wr.atomic.rkey);
        set_atomic(w, wr.wr.atomic.compare_add, wr.wr.atomic.swap);
    } else if (is_rdma(op)) {
        set_raddr(qp, w, wr.wr.rdma.remote_addr, wr.wr.rdma.rkey);
    }
    if (qp.type == IBV_QPT_UD)
        set_ud(w, ah_number(wr.wr.ud.ah), wr.wr.ud.remote_qpn, wr.wr.ud.remote_qkey);
    const auto n = static_cast<std::size_t>(wr.num_sge);
    if (inl) {
        if (n > hw::kMaxSge) return EINVAL;
        std::array<ibv_data_buf, hw::kMaxSge> bufs{};
        for (std::size_t i = 0; i < n; ++i)
            bufs[i] = {reinterpret_cast<void*>(static_cast<std::uintptr_t>(wr.sg_list[i].addr)),
                       wr.sg_list[i].length};
        return set_inline(qp, w, off, bufs.data(), n);
    }
    return set_sges(qp, w, off, wr.sg_list, n);
}

void ring_sq(SimQp& qp) {
    std::atomic_thread_fence(std::memory_order_release);  // 3.3 rule 1
    qp.ctx->hc->ring_doorbell(hw::DbKind::Sq, qp.qpn, qp.sq.pi);
}

int op_post_send(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad) {
    SimQp& qp = *qp_of(ibqp);
    std::lock_guard<std::mutex> lk(qp.sq.mu);
    if (!qp.sq_open.load(std::memory_order_relaxed)) {
        if (bad) *bad = wr;
        return EINVAL;
    }
    const std::uint32_t start = qp.sq.pi;
    int err = 0;
    for (; wr != nullptr; wr = wr->next) {
        if (qp.sq.full()) err = ENOMEM;
        else err = build_send(qp, *wr, qp.sq.slot(qp.sq.pi));
        if (err != 0) {
            if (bad) *bad = wr;
            break;
        }
        ++qp.sq.pi;
    }
    if (qp.sq.pi != start) ring_sq(qp);
    return err;
}

// ---- receive WQEs (6.4) ----
int build_recv(Wq& wq, std::uint32_t max_sge, const ibv_recv_wr& wr) {
    if (wr.num_sge < 0 || static_cast<std::uint32_t>(wr.num_sge) > max_sge) return EINVAL;
    std::uint8_t* w = wq.slot(wq.pi);
    const std::uint32_t stride = wq.stride();
    std::memset(w, 0, stride);
    hw::set(w, stride, hw::recv_wqe::wr_id, wr.wr_id);
    hw::set(w, stride, hw::recv_wqe::num_sge, static_cast<std::uint64_t>(wr.num_sge));
    std::uint32_t off = hw::recv_wqe::kSize;
    for (int i = 0; i < wr.num_sge; ++i, off += hw::data_seg::kSize) {
        std::uint8_t* d = w + off;
        hw::set(d, hw::data_seg::kSize, hw::data_seg::addr, wr.sg_list[i].addr);
        hw::set(d, hw::data_seg::kSize, hw::data_seg::length, wr.sg_list[i].length);
        hw::set(d, hw::data_seg::kSize, hw::data_seg::lkey, wr.sg_list[i].lkey);
    }
    return 0;
}

int post_recv_on(SimContext& c, Wq& wq, std::uint32_t max_sge, hw::DbKind kind,
                 std::uint32_t num, ibv_recv_wr* wr, ibv_recv_wr** bad) {
    std::lock_guard<std::mutex> lk(wq.mu);
    const std::uint32_t start = wq.pi;
    int err = 0;
    for (; wr != nullptr; wr = wr->next) {
        err = wq.full() ? ENOMEM : build_recv(wq, max_sge, *wr);
        if (err != 0) {
            if (bad) *bad = wr;
            break;
        }
        ++wq.pi;
    }
    if (wq.pi != start) {
        std::atomic_thread_fence(std::memory_order_release);
        c.hc->ring_doorbell(kind, num, wq.pi);
    }
    return err;
}

int op_post_recv(ibv_qp* ibqp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
    SimQp& qp = *qp_of(ibqp);
    if (qp.srq != nullptr) {
        if (bad) *bad = wr;
        return EINVAL;
    }
    return post_recv_on(*qp.ctx, qp.rq, qp.max_recv_sge, hw::DbKind::Rq, qp.qpn, wr, bad);
}

int op_post_srq_recv(ibv_srq* ibsrq, ibv_recv_wr* wr, ibv_recv_wr** bad) {
    SimSrq& s = *srq_of(ibsrq);
    return post_recv_on(*s.ctx, s.wq, s.max_sge, hw::DbKind::Srq, s.srqn, wr, bad);
}

// ---- ibv_wr_* (ibv_qp_ex) ----
SimQp& exq(ibv_qp_ex* q) { return *outer<SimQp>(q); }

void ex_begin(ibv_qp_ex* q, ibv_wr_opcode op, std::uint32_t imm) {
    SimQp& qp = exq(q);
    qp.ex_wqe = nullptr;
    if (qp.ex_err != 0) return;
    if (!opcode_ok(qp.type, op)) {
        qp.ex_err = EINVAL;
        return;
    }
    if (qp.sq.full()) {
        qp.ex_err = ENOMEM;
        return;
    }
    qp.ex_wqe = qp.sq.slot(qp.sq.pi);
    qp.ex_data_off = begin_send(qp, qp.ex_wqe, op, q->wr_flags, q->wr_id, imm);
    ++qp.sq.pi;
}

void ex_start(ibv_qp_ex* q) {
    SimQp& qp = exq(q);
    qp.sq.mu.lock();
    qp.ex_start = qp.sq.pi;
    qp.ex_err = qp.sq_open.load(std::memory_order_relaxed) ? 0 : EINVAL;
    qp.ex_wqe = nullptr;
}
int ex_complete(ibv_qp_ex* q) {
    SimQp& qp = exq(q);
    const int err = qp.ex_err;
    if (err != 0) qp.sq.pi = qp.ex_start;
    else if (qp.sq.pi != qp.ex_start) ring_sq(qp);
    qp.sq.mu.unlock();
    return err;
}
void ex_abort(ibv_qp_ex* q) {
    SimQp& qp = exq(q);
    qp.sq.pi = qp.ex_start;
    qp.sq.mu.unlock();
}
void ex_send(ibv_qp_ex* q) { ex_begin(q, IBV_WR_SEND, 0); }
void ex_send_imm(ibv_qp_ex* q, __be32 imm) { ex_begin(q, IBV_WR_SEND_WITH_IMM, be32toh(imm)); }
void ex_send_inv(ibv_qp_ex* q, std::uint32_t rkey) { ex_begin(q, IBV_WR_SEND_WITH_INV, rkey); }
void ex_rdma(ibv_qp_ex* q, ibv_wr_opcode op, std::uint32_t rkey, std::uint64_t va,
             std::uint32_t imm) {
    ex_begin(q, op, imm);
    if (exq(q).ex_wqe) set_raddr(exq(q), exq(q).ex_wqe, va, rkey);
}
void ex_rdma_write(ibv_qp_ex* q, std::uint32_t rkey, std::uint64_t va) {
    ex_rdma(q, IBV_WR_RDMA_WRITE, rkey, va, 0);
}
void ex_rdma_write_imm(ibv_qp_ex* q, std::uint32_t rkey, std::uint64_t va, __be32 imm) {
    ex_rdma(q, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, va, be32toh(imm));
}
void ex_rdma_read(ibv_qp_ex* q, std::uint32_t rkey, std::uint64_t va) {
    ex_rdma(q, IBV_WR_RDMA_READ, rkey, va, 0);
}
void ex_cmp_swp(ibv_qp_ex* q, std::uint32_t rkey, std::uint64_t va, std::uint64_t cmp,
                std::uint64_t swap) {
    ex_rdma(q, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, va, 0);
    if (exq(q).ex_wqe) set_atomic(exq(q).ex_wqe, cmp, swap);
}
void ex_fetch_add(ibv_qp_ex* q, std::uint32_t rkey, std::uint64_t va, std::uint64_t add) {
    ex_rdma(q, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, va, 0);
    if (exq(q).ex_wqe) set_atomic(exq(q).ex_wqe, add, 0);
}
void ex_set_ud_addr(ibv_qp_ex* q, ibv_ah* ah, std::uint32_t qpn, std::uint32_t qkey) {
    SimQp& qp = exq(q);
    if (qp.ex_wqe == nullptr) return;
    if (qp.type != IBV_QPT_UD || ah == nullptr) {
        qp.ex_err = EINVAL;
        return;
    }
    set_ud(qp.ex_wqe, ah_number(ah), qpn, qkey);
}
// The current ibv_wr_* WQE takes data (not a local operation); else the
// batch fails.
bool ex_takes_data(SimQp& qp) {
    if (qp.ex_wqe == nullptr) return false;
    const auto op = hw::get(qp.ex_wqe, hw::ctrl_seg::kSize, hw::ctrl_seg::opcode);
    if (op != IBV_WR_BIND_MW && op != IBV_WR_LOCAL_INV) return true;
    qp.ex_err = EINVAL;
    return false;
}
void ex_set_sge(ibv_qp_ex* q, std::uint32_t lkey, std::uint64_t addr, std::uint32_t len) {
    SimQp& qp = exq(q);
    if (!ex_takes_data(qp)) return;
    const ibv_sge sge{addr, len, lkey};
    if (const int e = set_sges(qp, qp.ex_wqe, qp.ex_data_off, &sge, 1)) qp.ex_err = e;
}
void ex_set_sge_list(ibv_qp_ex* q, std::size_t n, const ibv_sge* sg) {
    SimQp& qp = exq(q);
    if (!ex_takes_data(qp)) return;
    if (const int e = set_sges(qp, qp.ex_wqe, qp.ex_data_off, sg, n)) qp.ex_err = e;
}
void ex_set_inline_list(ibv_qp_ex* q, std::size_t n, const ibv_data_buf* b) {
    SimQp& qp = exq(q);
    if (!ex_takes_data(qp)) return;
    const auto op = hw::get(qp.ex_wqe, hw::ctrl_seg::kSize, hw::ctrl_seg::opcode);
    if (op == IBV_WR_RDMA_READ || is_atomic(static_cast<ibv_wr_opcode>(op))) {
        qp.ex_err = EINVAL;
        return;
    }
    if (const int e = set_inline(qp, qp.ex_wqe, qp.ex_data_off, b, n)) qp.ex_err = e;
}
void ex_set_inline(ibv_qp_ex* q, void* addr, std::size_t len) {
    const ibv_data_buf b{addr, len};
    ex_set_inline_list(q, 1, &b);
}
void ex_bind_mw(ibv_qp_ex* q, ibv_mw* mw, std::uint32_t rkey, const ibv_mw_bind_info* info) {
    ex_begin(q, IBV_WR_BIND_MW, 0);
    SimQp& qp = exq(q);
    if (qp.ex_wqe == nullptr) return;
    if (info == nullptr) {
        qp.ex_err = EINVAL;
        return;
    }
    if (const int e = set_bind(qp.ex_wqe, mw, rkey, *info)) qp.ex_err = e;
}
void ex_local_inv(ibv_qp_ex* q, std::uint32_t rkey) { ex_begin(q, IBV_WR_LOCAL_INV, rkey); }
// Operations this device lacks (hw-spec 6.3): the batch fails at wr_complete.
void ex_send_tso(ibv_qp_ex* q, void*, std::uint16_t, std::uint16_t) { exq(q).ex_err = EOPNOTSUPP; }
void ex_set_xrc_srqn(ibv_qp_ex* q, std::uint32_t) { exq(q).ex_err = EOPNOTSUPP; }
void ex_atomic_write(ibv_qp_ex* q, std::uint32_t, std::uint64_t, const void*) {
    exq(q).ex_err = EOPNOTSUPP;
}

void fill_qp_ex(SimQp& qp) {
    ibv_qp_ex& x = qp.qpx;
    x.wr_atomic_cmp_swp = &ex_cmp_swp;
    x.wr_atomic_fetch_add = &ex_fetch_add;
    x.wr_bind_mw = &ex_bind_mw;
    x.wr_local_inv = &ex_local_inv;
    x.wr_rdma_read = &ex_rdma_read;
    x.wr_rdma_write = &ex_rdma_write;
    x.wr_rdma_write_imm = &ex_rdma_write_imm;
    x.wr_send = &ex_send;
    x.wr_send_imm = &ex_send_imm;
    x.wr_send_inv = &ex_send_inv;
    x.wr_send_tso = &ex_send_tso;
    x.wr_set_ud_addr = &ex_set_ud_addr;
    x.wr_set_xrc_srqn = &ex_set_xrc_srqn;
    x.wr_set_inline_data = &ex_set_inline;
    x.wr_set_inline_data_list = &ex_set_inline_list;
    x.wr_set_sge = &ex_set_sge;
    x.wr_set_sge_list = &ex_set_sge_list;
    x.wr_start = &ex_start;
    x.wr_complete = &ex_complete;
    x.wr_abort = &ex_abort;
    x.wr_atomic_write = &ex_atomic_write;
}

ibv_qp* op_create_qp_ex(ibv_context* ctx, ibv_qp_init_attr_ex* attr) {
    return create_qp_ex(ctx, attr);
}

}  // namespace

// ---------------------------------------------------------------------------
// Memory regions (hw-spec 5.6.5): direct mode in the bootstrap domain, where
// device addresses are this process's virtual addresses.
// ---------------------------------------------------------------------------
ibv_mr* reg_mr(ibv_pd* pd, void* addr, std::size_t length, std::uint64_t iova,
               unsigned int access) {
    SimContext* c = pd ? sim(pd->context) : nullptr;
    if (c == nullptr || length == 0) {
        errno = EINVAL;
        return nullptr;
    }
    access &= ~static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE);  // hints, may be ignored
    if (access & IBV_ACCESS_ON_DEMAND) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    const bool zero_based = (access & IBV_ACCESS_ZERO_BASED) != 0;
    if (zero_based) iova = 0;
    namespace m = hw::cmd_reg_mr_in;
    std::array<std::uint8_t, m::kSize> in{};
    hw::set(in.data(), in.size(), m::pdn, pd_number(pd));
    hw::set(in.data(), in.size(), m::access, access & hw::access::kAllMr);  // MW_BIND included
    hw::set(in.data(), in.size(), m::mtt_mode, 0);
    hw::set(in.data(), in.size(), m::zero_based, zero_based ? 1 : 0);
    hw::set(in.data(), in.size(), m::domain_id, c->hc->boot_domain());
    hw::set(in.data(), in.size(), m::iova, iova);
    hw::set(in.data(), in.size(), m::length, length);
    hw::set(in.data(), in.size(), m::host_addr, reinterpret_cast<std::uintptr_t>(addr));
    host::CmdOutcome r;
    int e = run_in(*c, hw::CmdOpcode::RegMr, in, hw::cmd_reg_mr_out::kSize, r);
    if (e == 0 && r.out.size() < hw::cmd_reg_mr_out::kSize) e = EIO;
    if (e != 0) {
        errno = e;
        return nullptr;
    }
    auto* mr = static_cast<ibv_mr*>(std::calloc(1, sizeof(ibv_mr)));
    const auto lkey = static_cast<std::uint32_t>(
        hw::get(r.out.data(), r.out.size(), hw::cmd_reg_mr_out::lkey));
    if (mr == nullptr) {
        run_handle(*c, hw::CmdOpcode::DeregMr, lkey);
        errno = ENOMEM;
        return nullptr;
    }
    mr->context = pd->context;
    mr->pd = pd;
    mr->addr = addr;
    mr->length = length;
    mr->handle = lkey;
    mr->lkey = lkey;
    mr->rkey = static_cast<std::uint32_t>(
        hw::get(r.out.data(), r.out.size(), hw::cmd_reg_mr_out::rkey));
    return mr;
}

int dereg_mr(ibv_mr* mr) {
    SimContext* c = mr ? sim(mr->context) : nullptr;
    if (c == nullptr) return EINVAL;
    const int e = run_handle(*c, hw::CmdOpcode::DeregMr, mr->lkey);
    if (e != 0) return e;
    std::free(mr);
    return 0;
}

// ---------------------------------------------------------------------------
// Completion channels
// ---------------------------------------------------------------------------
ibv_comp_channel* create_comp_channel(ibv_context* ctx) {
    SimContext* c = sim(ctx);
    if (c == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    auto* ch = new (std::nothrow) SimChannel{};
    if (ch == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    ch->events.fd = ::eventfd(0, EFD_CLOEXEC);
    if (ch->events.fd < 0) {
        const int e = errno;
        delete ch;
        errno = e;
        return nullptr;
    }
    ch->ctx = c;
    ch->ch.context = ctx;
    ch->ch.fd = ch->events.fd;
    ch->ch.refcnt = 0;
    return &ch->ch;
}

int destroy_comp_channel(ibv_comp_channel* channel) {
    if (channel == nullptr || sim(channel->context) == nullptr) return EINVAL;
    SimChannel* ch = channel_of(channel);
    {
        std::lock_guard<std::mutex> lk(ch->ctx->obj_mu);
        if (channel->refcnt != 0) return EBUSY;
    }
    ::close(ch->events.fd);
    delete ch;
    return 0;
}

int get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
    if (channel == nullptr || sim(channel->context) == nullptr) {
        errno = EINVAL;
        return -1;
    }
    SimCq* got = nullptr;
    const int e = channel_of(channel)->events.pop(got);
    if (e != 0) {
        errno = e;
        return -1;
    }
    if (cq) *cq = &got->cq;
    if (cq_context) *cq_context = got->cq.cq_context;
    return 0;
}

void ack_cq_events(ibv_cq* cq, unsigned int nevents) {
    if (cq == nullptr) return;
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += nevents;
    pthread_cond_signal(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}

// ---------------------------------------------------------------------------
// Async events
// ---------------------------------------------------------------------------
int get_async_event(ibv_context* ctx, ibv_async_event* event) {
    SimContext* c = sim(ctx);
    if (c == nullptr || event == nullptr) {
        errno = EINVAL;
        return -1;
    }
    const int e = c->async.pop(*event);
    if (e != 0) {
        errno = e;
        return -1;
    }
    return 0;
}

void ack_async_event(ibv_async_event* event) {
    if (event == nullptr) return;
    switch (event->event_type) {
        case IBV_EVENT_CQ_ERR: {
            ibv_cq* cq = event->element.cq;
            pthread_mutex_lock(&cq->mutex);
            ++cq->async_events_completed;
            pthread_cond_signal(&cq->cond);
            pthread_mutex_unlock(&cq->mutex);
            break;
        }
        case IBV_EVENT_QP_FATAL:
        case IBV_EVENT_QP_REQ_ERR:
        case IBV_EVENT_QP_ACCESS_ERR:
        case IBV_EVENT_COMM_EST:
        case IBV_EVENT_SQ_DRAINED:
        case IBV_EVENT_QP_LAST_WQE_REACHED: {
            ibv_qp* qp = event->element.qp;
            pthread_mutex_lock(&qp->mutex);
            ++qp->events_completed;
            pthread_cond_signal(&qp->cond);
            pthread_mutex_unlock(&qp->mutex);
            break;
        }
        case IBV_EVENT_SRQ_ERR:
        case IBV_EVENT_SRQ_LIMIT_REACHED: {
            ibv_srq* srq = event->element.srq;
            pthread_mutex_lock(&srq->mutex);
            ++srq->events_completed;
            pthread_cond_signal(&srq->cond);
            pthread_mutex_unlock(&srq->mutex);
            break;
        }
        default:
            break;
    }
}

const ibv_context* async_event_context(const ibv_async_event* event) {
    if (event == nullptr) return nullptr;
    switch (event->event_type) {
        case IBV_EVENT_CQ_ERR:
            return event->element.cq ? event->element.cq->context : nullptr;
        case IBV_EVENT_QP_FATAL:
        case IBV_EVENT_QP_REQ_ERR:
        case IBV_EVENT_QP_ACCESS_ERR:
        case IBV_EVENT_COMM_EST:
        case IBV_EVENT_SQ_DRAINED:
        case IBV_EVENT_PATH_MIG:
        case IBV_EVENT_PATH_MIG_ERR:
        case IBV_EVENT_QP_LAST_WQE_REACHED:
            return event->element.qp ? event->element.qp->context : nullptr;
        case IBV_EVENT_SRQ_ERR:
        case IBV_EVENT_SRQ_LIMIT_REACHED:
            return event->element.srq ? event->element.srq->context : nullptr;
        case IBV_EVENT_WQ_FATAL:
            return event->element.wq ? event->element.wq->context : nullptr;
        default:
            return nullptr;
    }
}

// ---------------------------------------------------------------------------
// CQs (hw-spec 5.6.6, 7)
// ---------------------------------------------------------------------------
namespace {
// The CQ log size for `cqe` entries: 2^n >= cqe + 1 (the verbs cqe is 2^n - 1).
int cq_log_size(SimContext& c, int cqe, std::uint8_t& log) {
    if (cqe < 1) return EINVAL;
    const auto max_cqe = c.cap_get(hw::cap_block::max_cqe);
    if (static_cast<std::uint64_t>(cqe) > max_cqe) return EINVAL;
    log = std::max<std::uint8_t>(1, log2_ceil(static_cast<std::uint64_t>(cqe) + 1));
    return 0;
}
}  // namespace

ibv_cq* create_cq(ibv_context* ctx, int cqe, void* cq_context, ibv_comp_channel* channel,
                  int comp_vector) {
    SimContext* c = sim(ctx);
    if (c == nullptr || comp_vector < 0 || comp_vector >= ctx->num_comp_vectors ||
        (channel != nullptr && channel->context != ctx)) {
        errno = EINVAL;
        return nullptr;
    }
    std::uint8_t log = 0;
    int e = cq_log_size(*c, cqe, log);
    if (e != 0) {
        errno = e;
        return nullptr;
    }
    auto* cq = new (std::nothrow) SimCq{};
    std::uint16_t dom = 0;
    std::uint8_t* ring = c->queues.alloc(*c->hc, std::size_t{hw::cqe::kSize} << log, dom);
    if (cq == nullptr || ring == nullptr) {
        delete cq;
        c->queues.free(ring);
        errno = ENOMEM;
        return nullptr;
    }
    namespace ci = hw::cmd_create_cq_in;
    std::array<std::uint8_t, ci::kSize> in{};
    hw::set(in.data(), in.size(), ci::log_size, log);
    hw::set(in.data(), in.size(), ci::domain_id, dom);
    hw::set(in.data(), in.size(), ci::base, reinterpret_cast<std::uintptr_t>(ring));
    host::CmdOutcome r;
    e = run_in(*c, hw::CmdOpcode::CreateCq, in, hw::cmd_handle::kSize, r);
    std::uint32_t cqn = 0;
    if (e == 0) e = out_handle(r, cqn);
    if (e != 0) {
        delete cq;
        c->queues.free(ring);
        errno = e;
        return nullptr;
    }
    cq->ctx = c;
    cq->channel = channel ? channel_of(channel) : nullptr;
    cq->cqn = cqn;
    cq->log_size = log;
    cq->ring = ring;
    cq->cq.context = ctx;
    cq->cq.channel = channel;
    cq->cq.cq_context = cq_context;
    cq->cq.handle = cqn;
    cq->cq.cqe = static_cast<int>((1u << log) - 1);
    pthread_mutex_init(&cq->cq.mutex, nullptr);
    pthread_cond_init(&cq->cq.cond, nullptr);
    std::lock_guard<std::mutex> lk(c->obj_mu);
    c->cqs[cqn] = cq;
    if (channel) ++channel->refcnt;
    return &cq->cq;
}

ibv_cq_ex* create_cq_ex(ibv_context* ctx, ibv_cq_init_attr_ex* attr) {
    if (sim(ctx) == nullptr || attr == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    // What rxe rejects, rejected the same way: wc_flags beyond the standard
    // set (the CQE has no timestamp, VLAN, flow tag or tag-matching field),
    // comp_mask bits libibverbs does not know, and the create flags kernel
    // rxe refuses (IGNORE_OVERRUN; SINGLE_THREADED is a hint, accepted).
    if ((attr->wc_flags & ~kCqExSupportedWcFlags) != 0 ||
        (attr->comp_mask & ~std::uint32_t{IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD}) != 0 ||
        ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
         (attr->flags & ~std::uint32_t{IBV_CREATE_CQ_ATTR_SINGLE_THREADED}) != 0)) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    // A parent domain (IBV_CQ_INIT_ATTR_MASK_PD) is ignored, as by rxe: the
    // CQ allocates its ring itself and alloc_parent_domain is unsupported.
    if (attr->cqe > static_cast<std::uint32_t>(std::numeric_limits<int>::max()) ||
        attr->comp_vector > static_cast<std::uint32_t>(std::numeric_limits<int>::max())) {
        errno = EINVAL;
        return nullptr;
    }
    ibv_cq* base = create_cq(ctx, static_cast<int>(attr->cqe), attr->cq_context, attr->channel,
                             static_cast<int>(attr->comp_vector));
    if (base == nullptr) return nullptr;
    ibv_cq_ex& x = cq_of(base)->cqx;
    x.comp_mask = 0;
    x.start_poll = &cqx_start_poll;
    x.next_poll = &cqx_next_poll;
    x.end_poll = &cqx_end_poll;
    x.read_opcode = &cqx_read_opcode;
    x.read_vendor_err = &cqx_read_vendor_err;
    x.read_wc_flags = &cqx_read_wc_flags;
    // The field readers the application asked for, as rxe sets them.
    const std::uint64_t f = attr->wc_flags;
    if (f & IBV_WC_EX_WITH_BYTE_LEN) x.read_byte_len = &cqx_read_byte_len;
    if (f & IBV_WC_EX_WITH_IMM) x.read_imm_data = &cqx_read_imm_data;
    if (f & IBV_WC_EX_WITH_QP_NUM) x.read_qp_num = &cqx_read_qp_num;
    if (f & IBV_WC_EX_WITH_SRC_QP) x.read_src_qp = &cqx_read_src_qp;
    if (f & IBV_WC_EX_WITH_SLID) x.read_slid = &cqx_read_slid;
    if (f & IBV_WC_EX_WITH_SL) x.read_sl = &cqx_read_sl;
    if (f & IBV_WC_EX_WITH_DLID_PATH_BITS) x.read_dlid_path_bits = &cqx_read_dlid_path_bits;
    return &x;
}

int resize_cq(ibv_cq* ibcq, int cqe) {
    SimContext* c = ibcq ? sim(ibcq->context) : nullptr;
    if (c == nullptr) return EINVAL;
    SimCq& cq = *cq_of(ibcq);
    std::uint8_t log = 0;
    int e = cq_log_size(*c, cqe, log);
    if (e != 0) return e;
    std::uint16_t dom = 0;
    std::uint8_t* ring = c->queues.alloc(*c->hc, std::size_t{hw::cqe::kSize} << log, dom);
    if (ring == nullptr) return ENOMEM;
    std::lock_guard<std::mutex> lk(cq.mu);  // no polling while the ring changes
    namespace rs = hw::cmd_resize_cq_in;
    std::array<std::uint8_t, rs::kSize> in{};
    hw::set(in.data(), in.size(), rs::cqn, cq.cqn);
    hw::set(in.data(), in.size(), rs::log_size, log);
    hw::set(in.data(), in.size(), rs::domain_id, dom);
    hw::set(in.data(), in.size(), rs::base, reinterpret_cast<std::uintptr_t>(ring));
    host::CmdOutcome r;
    e = run_in(*c, hw::CmdOpcode::ResizeCq, in, 0, r);
    if (e != 0) {
        c->queues.free(ring);
        return e;
    }
    c->queues.free(cq.ring);
    cq.ring = ring;  // same indices, owner bits rewritten for the new size (5.6.6)
    cq.log_size = log;
    ibcq->cqe = static_cast<int>((1u << log) - 1);
    return 0;
}

int destroy_cq(ibv_cq* ibcq) {
    SimContext* c = ibcq ? sim(ibcq->context) : nullptr;
    if (c == nullptr) return EINVAL;
    SimCq* cq = cq_of(ibcq);
    const int e = run_handle(*c, hw::CmdOpcode::DestroyCq, cq->cqn);
    if (e != 0) return e;
    {
        std::lock_guard<std::mutex> lk(c->obj_mu);
        c->cqs.erase(cq->cqn);
        if (cq->channel) {
            cq->channel->events.purge([cq](SimCq* x) { return x == cq; });
            --cq->channel->ch.refcnt;
        }
    }
    purge_async(*c, ibcq);
    pthread_cond_destroy(&ibcq->cond);
    pthread_mutex_destroy(&ibcq->mutex);
    c->queues.free(cq->ring);
    delete cq;
    return 0;
}

// ---------------------------------------------------------------------------
// SRQs (hw-spec 5.6.8)
// ---------------------------------------------------------------------------
ibv_srq* create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
    SimContext* c = pd ? sim(pd->context) : nullptr;
    if (c == nullptr || attr == nullptr || attr->attr.max_wr == 0 ||
        attr->attr.max_sge > c->cap_get(hw::cap_block::max_srq_sge) ||
        attr->attr.max_wr > c->cap_get(hw::cap_block::max_srq_wr)) {
        errno = EINVAL;
        return nullptr;
    }
    auto* s = new (std::nothrow) SimSrq{};
    if (s == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    const std::uint32_t sge = std::max<std::uint32_t>(1, attr->attr.max_sge);
    s->wq.log_size = log2_ceil(attr->attr.max_wr);
    s->wq.log_stride = std::max<std::uint8_t>(
        hw::kMinLogRqStride, log2_ceil(hw::recv_wqe::kSize + hw::data_seg::kSize * sge));
    s->max_sge = sge;
    std::uint16_t dom = 0;
    s->wq.base = c->queues.alloc(*c->hc, s->wq.bytes(), dom);
    if (s->wq.base == nullptr) {
        delete s;
        errno = ENOMEM;
        return nullptr;
    }
    namespace si = hw::cmd_create_srq_in;
    std::array<std::uint8_t, si::kSize> in{};
    hw::set(in.data(), in.size(), si::pdn, pd_number(pd));
    hw::set(in.data(), in.size(), si::domain_id, dom);
    hw::set(in.data(), in.size(), si::base, reinterpret_cast<std::uintptr_t>(s->wq.base));
    hw::set(in.data(), in.size(), si::log_size, s->wq.log_size);
    hw::set(in.data(), in.size(), si::log_stride, s->wq.log_stride);
    hw::set(in.data(), in.size(), si::max_sge, sge);
    hw::set(in.data(), in.size(), si::srq_limit, attr->attr.srq_limit);
    host::CmdOutcome r;
    int e = run_in(*c, hw::CmdOpcode::CreateSrq, in, hw::cmd_handle::kSize, r);
    if (e == 0) e = out_handle(r, s->srqn);
    if (e != 0) {
        c->queues.free(s->wq.base);
        delete s;
        errno = e;
        return nullptr;
    }
    s->ctx = c;
    s->srq.context = pd->context;
    s->srq.srq_context = attr->srq_context;
    s->srq.pd = pd;
    s->srq.handle = s->srqn;
    pthread_mutex_init(&s->srq.mutex, nullptr);
    pthread_cond_init(&s->srq.cond, nullptr);
    attr->attr.max_wr = s->wq.entries();
    attr->attr.max_sge = sge;
    std::lock_guard<std::mutex> lk(c->obj_mu);
    c->srqs[s->srqn] = s;
    return &s->srq;
}

int modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask) {
    SimContext* c = srq ? sim(srq->context) : nullptr;
    if (c == nullptr || attr == nullptr) return EINVAL;
    namespace sm = hw::cmd_modify_srq_in;
    std::array<std::uint8_t, sm::kSize> in{};
    hw::set(in.data(), in.size(), sm::srqn, srq_of(srq)->srqn);
    hw::set(in.data(), in.size(), sm::attr_mask, static_cast<std::uint32_t>(mask));
    hw::set(in.data(), in.size(), sm::srq_limit, attr->srq_limit);
    host::CmdOutcome r;
    return run_in(*c, hw::CmdOpcode::ModifySrq, in, 0, r);
}

int query_srq(ibv_srq* srq, ibv_srq_attr* attr) {
    SimContext* c = srq ? sim(srq->context) : nullptr;
    if (c == nullptr || attr == nullptr) return EINVAL;
    std::array<std::uint8_t, hw::cmd_handle::kSize> in{};
    hw::set(in.data(), in.size(), hw::cmd_handle::handle, srq_of(srq)->srqn);
    host::CmdOutcome r;
    int e = run_in(*c, hw::CmdOpcode::QuerySrq, in, hw::cmd_query_srq_out::kSize, r);
    if (e == 0 && r.out.size() < hw::cmd_query_srq_out::kSize) e = EIO;
    if (e != 0) return e;
    namespace so = hw::cmd_query_srq_out;
    attr->max_wr = static_cast<std::uint32_t>(hw::get(r.out.data(), r.out.size(), so::max_wr));
    attr->max_sge = static_cast<std::uint32_t>(hw::get(r.out.data(), r.out.size(), so::max_sge));
    attr->srq_limit =
        static_cast<std::uint32_t>(hw::get(r.out.data(), r.out.size(), so::srq_limit));
    return 0;
}

int destroy_srq(ibv_srq* srq) {
    SimContext* c = srq ? sim(srq->context) : nullptr;
    if (c == nullptr) return EINVAL;
    SimSrq* s = srq_of(srq);
    const int e = run_handle(*c, hw::CmdOpcode::DestroySrq, s->srqn);
    if (e != 0) return e;
    {
        std::lock_guard<std::mutex> lk(c->obj_mu);
        c->srqs.erase(s->srqn);
    }
    purge_async(*c, srq);
    pthread_cond_destroy(&srq->cond);
    pthread_mutex_destroy(&srq->mutex);
    c->queues.free(s->wq.base);
    delete s;
    return 0;
}

// ---------------------------------------------------------------------------
// QPs (hw-spec 5.6.7, 5.7, 6)
// ---------------------------------------------------------------------------
namespace {
// Puts an ibv_ah_attr into the AV fields of a mailbox (QP_ATTR or
// CMD_CREATE_AH_IN; both use the av_* names).
template <typename NS>
void put_av(std::uint8_t* b, std::size_t n, const ibv_ah_attr& ah) {
    hw::set_bytes(b, n, NS::av_dgid, ah.grh.dgid.raw, sizeof ah.grh.dgid.raw);
    hw::set(b, n, NS::av_sgid_index, ah.grh.sgid_index);
    hw::set(b, n, NS::av_hop_limit, ah.grh.hop_limit);
    hw::set(b, n, NS::av_traffic_class, ah.grh.traffic_class);
    hw::set(b, n, NS::av_sl, ah.sl & 0xF);
    hw::set(b, n, NS::av_grh, ah.is_global ? 1 : 0);
    hw::set(b, n, NS::av_flow_label, ah.grh.flow_label & 0xFFFFF);
    hw::set(b, n, NS::av_static_rate, ah.static_rate);
}
struct QpAttrNs {  // the AV fields of QP_ATTR under the names put_av uses
    static constexpr hw::Field av_dgid = hw::qp_attr::av_dgid;
    static constexpr hw::Field av_sgid_index = hw::qp_attr::av_sgid_index;
    static constexpr hw::Field av_hop_limit = hw::qp_attr::av_hop_limit;
    static constexpr hw::Field av_traffic_class = hw::qp_attr::av_traffic_class;
    static constexpr hw::Field av_sl = hw::qp_attr::av_sl;
    static constexpr hw::Field av_grh = hw::qp_attr::av_grh;
    static constexpr hw::Field av_flow_label = hw::qp_attr::av_flow_label;
    static constexpr hw::Field av_static_rate = hw::qp_attr::av_static_rate;
};
struct AhInNs {
    static constexpr hw::Field av_dgid = hw::cmd_create_ah_in::av_dgid;
    static constexpr hw::Field av_sgid_index = hw::cmd_create_ah_in::av_sgid_index;
    static constexpr hw::Field av_hop_limit = hw::cmd_create_ah_in::av_hop_limit;
    static constexpr hw::Field av_traffic_class = hw::cmd_create_ah_in::av_traffic_class;
    static constexpr hw::Field av_sl = hw::cmd_create_ah_in::av_sl;
    static constexpr hw::Field av_grh = hw::cmd_create_ah_in::av_grh;
    static constexpr hw::Field av_flow_label = hw::cmd_create_ah_in::av_flow_label;
    static constexpr hw::Field av_static_rate = hw::cmd_create_ah_in::av_static_rate;
};

// SQ stride for the caps (hw-spec 5.6.7): CTRL + the larger of RADDR+ATOMIC
// and UD+AV + the larger of the SGEs and the inline segment.
std::uint32_t sq_bytes(std::uint32_t sge, std::uint32_t inl) {
    const std::uint32_t fixed =
        hw::ctrl_seg::kSize + std::max<std::uint32_t>(hw::raddr_seg::kSize + hw::atomic_seg::kSize,
                                                      hw::ud_seg::kSize + hw::av::kSize);
    return fixed + std::max<std::uint32_t>(hw::data_seg::kSize * sge,
                                           round_up(hw::inline_seg::kSize + inl, hw::kSegUnit));
}
}  // namespace

ibv_qp* create_qp_ex(ibv_context* ctx, ibv_qp_init_attr_ex* a) {
    SimContext* c = sim(ctx);
    const std::uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    if (c == nullptr || a == nullptr || !(a->comp_mask & IBV_QP_INIT_ATTR_PD) ||
        a->pd == nullptr || a->pd->context != ctx || a->send_cq == nullptr ||
        (a->recv_cq == nullptr && a->srq == nullptr)) {
        errno = EINVAL;
        return nullptr;
    }
    if ((a->comp_mask & ~known) != 0) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    if (a->qp_type != IBV_QPT_RC && a->qp_type != IBV_QPT_UC && a->qp_type != IBV_QPT_UD) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    ibv_qp_cap& cap = a->cap;
    const auto max_wr = c->cap_get(hw::cap_block::max_qp_wr);
    const auto max_sge = std::min<std::uint64_t>(c->cap_get(hw::cap_block::max_sge), hw::kMaxSge);
    const auto max_inl = std::min<std::uint64_t>(c->cap_get(hw::cap_block::max_inline), hw::kMaxInline);
    if (cap.max_send_wr > max_wr || cap.max_recv_wr > max_wr || cap.max_send_sge > max_sge ||
        cap.max_recv_sge > max_sge || cap.max_inline_data > max_inl) {
        errno = EINVAL;
        return nullptr;
    }
    auto* qp = new (std::nothrow) SimQp{};
    if (qp == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    qp->ctx = c;
    qp->type = a->qp_type;
    qp->sq_sig_all = a->sq_sig_all != 0;
    qp->scq = cq_of(a->send_cq);
    qp->rcq = a->recv_cq ? cq_of(a->recv_cq) : qp->scq;
    qp->srq = a->srq ? srq_of(a->srq) : nullptr;
    // SQ: stride from the caps; the inline room the stride leaves is offered.
    qp->max_send_sge = std::max<std::uint32_t>(1, cap.max_send_sge);
    qp->sq.log_size = log2_ceil(std::max<std::uint32_t>(1, cap.max_send_wr));
    qp->sq.log_stride = std::max<std::uint8_t>(
        hw::kMinLogSqStride, log2_ceil(sq_bytes(qp->max_send_sge, cap.max_inline_data)));
    const std::uint32_t fixed = sq_bytes(0, 0) - hw::kSegUnit;  // without the data part
    qp->max_inline = static_cast<std::uint32_t>(std::min<std::uint64_t>(
        max_inl, qp->sq.stride() - fixed - hw::inline_seg::kSize));
    qp->max_inline = std::max(qp->max_inline, cap.max_inline_data);
    // RQ (none with an SRQ: one slot, never used).
    qp->max_recv_sge = qp->srq ? 0 : std::max<std::uint32_t>(1, cap.max_recv_sge);
    qp->rq.log_size = qp->srq ? 0 : log2_ceil(std::max<std::uint32_t>(1, cap.max_recv_wr));
    qp->rq.log_stride = std::max<std::uint8_t>(
        hw::kMinLogRqStride, log2_ceil(hw::recv_wqe::kSize + hw::data_seg::kSize * qp->max_recv_sge));
    if (qp->sq.log_stride > hw::kMaxLogStride || qp->rq.log_stride > hw::kMaxLogStride) {
        delete qp;
        errno = EINVAL;
        return nullptr;
    }
    // One domain for both rings (the QPC names one): if only one fitted in
    // the shared arena, both go to ordinary memory.
    std::uint16_t dom = 0, rdom = 0;
    qp->sq.base = c->queues.alloc(*c->hc, qp->sq.bytes(), dom);
    qp->rq.base = qp->srq ? nullptr : c->queues.alloc(*c->hc, qp->rq.bytes(), rdom);
    if (!qp->srq && qp->sq.base && qp->rq.base && rdom != dom) {
        c->queues.free(qp->sq.base);
        c->queues.free(qp->rq.base);
        qp->sq.base = c->queues.alloc(*c->hc, qp->sq.bytes(), dom, false);
        qp->rq.base = c->queues.alloc(*c->hc, qp->rq.bytes(), rdom, false);
    }
    if (qp->sq.base == nullptr || (!qp->srq && qp->rq.base == nullptr)) {
        c->queues.free(qp->sq.base);
        c->queues.free(qp->rq.base);
        delete qp;
        errno = ENOMEM;
        return nullptr;
    }
    namespace q = hw::cmd_create_qp_in;
    std::array<std::uint8_t, q::kSize> in{};
    auto set = [&in](hw::Field f, std::uint64_t v) { hw::set(in.data(), in.size(), f, v); };
    set(q::qp_type, a->qp_type);
    set(q::sq_sig_all, qp->sq_sig_all ? 1 : 0);
    set(q::srq_en, qp->srq ? 1 : 0);
    set(q::pdn, pd_number(a->pd));
    set(q::send_cqn, qp->scq->cqn);
    set(q::recv_cqn, qp->rcq->cqn);
    set(q::srqn, qp->srq ? qp->srq->srqn : 0);
    set(q::domain_id, dom);
    set(q::sq_base, reinterpret_cast<std::uintptr_t>(qp->sq.base));
    set(q::rq_base, reinterpret_cast<std::uintptr_t>(qp->rq.base));
    set(q::log_sq_size, qp->sq.log_size);
    set(q::log_sq_stride, qp->sq.log_stride);
    set(q::log_rq_size, qp->rq.log_size);
    set(q::log_rq_stride, qp->rq.log_stride);
    set(q::max_send_sge, qp->max_send_sge);
    set(q::max_recv_sge, qp->max_recv_sge);
    set(q::max_inline, qp->max_inline);
    host::CmdOutcome r;
    int e = run_in(*c, hw::CmdOpcode::CreateQp, in, hw::cmd_handle::kSize, r);
    if (e == 0) e = out_handle(r, qp->qpn);
    if (e != 0) {
        c->queues.free(qp->sq.base);
        c->queues.free(qp->rq.base);
        delete qp;
        errno = e;
        return nullptr;
    }
    ibv_qp& b = qp->qpx.qp_base;
    b.context = ctx;
    b.qp_context = a->qp_context;
    b.pd = a->pd;
    b.send_cq = a->send_cq;
    b.recv_cq = a->recv_cq ? a->recv_cq : a->send_cq;
    b.srq = a->srq;
    b.handle = qp->qpn;
    b.qp_num = qp->qpn;
    b.state = IBV_QPS_RESET;
    b.qp_type = a->qp_type;
    pthread_mutex_init(&b.mutex, nullptr);
    pthread_cond_init(&b.cond, nullptr);
    fill_qp_ex(*qp);
    cap.max_send_wr = qp->sq.entries();
    cap.max_recv_wr = qp->srq ? 0 : qp->rq.entries();
    cap.max_send_sge = qp->max_send_sge;
    cap.max_recv_sge = qp->max_recv_sge;
    cap.max_inline_data = qp->max_inline;
    for (SimCq* cq : {qp->scq, qp->rcq}) {
        std::lock_guard<std::mutex> lk(cq->mu);
        if (std::find(cq->qps.begin(), cq->qps.end(), qp) == cq->qps.end()) cq->qps.push_back(qp);
    }
    std::lock_guard<std::mutex> lk(c->obj_mu);
    c->qps[qp->qpn] = qp;
    return &b;
}

ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
    if (pd == nullptr || attr == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    ibv_qp_init_attr_ex ex;
    std::memset(&ex, 0, sizeof ex);
    std::memcpy(&ex, attr, sizeof *attr);  // ibv_qp_init_attr is the prefix
    ex.comp_mask = IBV_QP_INIT_ATTR_PD;
    ex.pd = pd;
    ibv_qp* qp = create_qp_ex(pd->context, &ex);
    if (qp) attr->cap = ex.cap;
    return qp;
}

int modify_qp(ibv_qp* ibqp, ibv_qp_attr* attr, int mask) {
    SimContext* c = ibqp ? sim(ibqp->context) : nullptr;
    if (c == nullptr || attr == nullptr) return EINVAL;
    SimQp& qp = *qp_of(ibqp);
    namespace a = hw::qp_attr;
    std::array<std::uint8_t, a::kSize> in{};
    auto set = [&in](hw::Field f, std::uint64_t v) { hw::set(in.data(), in.size(), f, v); };
    const auto m = static_cast<std::uint32_t>(mask);
    namespace k = hw::qp_attr_mask;
    set(a::qpn, qp.qpn);
    set(a::attr_mask, m);
    if (m & k::kState) set(a::qp_state, attr->qp_state);
    if (m & k::kCurState) set(a::cur_state, attr->cur_qp_state);
    if (m & k::kPathMtu) set(a::path_mtu, attr->path_mtu);
    if (m & k::kEnSqdAsyncNotify) set(a::en_sqd_async_notify, attr->en_sqd_async_notify ? 1 : 0);
    if (m & k::kQkey) set(a::qkey, attr->qkey);
    if (m & k::kRqPsn) set(a::rq_psn, attr->rq_psn);
    if (m & k::kSqPsn) set(a::sq_psn, attr->sq_psn);
    if (m & k::kDestQpn) set(a::dest_qp_num, attr->dest_qp_num);
    if (m & k::kAccessFlags) set(a::qp_access_flags, attr->qp_access_flags);
    if (m & k::kPort) set(a::port_num, attr->port_num);
    if (m & k::kPkeyIndex) set(a::pkey_index, attr->pkey_index);
    if (m & k::kTimeout) set(a::timeout, attr->timeout);
    if (m & k::kRetryCnt) set(a::retry_cnt, attr->retry_cnt);
    if (m & k::kRnrRetry) set(a::rnr_retry, attr->rnr_retry);
    if (m & k::kMinRnrTimer) set(a::min_rnr_timer, attr->min_rnr_timer);
    if (m & k::kMaxQpRdAtomic) set(a::max_rd_atomic, attr->max_rd_atomic);
    if (m & k::kMaxDestRdAtomic) set(a::max_dest_rd_atomic, attr->max_dest_rd_atomic);
    if (m & k::kAv) put_av<QpAttrNs>(in.data(), in.size(), attr->ah_attr);
    host::CmdOutcome r;
    const int e = (m & k::kAv) ? run_av(*c, hw::CmdOpcode::ModifyQp, in, 0, r)
                               : run_in(*c, hw::CmdOpcode::ModifyQp, in, 0, r);
    if (e != 0) return e;
    if (m & k::kState) {
        ibqp->state = attr->qp_state;
        const ibv_qp_state st = attr->qp_state;
        qp.sq_open.store(st == IBV_QPS_RTS || st == IBV_QPS_SQD || st == IBV_QPS_SQE || st == IBV_QPS_ERR,
                         std::memory_order_relaxed);
        if (attr->qp_state == IBV_QPS_RESET) {  // 5.7: the driver resets its indices
            std::scoped_lock lk(qp.sq.mu, qp.rq.mu);
            qp.sq.reset();
            qp.rq.reset();
        }
    }
    return 0;
}

int query_qp(ibv_qp* ibqp, ibv_qp_attr* attr, int /*mask*/, ibv_qp_init_attr* init) {
    SimContext* c = ibqp ? sim(ibqp->context) : nullptr;
    if (c == nullptr || attr == nullptr) return EINVAL;
    SimQp& qp = *qp_of(ibqp);
    std::array<std::uint8_t, hw::cmd_handle::kSize> in{};
    hw::set(in.data(), in.size(), hw::cmd_handle::handle, qp.qpn);
    host::CmdOutcome r;
    int e = run_in(*c, hw::CmdOpcode::QueryQp, in, hw::qp_attr::kSize, r);
    if (e == 0 && r.out.size() < hw::qp_attr::kSize) e = EIO;
    if (e != 0) return e;
    const std::uint8_t* o = r.out.data();
    auto g = [o](hw::Field f) { return hw::get(o, hw::qp_attr::kSize, f); };
    namespace a = hw::qp_attr;
    std::memset(attr, 0, sizeof *attr);
    attr->qp_state = static_cast<ibv_qp_state>(g(a::qp_state));
    attr->cur_qp_state = attr->qp_state;
    attr->path_mtu = static_cast<ibv_mtu>(g(a::path_mtu));
    attr->path_mig_state = IBV_MIG_MIGRATED;
    attr->qkey = static_cast<std::uint32_t>(g(a::qkey));
    attr->rq_psn = static_cast<std::uint32_t>(g(a::rq_psn));
    attr->sq_psn = static_cast<std::uint32_t>(g(a::sq_psn));
    attr->dest_qp_num = static_cast<std::uint32_t>(g(a::dest_qp_num));
    attr->qp_access_flags = static_cast<unsigned>(g(a::qp_access_flags));
    attr->cap.max_send_wr = static_cast<std::uint32_t>(g(a::max_send_wr));
    attr->cap.max_recv_wr = static_cast<std::uint32_t>(g(a::max_recv_wr));
    attr->cap.max_send_sge = static_cast<std::uint32_t>(g(a::max_send_sge));
    attr->cap.max_recv_sge = static_cast<std::uint32_t>(g(a::max_recv_sge));
    attr->cap.max_inline_data = static_cast<std::uint32_t>(g(a::max_inline));
    ibv_ah_attr& ah = attr->ah_attr;
    hw::get_bytes(o, a::kSize, a::av_dgid, ah.grh.dgid.raw, sizeof ah.grh.dgid.raw);
    ah.grh.sgid_index = static_cast<std::uint8_t>(g(a::av_sgid_index));
    ah.grh.hop_limit = static_cast<std::uint8_t>(g(a::av_hop_limit));
    ah.grh.traffic_class = static_cast<std::uint8_t>(g(a::av_traffic_class));
    ah.grh.flow_label = static_cast<std::uint32_t>(g(a::av_flow_label));
    ah.sl = static_cast<std::uint8_t>(g(a::av_sl));
    ah.is_global = static_cast<std::uint8_t>(g(a::av_grh));
    ah.static_rate = static_cast<std::uint8_t>(g(a::av_static_rate));
    ah.port_num = static_cast<std::uint8_t>(g(a::port_num));
    attr->pkey_index = static_cast<std::uint16_t>(g(a::pkey_index));
    attr->en_sqd_async_notify = static_cast<std::uint8_t>(g(a::en_sqd_async_notify));
    attr->sq_draining = static_cast<std::uint8_t>(g(a::sq_draining));
    attr->max_rd_atomic = static_cast<std::uint8_t>(g(a::max_rd_atomic));
    attr->max_dest_rd_atomic = static_cast<std::uint8_t>(g(a::max_dest_rd_atomic));
    attr->min_rnr_timer = static_cast<std::uint8_t>(g(a::min_rnr_timer));
    attr->port_num = static_cast<std::uint8_t>(g(a::port_num));
    attr->timeout = static_cast<std::uint8_t>(g(a::timeout));
    attr->retry_cnt = static_cast<std::uint8_t>(g(a::retry_cnt));
    attr->rnr_retry = static_cast<std::uint8_t>(g(a::rnr_retry));
    ibqp->state = attr->qp_state;
    if (init != nullptr) {
        std::memset(init, 0, sizeof *init);
        init->qp_context = ibqp->qp_context;
        init->send_cq = ibqp->send_cq;
        init->recv_cq = ibqp->recv_cq;
        init->srq = ibqp->srq;
        init->cap = attr->cap;
        init->qp_type = ibqp->qp_type;
        init->sq_sig_all = qp.sq_sig_all ? 1 : 0;
    }
    return 0;
}

int destroy_qp(ibv_qp* ibqp) {
    SimContext* c = ibqp ? sim(ibqp->context) : nullptr;
    if (c == nullptr) return EINVAL;
    SimQp* qp = qp_of(ibqp);
    const int e = run_handle(*c, hw::CmdOpcode::DestroyQp, qp->qpn);
    if (e != 0) return e;
    {
        std::lock_guard<std::mutex> lk(c->obj_mu);
        c->qps.erase(qp->qpn);
    }
    for (SimCq* cq : {qp->scq, qp->rcq}) {
        std::lock_guard<std::mutex> lk(cq->mu);
        cq->qps.erase(std::remove(cq->qps.begin(), cq->qps.end(), qp), cq->qps.end());
    }
    purge_async(*c, ibqp);
    pthread_cond_destroy(&ibqp->cond);
    pthread_mutex_destroy(&ibqp->mutex);
    c->queues.free(qp->sq.base);
    c->queues.free(qp->rq.base);
    delete qp;
    return 0;
}

ibv_qp_ex* qp_to_qp_ex(ibv_qp* qp) {
    if (qp == nullptr || sim(qp->context) == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    return &qp_of(qp)->qpx;
}

// ---------------------------------------------------------------------------
// Address handles (hw-spec 5.6.9)
// ---------------------------------------------------------------------------
ibv_ah* create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
    SimContext* c = pd ? sim(pd->context) : nullptr;
    if (c == nullptr || attr == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    namespace h = hw::cmd_create_ah_in;
    std::array<std::uint8_t, h::kSize> in{};
    hw::set(in.data(), in.size(), h::pdn, pd_number(pd));
    hw::set(in.data(), in.size(), h::port_num, attr->port_num);
    put_av<AhInNs>(in.data(), in.size(), *attr);
    host::CmdOutcome r;
    int e = run_av(*c, hw::CmdOpcode::CreateAh, in, hw::cmd_handle::kSize, r);
    std::uint32_t ahn = 0;
    if (e == 0) e = out_handle(r, ahn);
    if (e != 0) {
        errno = e;
        return nullptr;
    }
    auto* ah = static_cast<SimAh*>(std::calloc(1, sizeof(SimAh)));
    if (ah == nullptr) {
        run_handle(*c, hw::CmdOpcode::DestroyAh, ahn);
        errno = ENOMEM;
        return nullptr;
    }
    ah->ah.context = pd->context;
    ah->ah.pd = pd;
    ah->ah.handle = ahn;
    ah->ahn = ahn;
    return &ah->ah;
}

int destroy_ah(ibv_ah* ah) {
    SimContext* c = ah ? sim(ah->context) : nullptr;
    if (c == nullptr) return EINVAL;
    const int e = run_handle(*c, hw::CmdOpcode::DestroyAh, outer<SimAh>(ah)->ahn);
    if (e != 0) return e;
    std::free(ah);
    return 0;
}

int init_ah_from_wc(ibv_context* ctx, std::uint8_t port_num, ibv_wc* wc, ibv_grh* grh,
                    ibv_ah_attr* ah) {
    if (sim(ctx) == nullptr || wc == nullptr || ah == nullptr) {
        errno = EINVAL;
        return -1;
    }
    std::memset(ah, 0, sizeof *ah);
    ah->dlid = wc->slid;
    ah->sl = wc->sl;
    ah->src_path_bits = wc->dlid_path_bits;
    ah->port_num = port_num;
    if (!(wc->wc_flags & IBV_WC_GRH)) return 0;
    if (grh == nullptr) {
        errno = EINVAL;
        return -1;
    }
    // The 40 bytes of 6.4: an IPv6 header, or 20 zero bytes and an IPv4 header.
    const auto* raw = reinterpret_cast<const std::uint8_t*>(grh);
    ibv_gid local{};
    if ((raw[0] >> 4) == 6) {
        const std::uint32_t vtf = be32toh(grh->version_tclass_flow);
        ah->grh.dgid = grh->sgid;
        local = grh->dgid;
        ah->grh.flow_label = vtf & 0xFFFFF;
        ah->grh.traffic_class = static_cast<std::uint8_t>((vtf >> 20) & 0xFF);
    } else if ((raw[20] >> 4) == 4) {
        const std::uint8_t* ip = raw + 20;
        auto mapped = [](const std::uint8_t* a, ibv_gid& g) {
            std::memset(g.raw, 0, sizeof g.raw);
            g.raw[10] = g.raw[11] = 0xFF;
            std::memcpy(g.raw + 12, a, 4);
        };
        mapped(ip + 12, ah->grh.dgid);  // source address
        mapped(ip + 16, local);         // destination address
        ah->grh.traffic_class = ip[1];
    } else {
        errno = EINVAL;
        return -1;
    }
    ah->is_global = 1;
    ah->grh.hop_limit = 0xFF;
    // The local GID the packet was sent to names the sgid_index.
    ibv_port_attr pa;
    if (query_port(ctx, port_num, &pa, sizeof pa) != 0) {
        errno = EINVAL;
        return -1;
    }
    for (int i = 0; i < pa.gid_tbl_len; ++i) {
        ibv_gid_entry ge;
        if (query_gid_ex(ctx, port_num, static_cast<std::uint32_t>(i), &ge, 0, sizeof ge) != 0)
            continue;
        if (std::memcmp(ge.gid.raw, local.raw, sizeof local.raw) == 0) {
            ah->grh.sgid_index = static_cast<std::uint8_t>(i);
            return 0;
        }
    }
    errno = ENOENT;
    return -1;
}

ibv_ah* create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, std::uint8_t port_num) {
    if (pd == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    ibv_ah_attr attr;
    if (init_ah_from_wc(pd->context, port_num, wc, grh, &attr) != 0) return nullptr;
    return create_ah(pd, &attr);
}

// ---------------------------------------------------------------------------
// Introspection (tests)
// ---------------------------------------------------------------------------
QueueView sq_view(ibv_qp* qp) {
    const Wq& w = qp_of(qp)->sq;
    return {w.base, w.entries(), w.stride()};
}
QueueView rq_view(ibv_qp* qp) {
    const Wq& w = qp_of(qp)->rq;
    return {w.base, w.entries(), w.stride()};
}
QueueView srq_view(ibv_srq* srq) {
    const Wq& w = srq_of(srq)->wq;
    return {w.base, w.entries(), w.stride()};
}
QueueView cq_view(ibv_cq* cq) {
    const SimCq& c = *cq_of(cq);
    return {c.ring, 1u << c.log_size, hw::cqe::kSize};
}
std::uint32_t cq_number(ibv_cq* cq) { return cq_of(cq)->cqn; }

}  // namespace simnic::verbs
