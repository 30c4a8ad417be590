// Doorbells (hw-spec 3.2, 3.4): the contexts' doorbell FIFOs in their
// context pages, drained once per engine batch, each doorbell dispatched to
// the queue it names (or, on a model device, into the timing model first);
// and the ENGINE_SLEEPING flag drivers read to know whether to wake the
// engine.
#include "engine_internal.h"
#include "simnic/hw/mmio.h"

namespace simnic::soft_engine {

// The QP `qpn` if context `ctx` owns it: a doorbell names its queue by
// number, and only the owner may ring it.
EngineQp* SoftEngine::Impl::qp_of_ctx(uint16_t ctx, uint32_t qpn) {
    auto it = qps.find(qpn);
    if (it == qps.end() || it->second->ctx != ctx) return nullptr;
    return it->second.get();
}

void SoftEngine::Impl::doorbell(uint16_t ctx, hw::DbKind kind, uint32_t num, uint32_t index, uint32_t cq_cmd,
                                uint32_t cq_seen) {
    switch (kind) {
        case hw::DbKind::Sq: sq_doorbell(ctx, num, index); return;
        case hw::DbKind::Rq: rq_doorbell(ctx, num, index); return;
        case hw::DbKind::Srq: srq_doorbell(ctx, num, index); return;
        case hw::DbKind::Cq: cq_doorbell(ctx, num, index, cq_cmd, cq_seen); return;
    }
    stat(hw::stats_block::dma_faults);
}

// Consumes what each context's FIFO holds; returns true if anything.
bool SoftEngine::Impl::drain_fifos() {
    bool any = false;
    for (auto& [id, c] : ctxs) {
        uint8_t* pg = c.page;
        for (int k = 0; k < 256; ++k) {
            const uint32_t slot = c.fifo_ci & (hw::kDbFifoEntries - 1);
            const uint32_t base = hw::kCtxDbFifoEntries + slot * hw::db_fifo_entry::kSize;
            if (hw::mmio_load32(pg, base + hw::db_fifo_entry::seq.offset) != c.fifo_ci + 1) break;
            const uint32_t w1 = hw::mmio_load32(pg, base + hw::db_fifo_entry::num.offset);
            const uint32_t idx = hw::mmio_load32(pg, base + hw::db_fifo_entry::index.offset);
            const uint32_t seen = hw::mmio_load32(pg, base + hw::db_fifo_entry::cq_seen.offset);
            auto fld = [w1](hw::Field f) { return (w1 >> f.lo) & uint32_t(hw::mask_of(f.width)); };
            if (pipe)
                pipe->doorbell(Doorbell{id, uint8_t(fld(hw::db_fifo_entry::kind)), fld(hw::db_fifo_entry::num), idx,
                                        fld(hw::db_fifo_entry::cq_cmd), seen});
            else
                doorbell(id, hw::DbKind(fld(hw::db_fifo_entry::kind)), fld(hw::db_fifo_entry::num), idx,
                         fld(hw::db_fifo_entry::cq_cmd), seen);
            ++c.fifo_ci;
            hw::mmio_store32(pg, hw::kCtxDbFifo + hw::db_fifo_regs::fifo_ci.offset, c.fifo_ci);
            any = true;
        }
    }
    return any;
}

// A fabric's members' doorbells too: simulating one device simulates the
// whole fabric, so every doorbell its applications rang before must be in
// it first (a frame must not reach a device ahead of the receive its
// application posted earlier, in wall time).
bool SoftEngine::Impl::drain_group_fifos() {
    bool any = drain_fifos();
    if (cfg.group)
        for (Impl* m : cfg.group->members)
            if (m != this) any |= m->drain_fifos();
    return any;
}

bool SoftEngine::Impl::fifos_pending() {
    for (auto& [id, c] : ctxs)
        if (hw::mmio_load32(c.page, hw::kCtxDbFifo + hw::db_fifo_regs::fifo_pi.offset) != c.fifo_ci) return true;
    return false;
}

void SoftEngine::Impl::set_sleeping(uint32_t v) {
    for (auto& [id, c] : ctxs) hw::mmio_store32(c.page, hw::kCtxDbFifo + hw::db_fifo_regs::engine_sleeping.offset, v);
}

}  // namespace simnic::soft_engine
