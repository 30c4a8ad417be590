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

private:
    std::mutex mu_;
    std::map<std::uint16_t, LocalContext*> ctxs_;
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
