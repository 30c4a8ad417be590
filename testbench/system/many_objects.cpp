// Holds many verbs objects on a device until it is killed, for `simnic
// resource show` and `simnic doctor` over more objects than one control
// reply carries (test_resource_pages.sh).
//   many_objects DEVICE MRS QPS [init]
//                                 prints "ready" once it holds a PD, MRS
//                                 MRs, a CQ and QPS RC QPs (in INIT with
//                                 "init": a QP of a device with congestion
//                                 control on then has its reaction point),
//                                 then waits
#include <infiniband/verbs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "open_device.h"

int main(int argc, char** argv) {
    if (argc != 4 && !(argc == 5 && std::strcmp(argv[4], "init") == 0)) {
        std::fprintf(stderr, "usage: many_objects DEVICE MRS QPS [init]\n");
        return 2;
    }
    const bool init = argc == 5;
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
        ibv_qp* qp = ibv_create_qp(pd, &a);
        if (!qp) {
            std::fprintf(stderr, "many_objects: QP %ld: %s\n", i, std::strerror(errno));
            return 1;
        }
        ibv_qp_attr at{};
        at.qp_state = IBV_QPS_INIT;
        at.port_num = 1;
        if (init && ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
            std::fprintf(stderr, "many_objects: QP %ld to INIT: %s\n", i, std::strerror(errno));
            return 1;
        }
    }
    std::printf("ready\n");
    std::fflush(stdout);
    for (;;) pause();
}
