#include "icrc_engine_interface.h"

namespace simnic::rtl {

const std::vector<PortSpec>& icrc_engine_ports() {
    constexpr PortDir In = PortDir::In, Out = PortDir::Out;
    static const std::vector<PortSpec> ports = {
        {"clk_i", In, 1, 0, "the pipeline clock (`clock.freq_mhz`)"},
        {"rst_ni", In, 1, 0, "active-low reset: held low 3 cycles, then high for 1, before the first beat"},
        {"s_axis_tdata_i", In, 0, 1,
         "a beat of the frame; byte lane 0 (bits 7:0) is the first byte on the wire; Ethernet frame without FCS, "
         "its last 4 bytes the ICRC it carries (a sent frame: the datapath's value)"},
        {"s_axis_tkeep_i", In, 0, 8, "valid lanes, contiguous from lane 0; all ones but on the last beat"},
        {"s_axis_tvalid_i", In, 1, 0, "the beat is valid"},
        {"s_axis_tlast_i", In, 1, 0, "the frame's last beat"},
        {"s_axis_tready_o", Out, 1, 0, "the block takes the beat on this edge (low: the stage stalls)"},
        {"m_valid_o", Out, 1, 0, "a one-cycle strobe: the frame's result is on the `m_*` ports (one per frame, in "
                                 "frame order; no `m_ready_i`)"},
        {"m_icrc_o", Out, 32, 0, "the computed ICRC (zlib value; a sent frame gets it in place of its last 4 bytes)"},
        {"m_icrc_ok_o", Out, 1, 0, "the computed ICRC equals the one the frame carries"},
        {"m_err_o", Out, 1, 0, "not IPv4/IPv6, IHL < 5, or too short"},
    };
    return ports;
}

}  // namespace simnic::rtl
