// Subcommands of `simnic`. Each registers its options on the parent app and
// runs when selected; the returned code is the process exit status.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace simnic::cli {

using Runner = std::function<int()>;

Runner add_pcap_command(CLI::App& app);
Runner add_synth_command(CLI::App& app);
Runner add_rtl_command(CLI::App& app);
Runner add_link_command(CLI::App& app);
Runner add_fabric_command(CLI::App& app);
Runner add_daemon_command(CLI::App& app);
Runner add_exec_command(CLI::App& app);
Runner add_resource_command(CLI::App& app);
Runner add_stats_command(CLI::App& app);
Runner add_trace_command(CLI::App& app);
Runner add_bench_command(CLI::App& app);
Runner add_wire_command(CLI::App& app);
Runner add_doctor_command(CLI::App& app);
Runner add_completion_command(CLI::App& app);
Runner add_man_command(CLI::App& app);

// For `simnic exec`: keeps CMD's words (after "--", or from the first word
// that is not an exec option) from CLI11, which would rewrite them; returns
// the argc CLI11 is to parse.
int take_exec_command(int argc, char** argv);

}  // namespace simnic::cli
