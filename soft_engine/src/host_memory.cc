// Host memory as the engine reaches it (hw-spec 1.3, 11): DMA domains
// (a process through process_vm_readv/writev, or a shared object mapped
// here), the data moves of the transport core's MemoryPort after the key
// check of mpt.cc, and the two ways the soft device saves system calls on
// them: read-ahead of a message's gather and write combining of its
// scatter. A model device uses both as well: they change only how the bytes
// cross to the process, while its pipeline still charges every packet's
// own DMA (each is recorded for its stage, whichever way it was served).
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine_internal.h"

namespace simnic::soft_engine {

// The host memory of domain `dom`, PROCESS or SHM.
bool SoftEngine::Impl::host_dom(uint32_t dom, HostDom& h) {
    h = HostDom{};
    const uint8_t* d = entry(Table::Domain, dom);
    if (!d || dom == 0 || !g(d, Table::Domain, hw::domain_entry::valid)) return false;
    const uint64_t kind = g(d, Table::Domain, hw::domain_entry::kind);
    if (kind == uint64_t(hw::DomainKind::Process)) {
        h.pid = static_cast<pid_t>(g(d, Table::Domain, hw::domain_entry::pid));
        return h.pid > 0;
    }
    if (kind != uint64_t(hw::DomainKind::Shm) || !cfg.shm) return false;
    const uint64_t ctx = g(d, Table::Domain, hw::domain_entry::ctx_id);
    const uint64_t handle = g(d, Table::Domain, hw::domain_entry::shm_handle);
    auto it = shm_views.find(ctx << 32 | handle);
    if (it == shm_views.end()) {
        uint64_t size = 0;
        uint8_t* p = cfg.shm(uint16_t(ctx), uint32_t(handle), size);
        if (!p) return false;
        it = shm_views.emplace(ctx << 32 | handle, std::make_pair(p, size)).first;
    }
    h.base = it->second.first;
    h.map_base = g(d, Table::Domain, hw::domain_entry::map_base);
    h.map_len = std::min(g(d, Table::Domain, hw::domain_entry::map_len), it->second.second);
    return true;
}

// Read-ahead of a requester's gather (lkey reads): the first packet of a
// message reads up to kReadAhead bytes of the SGE in one process_vm_readv
// and the following packets copy from it. Hardware may fetch a posted
// WQE's data at any time before it completes, and the application may
// change the buffer only after that WQE's completion: the copy serves the
// one WQE it was read for (QP and send-queue sequence) and no other, so a
// later WQE on a refilled buffer reads afresh. It is also dropped on every
// write the device makes to the bytes it holds, and on every firmware
// command and context or QP teardown (before an MR, its key or its QP
// number can be reused). It is kept across the engine's passes and across
// the completions of earlier WQEs: the requester's window (rxe's 128
// unacked PSNs) lets the first packet of a message out in one pass and the
// rest after the next ACK, whose completion came first, and dropping the
// copy there made every message read most of its gather twice
// (ib_write_bw -s 65536 on one device: a 64 KiB then a 60 KiB
// process_vm_readv per message). It never
// reaches past the SGE (`room` is bounded by it): the bytes after it may
// be the buffer of a WQE not yet posted, which the application is still
// filling. (Reading to the end of the MR instead sent stale bytes: UCX
// fills its bounce buffers, consecutive in one MR, while earlier ones are
// on the wire, and a later WQE of the same pass took the stale copy.)
//
// A READ's response data (rkey reads) is fetched ahead the same way, within
// the READ's range and for one serving of it (MemoryPort::read_reply): a
// 64 KiB READ at MTU 4096 was sixteen process_vm_readv, one per response
// packet, and is one. A duplicate READ that replays it is a new serving and
// reads afresh. The key is still checked at every packet (mem_io translates
// before it looks here), so a packet after a deregistration is refused.
//
// A copy is kept per QP (kReadAheadSlots of them): with several QPs
// sending at once, one QP's window fills in the middle of a message and the
// others send meanwhile; a single copy was another QP's by the time the
// first one's ACK came, and the rest of its message was read again
// (ib_write_bw -s 65536 -q 8: 1.14 process_vm_readv per message, against
// 1.00 at -q 1).
const uint8_t* SoftEngine::Impl::read_ahead_at(const EngineQp& q, tp::KeyKind kind, uint32_t key, uint64_t va,
                                               size_t len, uint64_t serves) {
    if (!ra_held) return nullptr;
    const auto holds = [&](size_t i) {
        const ReadAhead& r = ra[i];
        return (ra_held >> i & 1) && r.of(q, kind) && r.serves == serves && r.key == key && va >= r.va &&
               va - r.va + len <= r.len;
    };
    size_t i = ra_last;
    if (!holds(i)) {
        for (i = 0; i < ra.size() && !holds(i); ++i) {
        }
        if (i == ra.size()) return nullptr;
        ra_last = i;
    }
    ra[i].used = ++ra_clock;
    return ra[i].buf.data() + (va - ra[i].va);
}

bool SoftEngine::Impl::read_ahead_hit(const EngineQp& q, tp::KeyKind kind, uint32_t key, uint64_t va, void* dst,
                                      size_t len, uint64_t serves) {
    const uint8_t* at = read_ahead_at(q, kind, key, va, len, serves);
    if (!at) return false;
    std::memcpy(dst, at, len);
    ++dma_n.ahead_hits;
    return true;
}

// The slot a new copy for `q` goes to: the QP's own copy of that kind (a QP
// gathers its WQEs, and serves its READs, in order, so that copy is done
// with), else a free slot, else the copy that served last the longest ago.
size_t SoftEngine::Impl::read_ahead_slot(const EngineQp& q, tp::KeyKind kind) const {
    size_t v = 0;
    for (size_t i = 0; i < ra.size(); ++i) {
        const ReadAhead& r = ra[i];
        const bool held = ra_held >> i & 1;
        if (held && r.of(q, kind)) return i;
        if ((ra_held >> v & 1) && (!held || r.used < ra[v].used)) v = i;
    }
    return v;
}

bool SoftEngine::Impl::read_ahead(const EngineQp& q, tp::KeyKind kind, uint32_t key, uint32_t access, uint64_t va,
                                  void* dst, size_t len, uint64_t room, uint64_t serves) {
    // mem_io asked read_ahead_hit first: no copy holds these bytes.
    // Only a full packet's read (len >= 1 KiB, the smallest MTU) hints at
    // more of the same message. `room` already ends at the SGE (or the
    // READ's range), so a small message never pays for more than itself;
    // the copy is as large at every MTU (at MTU 1024 a cap of 16 packets
    // made a 64 KiB message four process_vm_readv, and each of them
    // flushed the combined writes).
    if (len < 1024) return false;
    const size_t ahead = size_t(std::min<uint64_t>(room, kReadAhead));
    if (ahead <= len) return false;
    pid_t pid = 0;
    const size_t i = read_ahead_slot(q, kind);
    ReadAhead& r = ra[i];
    ra_held &= ~(1u << i);
    if (translate(q, kind, key, va, ahead, access, &pid, &r.iov, true) != tp::MemStatus::Ok) return false;
    r.buf.resize(kReadAhead);
    host_transfer(false);
    if (!dma(pid, false, r.iov.data(), r.iov.size(), r.buf.data(), ahead)) return false;
    ra_held |= 1u << i;
    r.kind = kind;
    r.ctx = q.ctx;
    r.key = key;
    r.va = va;
    r.len = ahead;
    r.pid = pid;
    r.qpn = q.qpn;
    r.serves = serves;
    r.used = ++ra_clock;
    ra_last = i;
    std::memcpy(dst, r.buf.data(), len);
    return true;
}

void SoftEngine::Impl::write_hits_read_ahead(pid_t pid, const std::vector<iovec>& w) {
    // Another process's memory may share pages with a copy's (a shared
    // mapping at another address), unless the write lands in its private
    // mappings: a private page is that process's own (process_vm_writev
    // breaks copy-on-write as a store would). A write to another process's
    // private memory keeps the copy: that is every payload the responder
    // writes while the requester sends from the same device (ib_write_bw's
    // server and client on one device read each message's gather twice,
    // 64 KiB and then 60 KiB, when the copy went at each write).
    // The spans read are kept until the next firmware fence or context
    // removal: a mapping the application replaces under a registered MR
    // without deregistering it (which the verbs leave undefined) may be
    // seen late.
    if (!ra_held) return;
    int private_to_pid = -1;  // asked once, for the first copy of another process
    for (size_t i = 0; i < ra.size(); ++i) {
        if (!(ra_held >> i & 1)) continue;
        const ReadAhead& r = ra[i];
        bool hit = false;
        if (r.pid != pid) {
            if (private_to_pid < 0) {
                private_to_pid = 1;
                for (const iovec& a : w)
                    if (!map_spans.all_private(pid, reinterpret_cast<uintptr_t>(a.iov_base), a.iov_len))
                        private_to_pid = 0;
            }
            hit = !private_to_pid;
        } else {
            for (const iovec& a : w)
                for (const iovec& b : r.iov) {
                    const auto a0 = reinterpret_cast<uintptr_t>(a.iov_base);
                    const auto b0 = reinterpret_cast<uintptr_t>(b.iov_base);
                    hit |= a0 < b0 + b.iov_len && b0 < a0 + a.iov_len;
                }
        }
        if (hit) ra_held &= ~(1u << i);
    }
}

// Write combining (soft device): the packets of one message land at
// consecutive host addresses, so their payload writes are gathered and
// done with one process_vm_writev instead of one per packet. They are
// posted writes, as a NIC's are, and are flushed (wc_flush) before anything
// that must observe them: a CQE or an EQE, any read of registered memory,
// the firmware's fence, and the end of every engine batch. Every packet's
// write was checked against its MR before it was gathered.
//
// The writes of several QPs into one process combine too, each range of
// consecutive bytes one remote iovec of the same system call, in the order
// the packets came (so that where two ranges overlap the later write
// lands last, as it would have alone). With one range only, every packet
// of another QP in between flushed it: ib_write_bw -s 65536 -q 8 through
// the kernel made 1.17 process_vm_writev per message, now 1.05.
void SoftEngine::Impl::wc_write() {
    wc.active = false;
    wc.local.clear();
    size_t total = 0;
    for (const WriteCombine::Piece& pc : wc.from) {
        wc.local.push_back(iovec{const_cast<uint8_t*>(pc.at ? pc.at : wc.data.data() + pc.off), pc.len});
        total += pc.len;
    }
    host_transfer(true);
    const ssize_t n = process_vm_writev(wc.pid, wc.local.data(), wc.local.size(), wc.to.data(), wc.to.size(), 0);
    if (n != static_cast<ssize_t>(total)) {
        // Some memory went away under a registered MR. Each range is
        // written again on its own, so that only the QPs whose memory is
        // gone see it: such a QP cannot deliver what it acknowledged, and
        // goes to the error state.
        std::vector<uint8_t> bytes;
        bytes.reserve(total);
        for (const iovec& l : wc.local) {
            const auto* p = static_cast<const uint8_t*>(l.iov_base);
            bytes.insert(bytes.end(), p, p + l.iov_len);
        }
        const uint8_t* p = bytes.data();
        for (size_t i = 0; i < wc.to.size(); ++i) {
            if (!dma_write(wc.pid, reinterpret_cast<uint64_t>(wc.to[i].iov_base), p, wc.to[i].iov_len)) {
                stat(hw::stats_block::dma_faults);
                auto it = qps.find(wc.qpn[i]);
                if (it != qps.end()) it->second->fault = hw::ErrorCause::QueueFault;
            }
            p += wc.to[i].iov_len;
        }
    }
    wc.to.clear();
    wc.qpn.clear();
    wc.from.clear();
    wc.data.clear();
    wc.bytes = 0;
    for (auto& b : wc.pinned) loop_spare.push_back(std::move(b));
    wc.pinned.clear();
    ++wc.gen;
}

// A payload that lies in the loopback frame being delivered stays there
// until the flush (rx_batch keeps the frame's buffer for it): copying it
// into `data` first was 5% of the daemon's samples under ib_write_bw -s
// 65536 with the shortcut, the largest share of its memmove.
bool SoftEngine::Impl::wc_add(const EngineQp& q, pid_t pid, const iovec& dst, const void* src, size_t len) {
    if (wc.active && (wc.pid != pid || wc.bytes + len > kCombineMax || wc.from.size() == kCombinePieces))
        wc_flush();
    const auto a = reinterpret_cast<uintptr_t>(dst.iov_base);
    if (wc.active && wc.qpn.back() == q.qpn &&
        reinterpret_cast<uintptr_t>(wc.to.back().iov_base) + wc.to.back().iov_len == a) {
        wc.to.back().iov_len += len;
    } else {
        if (wc.active && wc.to.size() == kCombineRanges) wc_flush();
        if (!wc.active) {
            wc.active = true;
            wc.pid = pid;
        }
        wc.to.push_back(iovec{dst.iov_base, len});
        wc.qpn.push_back(q.qpn);
    }
    const uint8_t* p = static_cast<const uint8_t*>(src);
    wc.bytes += len;
    const auto from = reinterpret_cast<uintptr_t>(p);
    if (from >= reinterpret_cast<uintptr_t>(lend_begin) && from + len <= reinterpret_cast<uintptr_t>(lend_end)) {
        wc.from.push_back(WriteCombine::Piece{p, 0, len});
        lent_gen = wc.gen;
    } else if (!wc.from.empty() && !wc.from.back().at) {
        wc.from.back().len += len;  // follows the last copied piece in `data`
        wc.data.insert(wc.data.end(), p, p + len);
    } else {
        wc.from.push_back(WriteCombine::Piece{nullptr, wc.data.size(), len});
        wc.data.insert(wc.data.end(), p, p + len);
    }
    ++dma_n.combined;
    return true;
}

tp::MemStatus SoftEngine::Impl::mem_io(const EngineQp& q, tp::KeyKind kind, uint32_t key, uint64_t va, void* buf,
                                       size_t len, uint32_t access, bool wr, uint64_t ahead_left,
                                       uint64_t ahead_for) {
    pid_t pid = 0;
    uint64_t room = 0;
    bool on_demand = false;
    const tp::MemStatus st = translate(q, kind, key, va, len, access, &pid, &iov, false, &room, &on_demand);
    if (st != tp::MemStatus::Ok || len == 0) return st;
    // A model device's stage charges this packet's DMA however the bytes
    // are moved below (one system call for it, or part of a read-ahead or
    // a combined write): the pipeline's timing is the same either way.
    const auto charged = [&] {
        charge_dma(wr, len, access);
        return tp::MemStatus::Ok;
    };
    if (pid == kMappedHere) {
        // An SHM domain: the bytes are mapped here, so a copy moves them,
        // and neither read-ahead nor write combining has a system call to
        // save. A process's memory may map the same object, so its combined
        // writes go first, and a write drops a read-ahead copy it may
        // overlap.
        wc_flush();
        if (wr) drop_read_ahead();
        host_transfer(wr);
        uint8_t* b = static_cast<uint8_t*>(buf);
        for (const iovec& v : iov) {
            if (wr)
                std::memcpy(v.iov_base, b, v.iov_len);
            else
                std::memcpy(b, v.iov_base, v.iov_len);
            b += v.iov_len;
        }
        return charged();
    }
    // No write combining into an on-demand MR: its pages may be absent,
    // and a write that cannot fault them in must fail here, before the
    // packet is acknowledged (a remote access error, as ODP hardware and
    // rxe_odp answer), not later at the flush.
    if (wr) {
        write_hits_read_ahead(pid, iov);
        if (!on_demand && access != hw::access::kRemoteAtomic && iov.size() == 1 && len <= kCombineMax &&
            wc_add(q, pid, iov[0], buf, len))
            return charged();
    }
    // A read served from the read-ahead copy needs no flush: the copy was
    // read after one, and every write since that may land on its bytes
    // dropped it (write_hits_read_ahead). So the payload the responder is
    // combining into one process's buffer keeps combining while the
    // requester sends from another's.
    if (!wr && ahead_left >= len && read_ahead_hit(q, kind, key, va, buf, len, ahead_for)) return charged();
    wc_flush();  // a read (or an uncombined write) sees every earlier write
    if (!wr && ahead_left >= len &&
        read_ahead(q, kind, key, access, va, buf, len, std::min(room, ahead_left), ahead_for))
        return charged();
    host_transfer(wr);
    if (!dma(pid, wr, iov.data(), iov.size(), buf, len)) {
        note_dma_failure(q.ctx);
        stat(hw::stats_block::dma_faults);
        stat(kind == tp::KeyKind::Lkey ? hw::stats_block::local_prot_err : hw::stats_block::remote_access_err);
        return tp::MemStatus::OutOfBounds;
    }
    return charged();
}

// The packets after a message's first (or a READ response's) are served
// from the read-ahead copy; encoding the frame copies them once, from the
// copy, instead of twice (the copy into the core's packet buffer was a
// memcpy of every payload byte, 5% of the daemon's samples under
// ib_write_bw with the loopback shortcut). Only a read that mem_io would
// serve from the copy is taken here, with mem_io's own check first (and
// with it the MPT lookup a model device charges) and the DMA charged alike.
tp::MemStatus SoftEngine::Impl::mem_view(const EngineQp& q, tp::KeyKind kind, uint32_t key, uint64_t va, size_t len,
                                         uint32_t access, uint64_t ahead_left, uint64_t ahead_for,
                                         const uint8_t*& view) {
    view = nullptr;
    if (len == 0 || ahead_left < len) return tp::MemStatus::Ok;
    const uint8_t* at = read_ahead_at(q, kind, key, va, len, ahead_for);
    if (!at) return tp::MemStatus::Ok;  // not held: mem_io reads it
    pid_t pid = 0;
    const tp::MemStatus st = translate(q, kind, key, va, len, access, &pid, &iov);
    if (st != tp::MemStatus::Ok) return st;
    charge_dma(false, len, access);
    ++dma_n.ahead_hits;
    view = at;
    return tp::MemStatus::Ok;
}

void SoftEngine::Impl::note_dma_failure(uint16_t ctx) {
    // process_vm_readv/writev give ESRCH when the process has exited. The
    // daemon will destroy the context when it sees the process's connection
    // close; until then, whatever the context's QPs would still do (a NAK for
    // the write that just failed, retransmissions) would be the device
    // talking for a process that is no longer there.
    if (errno != ESRCH) return;
    auto it = ctxs.find(ctx);
    if (it != ctxs.end()) it->second.gone = true;
}

// ---- the transport core's MemoryPort: data moves ----

tp::MemStatus EngineQp::read(tp::KeyKind kind, uint32_t key, uint64_t addr, void* dst, size_t len, uint32_t access) {
    return eng.mem_io(*this, kind, key, addr, dst, len, access, false);
}
tp::MemStatus EngineQp::gather(uint32_t lkey, uint64_t addr, void* dst, size_t len, uint64_t sge_left,
                              uint64_t wqe_seq) {
    return eng.mem_io(*this, tp::KeyKind::Lkey, lkey, addr, dst, len, 0, false, sge_left, wqe_seq);
}
tp::MemStatus EngineQp::read_reply(uint32_t rkey, uint64_t addr, void* dst, size_t len, uint64_t left,
                                   uint64_t serve) {
    return eng.mem_io(*this, tp::KeyKind::Rkey, rkey, addr, dst, len, hw::access::kRemoteRead, false, left, serve);
}
tp::MemStatus EngineQp::gather_view(uint32_t lkey, uint64_t addr, size_t len, uint64_t sge_left, uint64_t wqe_seq,
                                    const uint8_t*& view) {
    return eng.mem_view(*this, tp::KeyKind::Lkey, lkey, addr, len, 0, sge_left, wqe_seq, view);
}
tp::MemStatus EngineQp::read_reply_view(uint32_t rkey, uint64_t addr, size_t len, uint64_t left, uint64_t serve,
                                        const uint8_t*& view) {
    return eng.mem_view(*this, tp::KeyKind::Rkey, rkey, addr, len, hw::access::kRemoteRead, left, serve, view);
}
tp::MemStatus EngineQp::write(tp::KeyKind kind, uint32_t key, uint64_t addr, const void* src, size_t len,
                              uint32_t access) {
    return eng.mem_io(*this, kind, key, addr, const_cast<void*>(src), len, access, true);
}
tp::MemStatus EngineQp::atomic(uint32_t rkey, uint64_t addr, tp::AtomicOp op, uint64_t swap_add, uint64_t compare,
                               uint64_t& orig) {
    // The engine thread is the only one touching device memory: this
    // read-modify-write is atomic against every other atomic of the device.
    uint64_t v = 0;
    tp::MemStatus st = eng.mem_io(*this, tp::KeyKind::Rkey, rkey, addr, &v, 8, hw::access::kRemoteAtomic, false);
    if (st != tp::MemStatus::Ok) return st;
    orig = v;
    const uint64_t nv = op == tp::AtomicOp::FetchAdd ? v + swap_add : (v == compare ? swap_add : v);
    return eng.mem_io(*this, tp::KeyKind::Rkey, rkey, addr, const_cast<uint64_t*>(&nv), 8,
                      hw::access::kRemoteAtomic, true);
}

}  // namespace simnic::soft_engine
