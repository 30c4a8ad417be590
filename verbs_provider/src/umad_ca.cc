// libibumad's CA and port records for simnic devices (see umad_ca.h), built
// from the verbs provider's queries so that ibstat and ibv_devinfo always
// agree. Where the record holds what kernel rxe's sysfs holds, the comment
// names the sysfs file.
#include "umad_ca.h"

#include <infiniband/verbs.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "provider.h"

namespace simnic::verbs::umad {

// Offsets of umad.h's structs (x86-64 / LP64), so a drift in the mirror is a
// build error rather than a garbled ibstat.
static_assert(offsetof(Port, portnum) == 20 && offsetof(Port, rate) == 48 &&
              offsetof(Port, capmask) == 52 && offsetof(Port, gid_prefix) == 56 &&
              offsetof(Port, port_guid) == 64 && offsetof(Port, pkeys_size) == 72 &&
              offsetof(Port, pkeys) == 80 && offsetof(Port, link_layer) == 88 &&
              sizeof(Port) == 112);
static_assert(offsetof(Ca, node_type) == 20 && offsetof(Ca, numports) == 24 &&
              offsetof(Ca, fw_ver) == 28 && offsetof(Ca, ca_type) == 48 &&
              offsetof(Ca, hw_ver) == 88 && offsetof(Ca, node_guid) == 112 &&
              offsetof(Ca, system_guid) == 120 && offsetof(Ca, ports) == 128 &&
              sizeof(Ca) == 208);
static_assert(sizeof(DeviceNode) == 16);

namespace {

// A name cut to libibumad's fixed-size field, NUL-terminated.
void copy_name(char* dst, std::size_t cap, const char* src) {
    const std::size_t n = strnlen(src, cap - 1);
    std::memcpy(dst, src, n);
    dst[n] = '\0';
}

ibv_device* find(const char* name) {
    if (name == nullptr) return nullptr;
    std::vector<ibv_device*> devs;
    if (current_devices(devs) != 0) return nullptr;
    for (ibv_device* d : devs)
        if (std::strcmp(device_name(d), name) == 0) return d;
    return nullptr;
}

// The device's sysfs file `file` (provider.h's emulation), as libibumad
// reads it: the first line, empty if the file does not exist.
void sysfs_string(ibv_device* dev, const char* file, char* dst, std::size_t cap) {
    dst[0] = '\0';
    int ret = 0;
    if (!read_sysfs_file(dev->ibdev_path, file, dst, cap, ret) || ret < 0) {
        dst[0] = '\0';
        return;
    }
    if (char* nl = std::strchr(dst, '\n')) *nl = '\0';
}

// An open context for the duration of one umad call.
class OpenDevice {
public:
    explicit OpenDevice(ibv_device* dev) : ctx_(dev ? open_device(dev) : nullptr) {}
    ~OpenDevice() {
        if (ctx_) close_device(ctx_);
    }
    OpenDevice(const OpenDevice&) = delete;
    OpenDevice& operator=(const OpenDevice&) = delete;
    ibv_context* get() const { return ctx_; }

private:
    ibv_context* ctx_;
};

// One port's record, as libibumad's get_port reads it from
// /sys/class/infiniband/NAME/ports/N. 0 or a negative errno.
int fill_port(ibv_context* ctx, const char* name, int portnum, Port& p) {
    std::memset(&p, 0, sizeof p);
    copy_name(p.ca_name, sizeof p.ca_name, name);
    p.portnum = portnum;
    ibv_port_attr a;
    if (query_port(ctx, static_cast<std::uint8_t>(portnum), &a, sizeof a) != 0) return -EIO;
    p.base_lid = a.lid;          // "lid"
    p.lmc = a.lmc;               // "lid_mask_count"
    p.sm_lid = a.sm_lid;         // "sm_lid"
    p.sm_sl = a.sm_sl;           // "sm_sl"
    p.state = a.state;           // "state": "4: ACTIVE", same numbering as ibv_port_state
    p.phys_state = a.phys_state; // "phys_state": "5: LinkUp"
    p.rate = rate_gbps(a.active_width, a.active_speed);  // "rate"
    p.capmask = htobe32(a.port_cap_flags);               // "cap_mask"
    // "link_layer": ib_core prints "InfiniBand" for an IB or unspecified port.
    copy_name(p.link_layer, sizeof p.link_layer,
              a.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand");
    // "gids/0": the port GUID is GID 0's interface ID (on RoCE the EUI-64 of
    // the netdev's MAC).
    ibv_gid gid;
    if (query_gid(ctx, static_cast<std::uint8_t>(portnum), 0, &gid) != 0) return -EIO;
    std::memcpy(&p.gid_prefix, gid.raw, 8);
    std::memcpy(&p.port_guid, gid.raw + 8, 8);
    // "pkeys/0..pkey_tbl_len-1" (rxe: one entry, 0xffff).
    if (a.pkey_tbl_len == 0) return -EIO;  // libibumad: "no pkeys found"
    p.pkeys = static_cast<std::uint16_t*>(std::calloc(a.pkey_tbl_len, sizeof *p.pkeys));
    if (p.pkeys == nullptr) return -ENOMEM;
    for (unsigned i = 0; i < a.pkey_tbl_len; ++i) {
        __be16 k;
        if (query_pkey(ctx, static_cast<std::uint8_t>(portnum), static_cast<int>(i), &k) != 0) {
            release_port(&p);
            return -EIO;
        }
        p.pkeys[i] = be16toh(k);
    }
    p.pkeys_size = a.pkey_tbl_len;
    return 0;
}

}  // namespace

int device_names(std::vector<std::string>& out) {
    out.clear();
    std::vector<ibv_device*> devs;
    const int e = current_devices(devs);
    if (e != 0) return e;
    for (ibv_device* d : devs) out.emplace_back(device_name(d));
    return 0;
}

bool is_device(const char* name) { return find(name) != nullptr; }

unsigned rate_gbps(std::uint8_t active_width, std::uint8_t active_speed) {
    // Lane rate in tenths of Gb/s per LinkSpeedActive bit, and lanes per
    // LinkWidthActive bit, as ib_core's rate attribute computes them.
    unsigned tenths = 0;
    switch (active_speed) {
        case 1: tenths = 25; break;     // SDR
        case 2: tenths = 50; break;     // DDR
        case 4: tenths = 100; break;    // QDR
        case 8: tenths = 100; break;    // FDR10
        case 16: tenths = 140; break;   // FDR
        case 32: tenths = 250; break;   // EDR
        case 64: tenths = 500; break;   // HDR
        case 128: tenths = 1000; break; // NDR
        default: tenths = 25; break;    // ib_core counts anything else as SDR
    }
    unsigned lanes = 0;
    switch (active_width) {
        case 1: lanes = 1; break;
        case 2: lanes = 4; break;
        case 4: lanes = 8; break;
        case 8: lanes = 12; break;
        case 16: lanes = 2; break;
        default: return 0;  // the kernel's attribute read fails
    }
    return tenths * lanes / 10;
}

int get_ca(const char* name, Ca* ca) {
    if (name == nullptr || ca == nullptr) return -EINVAL;
    ibv_device* dev = find(name);
    if (dev == nullptr) return -ENODEV;
    OpenDevice ctx(dev);
    if (ctx.get() == nullptr) return -EIO;
    ibv_device_attr attr;
    if (query_device(ctx.get(), &attr) != 0) return -EIO;

    std::memset(ca, 0, sizeof *ca);
    copy_name(ca->ca_name, sizeof ca->ca_name, name);
    ca->node_type = 1;  // "node_type": "1: CA"
    // "fw_ver", "hw_rev", "hca_type": the strings our sysfs emulation gives
    // ibv_read_sysfs_file (fw_ver as ibv_devinfo's; rxe has no hw_rev or
    // hca_type, and libibumad leaves a missing one empty).
    sysfs_string(dev, "fw_ver", ca->fw_ver, sizeof ca->fw_ver);
    sysfs_string(dev, "hw_rev", ca->hw_ver, sizeof ca->hw_ver);
    sysfs_string(dev, "hca_type", ca->ca_type, sizeof ca->ca_type);
    ca->node_guid = attr.node_guid;          // "node_guid"
    ca->system_guid = attr.sys_image_guid;   // "sys_image_guid"

    const int nports = std::min<int>(attr.phys_port_cnt, kCaMaxPorts - 1);
    for (int i = 1; i <= nports; ++i) {
        auto* p = static_cast<Port*>(std::calloc(1, sizeof(Port)));
        const int e = p ? fill_port(ctx.get(), name, i, *p) : -ENOMEM;
        if (e != 0) {
            std::free(p);
            release_ca(ca);
            return e;
        }
        ca->ports[i] = p;
        ca->numports = i;
    }
    return 0;
}

int get_port(const char* name, int portnum, Port* port) {
    if (name == nullptr || port == nullptr) return -EINVAL;
    ibv_device* dev = find(name);
    if (dev == nullptr) return -ENODEV;
    OpenDevice ctx(dev);
    if (ctx.get() == nullptr) return -EIO;
    ibv_device_attr attr;
    if (query_device(ctx.get(), &attr) != 0) return -EIO;
    const int nports = std::min<int>(attr.phys_port_cnt, kCaMaxPorts - 1);
    if (portnum == 0) {
        // libibumad picks the first active port, else the first LinkUp one.
        for (int i = 1; i <= nports && portnum == 0; ++i) {
            ibv_port_attr a;
            if (query_port(ctx.get(), static_cast<std::uint8_t>(i), &a, sizeof a) == 0 &&
                a.state == IBV_PORT_ACTIVE)
                portnum = i;
        }
        for (int i = 1; i <= nports && portnum == 0; ++i) {
            ibv_port_attr a;
            if (query_port(ctx.get(), static_cast<std::uint8_t>(i), &a, sizeof a) == 0 &&
                a.phys_state == 5)
                portnum = i;
        }
        if (portnum == 0) return -ENODEV;
    }
    if (portnum < 1 || portnum > nports) return -EIO;
    return fill_port(ctx.get(), name, portnum, *port);
}

int get_ca_portguids(const char* name, __be64* guids, int max) {
    Ca ca;
    const int e = get_ca(name, &ca);
    if (e < 0) return e;
    int n = 0;
    if (guids != nullptr) {
        if (ca.numports + 1 > max) {
            release_ca(&ca);
            return -ENOMEM;
        }
        for (int i = 0; i <= ca.numports; ++i)
            guids[n++] = ca.ports[i] ? ca.ports[i]->port_guid : 0;
    }
    release_ca(&ca);
    return n;
}

void release_port(Port* port) {
    if (port == nullptr) return;
    std::free(port->pkeys);
    port->pkeys = nullptr;
    port->pkeys_size = 0;
}

void release_ca(Ca* ca) {
    if (ca == nullptr) return;
    for (Port*& p : ca->ports) {
        release_port(p);
        std::free(p);
        p = nullptr;
    }
}

}  // namespace simnic::verbs::umad
