// The driver's side of an SHM domain (hw-spec 1.3): hand the object over,
// then name the mapping with ATTACH_DOMAIN. The provider's queue arena, the
// daemon-backed context's EQ and simnic bench's host memory all do this.
#include <array>

#include "simnic/host/context.h"
#include "simnic/hw/field.h"
#include "simnic/hw/layout.h"

namespace simnic::host {

int attach_shm_domain(Context& ctx, int fd, std::uint64_t base, std::uint64_t len, std::uint16_t& domain) {
    std::uint32_t handle = 0;
    if (const int e = ctx.share_memory(fd, len, handle)) return e;
    namespace a = hw::cmd_attach_domain_in;
    std::array<std::uint8_t, a::kSize> in{};
    hw::set(in.data(), in.size(), a::kind, static_cast<std::uint8_t>(hw::DomainKind::Shm));
    hw::set(in.data(), in.size(), a::shm_handle, handle);
    hw::set(in.data(), in.size(), a::map_base, base);
    hw::set(in.data(), in.size(), a::map_len, len);
    CmdOutcome r;
    if (const int e = ctx.command(hw::CmdOpcode::AttachDomain, in.data(), in.size(), hw::cmd_handle::kSize, r))
        return e;
    if (r.status != hw::CmdStatus::Ok) return hw::status_errno(r.status);
    if (r.out.size() < hw::cmd_handle::kSize) return EPROTO;
    domain = static_cast<std::uint16_t>(hw::get(r.out.data(), r.out.size(), hw::cmd_handle::handle));
    return 0;
}

}  // namespace simnic::host
