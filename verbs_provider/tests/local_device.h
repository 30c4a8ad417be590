// One simnic device in the test process, for the provider's unit tests: a
// fw::Firmware on fw_test_util.h's fake eth0 (MAC 52:54:00:12:34:56,
// 10.1.2.3, MTU 1500) with its tables in memory, reached through
// host::open_local_context and installed as the provider's device source
// (removed again at the end).
#pragma once

#include <catch2/catch.hpp>

#include <array>
#include <cerrno>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fw_test_util.h"
#include "provider.h"
#include "simnic/host/local_context.h"

namespace simnic::verbs::test {

struct LocalDevice {
    using CapBlock = std::array<std::uint8_t, hw::cap_block::kSize>;
    // `name` bound to eth0; rxe_limits: the default CAP_BLOCK (rxe's
    // values), otherwise fw_test_util.h's small tables; `edit_cap` changes
    // the CAP_BLOCK before the tables are sized from it.
    explicit LocalDevice(std::string name = "sim0", bool rxe_limits = true,
                         const std::function<void(CapBlock&)>& edit_cap = nullptr)
        : dev_name(std::move(name)) {
        cfg.cap = rxe_limits ? fw::default_cap_block() : fw::default_cap_block(fw::test::small_limits());
        if (edit_cap) edit_cap(cfg.cap);
        store = std::make_unique<fw::MemTableStore>(fw::table_capacities(cfg.cap.data(), cfg.gid_tbl_len));
        firmware = std::make_unique<fw::Firmware>(cfg, *store, netdev, sink);
        DeviceSource src;
        src.list = [this](std::vector<host::DeviceEntry>& out) {
            out.clear();
            if (listed) out.push_back({dev_name, "eth0", "soft"});
            return list_err;
        };
        src.open = [this](const std::string& n, int& err) -> std::unique_ptr<host::Context> {
            ++opens;
            if (n != dev_name) {
                err = ENODEV;
                return nullptr;
            }
            last_ctx = next_ctx++;
            auto c = host::open_local_context(*firmware, sink, n, last_ctx, 4242);
            if (!c) {
                err = ENOMEM;
                return nullptr;
            }
            return wrap ? wrap(std::move(c)) : std::move(c);
        };
        set_device_source(src);
    }
    ~LocalDevice() { set_device_source(DeviceSource{}); }
    LocalDevice(const LocalDevice&) = delete;
    LocalDevice& operator=(const LocalDevice&) = delete;

    // The device as the provider lists it, alone.
    ibv_device* device() {
        std::vector<ibv_device*> devs;
        REQUIRE(current_devices(devs) == 0);
        REQUIRE(devs.size() == 1);
        for (ibv_device* d : devs)
            if (dev_name == d->name) return d;
        FAIL("device not listed");
        return nullptr;
    }
    ibv_context* open() {
        ibv_context* c = open_device(device());
        REQUIRE(c != nullptr);
        return c;
    }

    std::string dev_name;
    fw::test::FakeNetdev netdev;
    host::LocalEventSink sink;
    fw::FwConfig cfg;
    std::unique_ptr<fw::MemTableStore> store;
    std::unique_ptr<fw::Firmware> firmware;
    bool listed = true;   // the device source lists the device
    int list_err = 0;     // and returns this
    int opens = 0;        // contexts asked for
    std::uint16_t next_ctx = 1, last_ctx = 0;  // firmware context ids
    // If set, wraps each context the provider opens (to record what passes).
    std::function<std::unique_ptr<host::Context>(std::unique_ptr<host::Context>)> wrap;
};

}  // namespace simnic::verbs::test
