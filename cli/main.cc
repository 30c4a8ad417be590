#include <algorithm>
#include <cstdio>
#include <vector>

#include "commands.h"

int main(int argc, char** argv) {
    CLI::App app{"simnic: a cycle-level RoCE v2 NIC model and software RDMA device"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "simnic 0.1.0");

    std::vector<std::pair<CLI::App*, simnic::cli::Runner>> commands;
    auto add = [&](simnic::cli::Runner (*fn)(CLI::App&)) {
        size_t before = app.get_subcommands({}).size();
        simnic::cli::Runner r = fn(app);
        commands.emplace_back(app.get_subcommands({})[before], std::move(r));
    };
    add(simnic::cli::add_pcap_command);
    add(simnic::cli::add_synth_command);
    add(simnic::cli::add_rtl_command);
    add(simnic::cli::add_link_command);
    add(simnic::cli::add_fabric_command);
    add(simnic::cli::add_daemon_command);
    add(simnic::cli::add_exec_command);
    add(simnic::cli::add_resource_command);
    add(simnic::cli::add_stats_command);
    add(simnic::cli::add_trace_command);
    add(simnic::cli::add_bench_command);
    add(simnic::cli::add_wire_command);
    add(simnic::cli::add_doctor_command);
    add(simnic::cli::add_completion_command);
    add(simnic::cli::add_man_command);

    try {
        app.parse(simnic::cli::take_exec_command(argc, argv), argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    for (auto& [sub, run] : commands)
        if (sub->parsed()) return run();
    return 2;
}
