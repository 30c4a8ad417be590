// The device a test program is told to use, by name, through the system
// libibverbs, as an application finds it. Header-only, without Catch2: the
// plain programs (doctor_orphan, many_objects) use it as verbs_app.h does.
#pragma once

#include <infiniband/verbs.h>

#include <cstring>

namespace simnic::tb {

// The opened device called `name`, or null (no such device, or it failed to
// open: errno says why).
inline ibv_context* open_device_named(const char* name) {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    ibv_context* ctx = nullptr;
    for (int i = 0; list != nullptr && i < n && ctx == nullptr; ++i)
        if (std::strcmp(ibv_get_device_name(list[i]), name) == 0) ctx = ibv_open_device(list[i]);
    if (list != nullptr) ibv_free_device_list(list);
    return ctx;
}

}  // namespace simnic::tb
