// In-process contexts (context.h's open_local_context) and the event sink
// that feeds them.
//
// A Firmware posts EQEs to the EventSink it was built with. For local
// contexts to receive events, build the Firmware with a LocalEventSink (or
// with local_event_sink(), the one context.h's open_local_context uses): it
// routes each EQE to the local context with that ctx_id, which queues it and
// signals its eventfd when armed (hw-spec 8.3).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "simnic/fw/interfaces.h"
#include "simnic/host/context.h"

namespace simnic::host {

class LocalContext;

class LocalEventSink final : public hw::EventSink {
public:
    void post_eqe(std::uint16_t ctx_id, const std::uint8_t* eqe, std::size_t len) override;

    // Used by LocalContext; a context id has at most one receiver.
    void attach(std::uint16_t ctx_id, LocalContext* ctx);
    void detach(std::uint16_t ctx_id, LocalContext* ctx);

    // SHM domains (hw-spec 1.3) on an in-process device. The sink is the
    // device's side of its local contexts, so it also keeps the device's
    // mappings of the objects they share (Context::share_memory), and unmaps
    // them when their context goes. Off until the device's owner offers them
    // by taking the lookup its engine reaches them through (a function for
    // EngineConfig::shm): a device without an engine would accept queues it
    // never sees. Off, share_memory answers EOPNOTSUPP and a driver keeps its
    // memory in a PROCESS domain.
    using ShmLookup = std::function<std::uint8_t*(std::uint16_t ctx_id, std::uint32_t handle, std::uint64_t& size)>;
    ShmLookup offer_shm();
    bool shm_offered() const { return shm_offered_; }
    // The device's mapping of context `ctx_id`'s object `handle` and its
    // size; null if there is none.
    std::uint8_t* shm_object(std::uint16_t ctx_id, std::uint32_t handle, std::uint64_t& size);
    // Used by LocalContext.
    void add_shm(std::uint16_t ctx_id, std::uint32_t handle, std::uint8_t* p, std::uint64_t size);
    void remove_shm(std::uint16_t ctx_id);  // and unmaps them
    ~LocalEventSink() override;

private:
    std::mutex mu_;
    std::map<std::uint16_t, LocalContext*> ctxs_;
    bool shm_offered_ = false;
    std::map<std::uint64_t, std::pair<std::uint8_t*, std::uint64_t>> shm_;  // (ctx << 32 | handle) -> mapping
};

// The process-wide sink open_local_context(fw, name, ctx_id, pid) attaches to.
LocalEventSink& local_event_sink();

// Where the doorbells of an in-process context go: each as the doorbell
// FIFO would deliver it to the engine (hw-spec 3.4), with the context's id.
// An in-process device with an engine (`simnic bench`'s model) takes them
// here; without one they go nowhere.
using DoorbellSink = std::function<void(std::uint16_t ctx_id, hw::DbKind kind, std::uint32_t num,
                                        std::uint32_t index, std::uint8_t cq_cmd)>;

// An in-process context on `fw` whose events arrive through `events` (the
// sink `fw` was built with) and whose doorbells go to `doorbells`. Opens
// context `ctx_id` of process `pid` in the firmware and destroys it (with
// everything it owns) when the context is destroyed. Null if the firmware
// refuses the context (id in use, out of range, no domain left).
std::unique_ptr<Context> open_local_context(fw::Firmware& fw, LocalEventSink& events,
                                            const std::string& device_name,
                                            std::uint16_t ctx_id, std::uint32_t pid,
                                            std::uint16_t device_index = 0,
                                            DoorbellSink doorbells = {});

}  // namespace simnic::host
