// The tutorial's 6.5 for simnic: objects whose owner is gone. The program
// opens DEVICE, creates a PD, a CQ and an RC QP, then forks: the child
// inherits the descriptor of the daemon's connection and sleeps, and the
// parent SIGKILLs itself. The daemon frees a process's objects when the last
// descriptor of its connection closes, so they outlive their owner until the
// child ends; `simnic doctor` must name the dead pid.
//   doctor_orphan DEVICE    prints "owner PID holder PID" before the parent dies
#include <infiniband/verbs.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "open_device.h"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: doctor_orphan DEVICE\n");
        return 2;
    }
    ibv_context* ctx = simnic::tb::open_device_named(argv[1]);
    if (!ctx) {
        std::fprintf(stderr, "doctor_orphan: cannot open %s\n", argv[1]);
        return 1;
    }
    ibv_pd* pd = ibv_alloc_pd(ctx);
    ibv_cq* cq = pd ? ibv_create_cq(ctx, 16, nullptr, nullptr, 0) : nullptr;
    ibv_qp_init_attr attr{};
    attr.send_cq = attr.recv_cq = cq;
    attr.qp_type = IBV_QPT_RC;
    attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
    attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
    if (!cq || !ibv_create_qp(pd, &attr)) {
        std::fprintf(stderr, "doctor_orphan: cannot create PD, CQ and QP on %s\n", argv[1]);
        return 1;
    }
    const pid_t child = fork();
    if (child < 0) return 1;
    if (child == 0) {
        // Holds every inherited descriptor, the daemon's connection among
        // them, until the test kills it.
        for (;;) pause();
    }
    std::printf("owner %d holder %d\n", int(getpid()), int(child));
    std::fflush(stdout);
    raise(SIGKILL);
    return 1;
}
