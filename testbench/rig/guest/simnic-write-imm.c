/* simnic-write-imm: RDMA WRITE with immediate between two rxe devices.
 *
 * Debian's perftest 4.5 has no write-with-immediate mode, so the rig carries
 * this small verbs program for the golden captures. One RC QP each side; the
 * two sides swap QPN, PSN, GID, buffer address and rkey over TCP; the client
 * then posts one RDMA WRITE WITH IMM per size given with -s (immediate =
 * 0x51000000 + index), and the server checks each completion (opcode
 * RECV_RDMA_WITH_IMM, byte_len, immediate) and the written bytes.
 *
 *   server:  simnic-write-imm [-g GIDX] [-p PORT] [-s 64,3000,...] [-b N]
 *   client:  simnic-write-imm [-g GIDX] [-p PORT] [-s 64,3000,...] [-b N] SERVER_IP
 *
 * -b N first creates and destroys N QPs, so that the QP used gets a large
 * QPN (rxe hands QPNs out cyclically); the golden captures use it to show
 * how the UDP source port folds large QPN products.
 *
 * Built on the host against the host's libibverbs by `simnic-rig setup`.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_SIZES 16

struct peer_info {
    uint32_t qpn;
    uint32_t psn;
    uint32_t rkey;
    uint64_t addr;
    uint8_t gid[16];
} __attribute__((packed));

static void die(const char *what) {
    fprintf(stderr, "simnic-write-imm: %s\n", what);
    exit(1);
}

static int tcp_connect(const char *host, int port) {
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1) die("bad server address");
    for (int i = 0; i < 100; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) return fd;
        close(fd);
        usleep(100000);
    }
    die("cannot connect to the server");
    return -1;
}

static int tcp_accept(int port) {
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 1)) die("cannot listen");
    int fd = accept(ls, NULL, NULL);
    close(ls);
    if (fd < 0) die("accept failed");
    return fd;
}

static void xfer(int fd, void *buf, size_t len, int sending) {
    uint8_t *p = buf;
    while (len) {
        ssize_t n = sending ? write(fd, p, len) : read(fd, p, len);
        if (n <= 0) die("TCP exchange failed");
        p += n;
        len -= (size_t)n;
    }
}

int main(int argc, char **argv) {
    int gidx = 1, port = 18517, burn = 0, opt;
    size_t sizes[MAX_SIZES] = { 64 }, nsizes = 1, total = 0;
    while ((opt = getopt(argc, argv, "g:p:s:b:")) != -1) {
        switch (opt) {
        case 'g': gidx = atoi(optarg); break;
        case 'p': port = atoi(optarg); break;
        case 'b': burn = atoi(optarg); break;
        case 's': {
            nsizes = 0;
            for (char *t = strtok(optarg, ","); t && nsizes < MAX_SIZES; t = strtok(NULL, ","))
                sizes[nsizes++] = strtoul(t, NULL, 0);
            break;
        }
        default: die("usage: simnic-write-imm [-g gidx] [-p port] [-s sizes] [-b n] [server]");
        }
    }
    const char *server = optind < argc ? argv[optind] : NULL;
    for (size_t i = 0; i < nsizes; i++) total += sizes[i];

    int ndev = 0;
    struct ibv_device **devs = ibv_get_device_list(&ndev);
    if (!devs || ndev == 0) die("no RDMA device");
    struct ibv_context *ctx = ibv_open_device(devs[0]);
    if (!ctx) die("cannot open the device");
    struct ibv_pd *pd = ibv_alloc_pd(ctx);
    struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
    if (!pd || !cq) die("cannot create PD/CQ");
    size_t buflen = total + 64;
    uint8_t *buf = calloc(1, buflen);
    struct ibv_mr *mr = ibv_reg_mr(pd, buf, buflen, IBV_ACCESS_LOCAL_WRITE |
                                   IBV_ACCESS_REMOTE_WRITE);
    if (!mr) die("cannot register memory");

    struct ibv_qp_init_attr ia = {
        .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
        .cap = { .max_send_wr = 32, .max_recv_wr = 32, .max_send_sge = 1, .max_recv_sge = 1 },
    };
    for (int i = 0; i < burn; i++) {
        struct ibv_qp *q = ibv_create_qp(pd, &ia);
        if (!q) die("cannot create a QP while burning QPNs");
        ibv_destroy_qp(q);
    }
    struct ibv_qp *qp = ibv_create_qp(pd, &ia);
    if (!qp) die("cannot create the QP");

    struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
                             .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                      IBV_QP_ACCESS_FLAGS))
        die("INIT failed");

    struct peer_info me = { 0 }, them;
    union ibv_gid gid;
    if (ibv_query_gid(ctx, 1, gidx, &gid)) die("cannot read the GID");
    srand48(getpid() * time(NULL));
    me.qpn = htonl(qp->qp_num);
    me.psn = htonl((uint32_t)lrand48() & 0xffffff);
    me.rkey = htonl(mr->rkey);
    me.addr = htobe64((uint64_t)(uintptr_t)buf);
    memcpy(me.gid, gid.raw, 16);
    int fd = server ? tcp_connect(server, port) : tcp_accept(port);
    if (server) { xfer(fd, &me, sizeof me, 1); xfer(fd, &them, sizeof them, 0); }
    else { xfer(fd, &them, sizeof them, 0); xfer(fd, &me, sizeof me, 1); }
    printf("local QPN 0x%06x PSN 0x%06x, remote QPN 0x%06x PSN 0x%06x\n", qp->qp_num,
           ntohl(me.psn), ntohl(them.qpn), ntohl(them.psn));

    /* The server posts its receives before RTR, then the client may write. */
    if (!server) {
        for (size_t i = 0; i < nsizes; i++) {
            struct ibv_recv_wr rw = { .wr_id = i }, *bad;
            if (ibv_post_recv(qp, &rw, &bad)) die("post_recv failed");
        }
    }
    struct ibv_ah_attr ah = { .is_global = 1, .port_num = 1,
                              .grh = { .sgid_index = (uint8_t)gidx, .hop_limit = 64 } };
    memcpy(ah.grh.dgid.raw, them.gid, 16);
    struct ibv_qp_attr r = { .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_4096,
                             .dest_qp_num = ntohl(them.qpn), .rq_psn = ntohl(them.psn),
                             .max_dest_rd_atomic = 1, .min_rnr_timer = 12, .ah_attr = ah };
    struct ibv_port_attr pa;
    if (ibv_query_port(ctx, 1, &pa) == 0) r.path_mtu = pa.active_mtu;
    if (ibv_modify_qp(qp, &r, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
        die("RTR failed");
    struct ibv_qp_attr s = { .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
                             .rnr_retry = 7, .sq_psn = ntohl(me.psn), .max_rd_atomic = 1 };
    if (ibv_modify_qp(qp, &s, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
        die("RTS failed");
    char sync = 'r';
    xfer(fd, &sync, 1, server ? 0 : 1); /* server is ready to receive */

    int rc = 0;
    if (server) {
        /* The client writes. */
        size_t off = 0;
        for (size_t i = 0; i < nsizes; i++) {
            for (size_t k = 0; k < sizes[i]; k++) buf[off + k] = (uint8_t)(i * 31 + k);
            struct ibv_sge sge = { .addr = (uintptr_t)(buf + off), .length = (uint32_t)sizes[i],
                                   .lkey = mr->lkey };
            struct ibv_send_wr wr = {
                .wr_id = i, .sg_list = &sge, .num_sge = sizes[i] ? 1 : 0,
                .opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
                .imm_data = htonl(0x51000000u + (uint32_t)i),
                .wr = { .rdma = { .remote_addr = be64toh(them.addr) + off,
                                  .rkey = ntohl(them.rkey) } },
            }, *bad;
            if (ibv_post_send(qp, &wr, &bad)) die("post_send failed");
            struct ibv_wc wc;
            int n;
            while ((n = ibv_poll_cq(cq, 1, &wc)) == 0) {}
            if (n < 0 || wc.status != IBV_WC_SUCCESS) {
                fprintf(stderr, "write %zu: %s\n", i, ibv_wc_status_str(wc.status));
                rc = 1;
                break;
            }
            off += sizes[i];
        }
    } else {
        size_t off = 0;
        for (size_t i = 0; i < nsizes; i++) {
            struct ibv_wc wc;
            int n;
            while ((n = ibv_poll_cq(cq, 1, &wc)) == 0) {}
            if (n < 0 || wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM ||
                !(wc.wc_flags & IBV_WC_WITH_IMM) || ntohl(wc.imm_data) != 0x51000000u + i ||
                wc.byte_len != sizes[i]) {
                fprintf(stderr, "completion %zu: status %s opcode %d imm 0x%x len %u\n", i,
                        ibv_wc_status_str(wc.status), wc.opcode, ntohl(wc.imm_data),
                        wc.byte_len);
                rc = 1;
                break;
            }
            for (size_t k = 0; k < sizes[i]; k++)
                if (buf[off + k] != (uint8_t)(i * 31 + k)) { rc = 1; break; }
            off += sizes[i];
        }
    }
    char done = rc ? 'x' : 'd', peer = 0;
    xfer(fd, &done, 1, 1);
    xfer(fd, &peer, 1, 0);
    if (peer != 'd') rc = 1;
    printf("%zu writes with immediate, %zu bytes: %s\n", nsizes, total, rc ? "FAILED" : "ok");
    close(fd);
    ibv_destroy_qp(qp);
    ibv_dereg_mr(mr);
    ibv_destroy_cq(cq);
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    ibv_free_device_list(devs);
    return rc;
}
