// The next definition of a symbol we interpose: the real libibverbs,
// librdmacm or libibumad function that a call about a real device (or with
// no simnic device at all) goes on to. Found with dlvsym(RTLD_NEXT) at the
// version applications link against, and retried until found, since the
// real library may be dlopen()ed after us.
#pragma once

#include <dlfcn.h>

#include <atomic>

namespace simnic::verbs {

template <typename F>
class Real {
public:
    Real(const char* name, const char* version) : name_(name), version_(version) {}
    // The function, or null if no later object defines it (yet).
    F* get() {
        void* p = p_.load(std::memory_order_acquire);
        if (p == nullptr) {
            p = dlvsym(RTLD_NEXT, name_, version_);
            if (p == nullptr) return nullptr;
            p_.store(p, std::memory_order_release);
        }
        return reinterpret_cast<F*>(p);
    }

private:
    const char* name_;
    const char* version_;
    std::atomic<void*> p_{nullptr};
};

}  // namespace simnic::verbs
