// Holds many verbs objects on a device until it is killed, for `simnic
// resource show` and `simnic doctor` over more objects than one control
// reply carries (test_resource_pages.sh).
//   many_objects DEVICE MRS QPS   prints "ready" once it holds a PD, MRS
//                                 MRs, a CQ and QPS RC QPs, then waits
#include <infiniband/verbs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "open_device.h"

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: many_objects DEVICE MRS QPS\n");
        return 2;
    }
    const long mrs = std::atol(argv[2]), qps = std::atol(argv[3]);
    ibv_context* ctx = simnic::tb::open_device_named(argv[1]);
    if (!ctx) {
        std::fprintf(stderr, "many_objects: cannot open %s\n", argv[1]);
        return 1;
    }
    ibv_pd* pd = ibv_alloc_pd(ctx);
    ibv_cq* cq = pd ? ibv_create_cq(ctx, 16, nullptr, nullptr, 0) : nullptr;
    if (!cq) {
        std::perror("many_objects: PD or CQ");
        return 1;
    }
    // Every MR over the same page: what is counted is the objects.
    static char page[4096];
    for (long i = 0; i < mrs; ++i)
        if (!ibv_reg_mr(pd, page, sizeof page, IBV_ACCESS_LOCAL_WRITE)) {
            std::fprintf(stderr, "many_objects: MR %ld: %s\n", i, std::strerror(errno));
            return 1;
        }
    for (long i = 0; i < qps; ++i) {
        ibv_qp_init_attr a{};
        a.send_cq = a.recv_cq = cq;
        a.qp_type = IBV_QPT_RC;
        a.cap.max_send_wr = a.cap.max_recv_wr = 1;
        a.cap.max_send_sge = a.cap.max_recv_sge = 1;
        if (!ibv_create_qp(pd, &a)) {
            std::fprintf(stderr, "many_objects: QP %ld: %s\n", i, std::strerror(errno));
            return 1;
        }
    }
    std::printf("ready\n");
    std::fflush(stdout);
    for (;;) pause();
}
