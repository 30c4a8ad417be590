// libibumad's view of simnic devices, for infiniband-diags (ibstat and the
// tools built on libibmad). libibumad describes a CA from sysfs
// (/sys/class/infiniband/NAME/...), which simnic devices do not have; these
// functions fill libibumad's structs from the same device queries
// ibv_devinfo's answers come from (provider.h), with the values kernel rxe's
// sysfs shows. umad_interpose.cc exports libibumad's entry points and calls
// these for simnic device names.
//
// Return convention: libibumad's (0 or a negative errno); nothing prints.
#pragma once

#include <endian.h>
#include <linux/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace simnic::verbs::umad {

// libibumad's public structs (<infiniband/umad.h>, stable since IBUMAD_1.0),
// written out because libibumad-dev is not a build dependency. The
// static_asserts in umad_ca.cc pin every offset to umad.h's layout on LP64.
constexpr std::size_t kCaNameLen = 20;   // UMAD_CA_NAME_LEN
constexpr int kCaMaxPorts = 10;          // UMAD_CA_MAX_PORTS: ports 0..9

struct Port {                       // umad_port_t
    char ca_name[kCaNameLen];
    int portnum;
    unsigned base_lid;
    unsigned lmc;
    unsigned sm_lid;
    unsigned sm_sl;
    unsigned state;                 // sysfs "state": 4 = ACTIVE
    unsigned phys_state;            // sysfs "phys_state": 5 = LinkUp
    unsigned rate;                  // sysfs "rate", integer Gb/s (2 means 2.5)
    __be32 capmask;
    __be64 gid_prefix;              // GID 0, network order
    __be64 port_guid;
    unsigned pkeys_size;
    std::uint16_t* pkeys;           // host order; calloc'd, freed by release
    char link_layer[kCaNameLen];
};

struct Ca {                         // umad_ca_t
    char ca_name[kCaNameLen];
    unsigned node_type;             // 1 = CA
    int numports;
    char fw_ver[20];
    char ca_type[40];
    char hw_ver[20];
    __be64 node_guid;
    __be64 system_guid;
    Port* ports[kCaMaxPorts];       // calloc'd; ports[0] is null on a CA
};

struct DeviceNode {                 // struct umad_device_node
    DeviceNode* next;
    const char* ca_name;
};

// The simnic devices' names now (none without a daemon). 0 or a positive errno.
int device_names(std::vector<std::string>& out);
bool is_device(const char* name);

// umad_get_ca for the simnic device `name`: 0, -ENODEV (no such device),
// -EINVAL (null argument) or -EIO (the device did not answer). The ports are
// allocated as libibumad allocates them, so release_ca or libibumad's
// umad_release_ca frees them.
int get_ca(const char* name, Ca* ca);
// umad_get_port: port 0 means the first active port (libibumad's rule);
// a port the device does not have is -EIO, as sysfs would give.
int get_port(const char* name, int portnum, Port* port);
// umad_get_ca_portguids: numports + 1 GUIDs (index 0, no port on a CA, is 0)
// or -ENOMEM if `max` is too small; 0 with a null `guids`.
int get_ca_portguids(const char* name, __be64* guids, int max);
void release_port(Port* port);
void release_ca(Ca* ca);

// The integer part of the rate kernel sysfs shows ("2.5 Gb/sec (1X SDR)" is
// 2), from ibv_port_attr's active_width and active_speed encodings; 0 for an
// encoding the kernel does not know.
unsigned rate_gbps(std::uint8_t active_width, std::uint8_t active_speed);

}  // namespace simnic::verbs::umad
