/* simnic-target: the target agent of the differential scenarios (issue 10,
 * section 4). It owns one verbs context on a target device (kernel rxe in a
 * rig VM, or a simnic device on the host) and does what the scenario runner
 * asks over TCP: create PD, CQs, MRs, QPs, address handles and memory
 * windows, move QPs through their states with given attributes, post
 * receives and sends, and report completions (every ibv_wc field), async
 * events, ibv_query_qp and memory contents.
 *
 * libibverbs only, one source: `simnic-rig setup` builds it for the VMs, the
 * build tree for the host (where it runs under simnic's verbs provider).
 *
 *   simnic-target [-p PORT] [-1]      listen on 0.0.0.0:PORT (default 18530);
 *                                     -1: serve one connection, then exit
 *
 * Protocol: one request per line, a command and KEY=VALUE words; one JSON
 * object per line back, {"ok":true,...} or {"ok":false,"error":"...",
 * "errno":N}. Numbers take 0x for hex. Objects are named by the runner
 * (name=q0). Commands:
 *   open [dev=NAME]             device, PD, a send CQ and a receive CQ
 *   close                       destroy everything, close the device
 *   mr name= size= access=FLAGS [fill=zero|inc|byte:XX] [offset=N]
 *                               FLAGS: lw,rw,rr,ra,mw,aw,fg,fp or 0x...
 *   dereg name=
 *   qp name= type=rc|uc|ud [sq= rq= sge= inline= sig_all=0|1 ex=1]
 *   modify name= state=reset|init|rtr|rts|sqd|err [attributes]
 *       access= pkey_index= port= qkey= dqpn= rq_psn= mtu=256..4096
 *       dest=A.B.C.D max_dest_rd_atomic= min_rnr_timer= sq_psn= timeout=
 *       retry_cnt= rnr_retry= max_rd_atomic= notify=0|1 mask=+flag,-flag
 *   ah name= dest=A.B.C.D
 *   post_recv name= wr_id= [sge=MR:OFF:LEN,...]
 *   post_send name= op= wr_id= [sge=MR:OFF:LEN,...] [flags=signaled,solicited,
 *       fence,inline] [raddr= rkey= imm= inv= swap= cmp= add= value=]
 *       [ah= dqpn= qkey=] [mw= mr= off= len= access=]
 *       op: send send_imm send_inv write write_imm read cas faa local_inv
 *           bind_mw atomic_write
 *   poll [wait_ms=] [min=]      completions of both CQs, in arrival order
 *   events [wait_ms=] [min=]    async events
 *   query name=                 ibv_query_qp
 *   read name= off= len=        MR bytes as hex
 *   write name= off= hex=
 *   mw name= type=1|2           ibv_alloc_mw
 *   bind name= qp= mr= off= len= access= wr_id=   type-1 window: ibv_bind_mw
 *   dealloc_mw name=
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_OBJ 32
#define MAX_WORDS 64
#define MAX_SGE 8

/* ------------------------------------------------------------------ */
/* Replies: one JSON object per line, built in a growing buffer. */

static char *out;
static size_t out_len, out_cap;

static void put(const char *fmt, ...) {
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(out + out_len, out_cap - out_len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < out_cap - out_len) {
            out_len += (size_t)n;
            return;
        }
        out_cap = out_cap * 2 + (size_t)(n > 0 ? n : 0) + 256;
        out = realloc(out, out_cap);
        if (!out) abort();
    }
}

static void put_hex(const uint8_t *p, size_t n) {
    put("\"");
    for (size_t i = 0; i < n; i++) put("%02x", p[i]);
    put("\"");
}

/* ------------------------------------------------------------------ */
/* Requests: a command word and KEY=VALUE words. */

struct req {
    int n;
    char *key[MAX_WORDS];
    char *val[MAX_WORDS];
    char err[256];
};

static const char *arg(struct req *r, const char *key) {
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->key[i], key)) return r->val[i];
    return NULL;
}

static int parse_u64(const char *s, uint64_t *v) {
    char *end;
    errno = 0;
    *v = strtoull(s, &end, 0);
    return !errno && end != s && *end == 0;
}

/* A number argument; `def` when absent. Sets r->err on a bad value. */
static uint64_t num(struct req *r, const char *key, uint64_t def) {
    const char *s = arg(r, key);
    uint64_t v;
    if (!s) return def;
    if (!parse_u64(s, &v)) {
        snprintf(r->err, sizeof r->err, "%s=%s is not a number", key, s);
        return def;
    }
    return v;
}

static const char *need(struct req *r, const char *key) {
    const char *s = arg(r, key);
    if (!s && !r->err[0]) snprintf(r->err, sizeof r->err, "missing %s=", key);
    return s;
}

/* ------------------------------------------------------------------ */
/* The context and its named objects. */

struct mr {
    char name[16];
    struct ibv_mr *mr;
    uint8_t *buf;
    size_t size;
};
struct qp {
    char name[16];
    struct ibv_qp *qp;
    struct ibv_qp_ex *qpx;  /* when created with ex=1 */
    enum ibv_qp_type type;
};
struct ah {
    char name[16];
    struct ibv_ah *ah;
};
struct mw {
    char name[16];
    struct ibv_mw *mw;
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *scq, *rcq;
static int gid_index = -1;
static uint8_t port_num = 1;
static struct mr mrs[MAX_OBJ];
static struct qp qps[MAX_OBJ];
static struct ah ahs[MAX_OBJ];
static struct mw mws[MAX_OBJ];

#define FIND(arr, nm)                                                    \
    ({                                                                   \
        __typeof__(&(arr)[0]) found_ = NULL;                             \
        for (int i_ = 0; i_ < MAX_OBJ && nm; i_++)                       \
            if ((arr)[i_].name[0] && !strcmp((arr)[i_].name, nm)) found_ = &(arr)[i_]; \
        found_;                                                          \
    })
#define FREE_SLOT(arr)                                                   \
    ({                                                                   \
        __typeof__(&(arr)[0]) found_ = NULL;                             \
        for (int i_ = 0; i_ < MAX_OBJ && !found_; i_++)                  \
            if (!(arr)[i_].name[0]) found_ = &(arr)[i_];                 \
        found_;                                                          \
    })

static int fail(struct req *r, int e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, sizeof r->err, fmt, ap);
    va_end(ap);
    errno = e;
    return -1;
}

/* The enum's own names (IBV_WC_ less), which scenarios write. */
static const char *wc_status_name(enum ibv_wc_status s) {
    static const char *n[] = {
        "SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR", "LOC_PROT_ERR",
        "WR_FLUSH_ERR", "MW_BIND_ERR", "BAD_RESP_ERR", "LOC_ACCESS_ERR", "REM_INV_REQ_ERR",
        "REM_ACCESS_ERR", "REM_OP_ERR", "RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR", "LOC_RDD_VIOL_ERR",
        "REM_INV_RD_REQ_ERR", "REM_ABORT_ERR", "INV_EECN_ERR", "INV_EEC_STATE_ERR", "FATAL_ERR",
        "RESP_TIMEOUT_ERR", "GENERAL_ERR", "TM_ERR", "TM_RNDV_INCOMPLETE",
    };
    return (unsigned)s < sizeof n / sizeof n[0] ? n[s] : ibv_wc_status_str(s);
}

static const char *wc_opcode_name(enum ibv_wc_opcode o) {
    switch (o) {
        case IBV_WC_SEND: return "SEND";
        case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
        case IBV_WC_RDMA_READ: return "RDMA_READ";
        case IBV_WC_COMP_SWAP: return "COMP_SWAP";
        case IBV_WC_FETCH_ADD: return "FETCH_ADD";
        case IBV_WC_BIND_MW: return "BIND_MW";
        case IBV_WC_LOCAL_INV: return "LOCAL_INV";
        case IBV_WC_ATOMIC_WRITE: return "ATOMIC_WRITE";
        case IBV_WC_RECV: return "RECV";
        case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
        default: return "OTHER";
    }
}

static const char *qp_state_name(enum ibv_qp_state s) {
    static const char *n[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
    return (unsigned)s < 7 ? n[s] : "UNKNOWN";
}

static int parse_state(const char *s, enum ibv_qp_state *st) {
    static const char *n[] = {"reset", "init", "rtr", "rts", "sqd", "sqe", "err"};
    for (int i = 0; i < 7; i++)
        if (!strcmp(s, n[i])) {
            *st = (enum ibv_qp_state)i;
            return 0;
        }
    return -1;
}

/* Access flags: names, or a number. fg/fp are FLUSH_GLOBAL/PERSISTENT
 * (1 << 8, 1 << 9 in the kernel's uverbs ABI; rdma-core 44 has no names). */
static int parse_access(struct req *r, const char *s, unsigned *acc) {
    uint64_t v;
    *acc = 0;
    if (!s || !*s || !strcmp(s, "0")) return 0;
    if (parse_u64(s, &v)) {
        *acc = (unsigned)v;
        return 0;
    }
    char tmp[128];
    snprintf(tmp, sizeof tmp, "%s", s);
    for (char *save = NULL, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "lw")) *acc |= IBV_ACCESS_LOCAL_WRITE;
        else if (!strcmp(t, "rw")) *acc |= IBV_ACCESS_REMOTE_WRITE;
        else if (!strcmp(t, "rr")) *acc |= IBV_ACCESS_REMOTE_READ;
        else if (!strcmp(t, "ra")) *acc |= IBV_ACCESS_REMOTE_ATOMIC;
        else if (!strcmp(t, "mw")) *acc |= IBV_ACCESS_MW_BIND;
        else if (!strcmp(t, "zb")) *acc |= IBV_ACCESS_ZERO_BASED;
        else if (!strcmp(t, "fg")) *acc |= 1u << 8;
        else if (!strcmp(t, "fp")) *acc |= 1u << 9;
        else return fail(r, EINVAL, "unknown access flag %s", t);
    }
    return 0;
}

static int parse_mtu(uint64_t v, enum ibv_mtu *m) {
    switch (v) {
        case 256: *m = IBV_MTU_256; return 0;
        case 512: *m = IBV_MTU_512; return 0;
        case 1024: *m = IBV_MTU_1024; return 0;
        case 2048: *m = IBV_MTU_2048; return 0;
        case 4096: *m = IBV_MTU_4096; return 0;
    }
    return -1;
}

static int mtu_bytes(enum ibv_mtu m) { return 128 << m; }

/* ------------------------------------------------------------------ */

static void destroy_all(void) {
    for (int i = 0; i < MAX_OBJ; i++) {
        if (qps[i].name[0]) ibv_destroy_qp(qps[i].qp);
        if (ahs[i].name[0]) ibv_destroy_ah(ahs[i].ah);
    }
    for (int i = 0; i < MAX_OBJ; i++) {
        if (mws[i].name[0]) ibv_dealloc_mw(mws[i].mw);
    }
    for (int i = 0; i < MAX_OBJ; i++) {
        if (mrs[i].name[0]) {
            ibv_dereg_mr(mrs[i].mr);
            free(mrs[i].buf);
        }
    }
    memset(qps, 0, sizeof qps);
    memset(ahs, 0, sizeof ahs);
    memset(mws, 0, sizeof mws);
    memset(mrs, 0, sizeof mrs);
    if (scq) ibv_destroy_cq(scq);
    if (rcq) ibv_destroy_cq(rcq);
    if (pd) ibv_dealloc_pd(pd);
    if (ctx) ibv_close_device(ctx);
    scq = rcq = NULL;
    pd = NULL;
    ctx = NULL;
}

static int cmd_open(struct req *r) {
    const char *want = arg(r, "dev");
    int n = 0;
    if (ctx) destroy_all();
    struct ibv_device **list = ibv_get_device_list(&n);
    if (!list) return fail(r, errno, "ibv_get_device_list: %s", strerror(errno));
    struct ibv_device *dev = NULL;
    for (int i = 0; i < n && !dev; i++)
        if (!want || !strcmp(ibv_get_device_name(list[i]), want)) dev = list[i];
    if (!dev) {
        ibv_free_device_list(list);
        return fail(r, ENODEV, "no device %s", want ? want : "at all");
    }
    ctx = ibv_open_device(dev);
    ibv_free_device_list(list);
    if (!ctx) return fail(r, errno, "ibv_open_device: %s", strerror(errno));
    fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
    pd = ibv_alloc_pd(ctx);
    scq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
    rcq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
    if (!pd || !scq || !rcq) return fail(r, errno, "PD or CQ: %s", strerror(errno));
    struct ibv_port_attr pa;
    if (ibv_query_port(ctx, port_num, &pa)) return fail(r, errno, "ibv_query_port");
    struct ibv_device_attr_ex da;
    memset(&da, 0, sizeof da);
    if (ibv_query_device_ex(ctx, NULL, &da)) return fail(r, errno, "ibv_query_device_ex");
    /* The RoCE v2 GID of the port's IPv4 address: ::ffff:a.b.c.d. */
    gid_index = -1;
    union ibv_gid gid;
    for (int i = 0; i < pa.gid_tbl_len && i < 16; i++) {
        if (ibv_query_gid(ctx, port_num, i, &gid)) continue;
        static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (!memcmp(gid.raw, v4mapped, 12)) {
            gid_index = i;
            break;
        }
    }
    if (gid_index < 0) return fail(r, ENOENT, "no IPv4-mapped GID on port 1");
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, gid.raw + 12, ip, sizeof ip);
    put(",\"dev\":\"%s\",\"gid_index\":%d,\"ip\":\"%s\",\"active_mtu\":%d,\"max_qp_rd_atom\":%d,"
        "\"max_qp_init_rd_atom\":%d,\"atomic_cap\":%d,\"device_cap_flags_ex\":%llu",
        ibv_get_device_name(ctx->device), gid_index, ip, mtu_bytes(pa.active_mtu),
        da.orig_attr.max_qp_rd_atom, da.orig_attr.max_qp_init_rd_atom, da.orig_attr.atomic_cap,
        (unsigned long long)da.device_cap_flags_ex);
    return 0;
}

static int need_ctx(struct req *r) {
    if (!ctx) return fail(r, ENODEV, "no device open (open first)");
    return 0;
}

static int cmd_mr(struct req *r) {
    const char *name = need(r, "name");
    uint64_t size = num(r, "size", 4096);
    const char *fill = arg(r, "fill");
    unsigned acc;
    if (r->err[0] || need_ctx(r)) return -1;
    if (parse_access(r, arg(r, "access"), &acc)) return -1;
    if (FIND(mrs, name)) return fail(r, EEXIST, "MR %s exists", name);
    struct mr *m = FREE_SLOT(mrs);
    if (!m || strlen(name) >= sizeof m->name) return fail(r, ENOMEM, "no slot for MR %s", name);
    size_t alloc = (size + 4095) & ~(size_t)4095;
    uint8_t *buf = aligned_alloc(4096, alloc ? alloc : 4096);
    if (!buf) return fail(r, ENOMEM, "out of memory");
    /* Contents the runner can predict: a pattern, zeros or one byte. */
    for (size_t i = 0; i < alloc; i++) buf[i] = (uint8_t)i;
    if (fill && !strcmp(fill, "zero")) memset(buf, 0, alloc);
    else if (fill && !strncmp(fill, "byte:", 5)) memset(buf, (int)strtoul(fill + 5, NULL, 16), alloc);
    struct ibv_mr *mr = ibv_reg_mr(pd, buf, size, (int)acc);
    if (!mr) {
        int e = errno;
        free(buf);
        return fail(r, e, "ibv_reg_mr: %s", strerror(e));
    }
    snprintf(m->name, sizeof m->name, "%s", name);
    m->mr = mr;
    m->buf = buf;
    m->size = size;
    put(",\"addr\":%llu,\"lkey\":%u,\"rkey\":%u,\"length\":%llu", (unsigned long long)(uintptr_t)buf,
        mr->lkey, mr->rkey, (unsigned long long)size);
    return 0;
}

static int cmd_dereg(struct req *r) {
    struct mr *m = FIND(mrs, need(r, "name"));
    if (!m) return fail(r, ENOENT, "no such MR");
    if (ibv_dereg_mr(m->mr)) return fail(r, errno, "ibv_dereg_mr: %s", strerror(errno));
    free(m->buf);
    memset(m, 0, sizeof *m);
    return 0;
}

static int cmd_qp(struct req *r) {
    const char *name = need(r, "name");
    const char *type = need(r, "type");
    if (r->err[0] || need_ctx(r)) return -1;
    if (FIND(qps, name)) return fail(r, EEXIST, "QP %s exists", name);
    struct qp *q = FREE_SLOT(qps);
    if (!q || strlen(name) >= sizeof q->name) return fail(r, ENOMEM, "no slot for QP %s", name);
    struct ibv_qp_init_attr_ex ia;
    memset(&ia, 0, sizeof ia);
    ia.send_cq = scq;
    ia.recv_cq = rcq;
    ia.cap.max_send_wr = (uint32_t)num(r, "sq", 32);
    ia.cap.max_recv_wr = (uint32_t)num(r, "rq", 32);
    ia.cap.max_send_sge = ia.cap.max_recv_sge = (uint32_t)num(r, "sge", 4);
    ia.cap.max_inline_data = (uint32_t)num(r, "inline", 0);
    ia.sq_sig_all = (int)num(r, "sig_all", 0);
    if (!strcmp(type, "rc")) ia.qp_type = IBV_QPT_RC;
    else if (!strcmp(type, "uc")) ia.qp_type = IBV_QPT_UC;
    else if (!strcmp(type, "ud")) ia.qp_type = IBV_QPT_UD;
    else return fail(r, EINVAL, "type=%s: rc, uc or ud", type);
    ia.comp_mask = IBV_QP_INIT_ATTR_PD;
    ia.pd = pd;
    int ex = (int)num(r, "ex", 0);
    if (ex) {
        /* The extended post API, for what ibv_post_send cannot ask for. */
        ia.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
        ia.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
                            IBV_QP_EX_WITH_RDMA_READ;
        if (ia.qp_type == IBV_QPT_RC) ia.send_ops_flags |= IBV_QP_EX_WITH_ATOMIC_WRITE;
    }
    if (r->err[0]) return -1;
    struct ibv_qp *qp = ibv_create_qp_ex(ctx, &ia);
    if (!qp) return fail(r, errno, "ibv_create_qp_ex: %s", strerror(errno));
    snprintf(q->name, sizeof q->name, "%s", name);
    q->qp = qp;
    q->type = ia.qp_type;
    q->qpx = ex ? ibv_qp_to_qp_ex(qp) : NULL;
    put(",\"qpn\":%u,\"max_send_wr\":%u,\"max_recv_wr\":%u,\"max_inline\":%u", qp->qp_num,
        ia.cap.max_send_wr, ia.cap.max_recv_wr, ia.cap.max_inline_data);
    return 0;
}

static int fill_ah(struct req *r, const char *dest, struct ibv_ah_attr *ah) {
    memset(ah, 0, sizeof *ah);
    ah->is_global = 1;
    ah->port_num = port_num;
    ah->grh.sgid_index = (uint8_t)gid_index;
    ah->grh.hop_limit = (uint8_t)num(r, "hop_limit", 64);
    ah->grh.traffic_class = (uint8_t)num(r, "tclass", 0);
    ah->grh.flow_label = (uint32_t)num(r, "flow_label", 0);
    uint8_t *g = ah->grh.dgid.raw;
    g[10] = g[11] = 0xff;
    if (inet_pton(AF_INET, dest, g + 12) != 1) return fail(r, EINVAL, "dest=%s is not IPv4", dest);
    return 0;
}

static int cmd_modify(struct req *r) {
    struct qp *q = FIND(qps, need(r, "name"));
    const char *st = need(r, "state");
    if (r->err[0]) return -1;
    if (!q) return fail(r, ENOENT, "no such QP");
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof a);
    int mask = IBV_QP_STATE;
    if (parse_state(st, &a.qp_state)) return fail(r, EINVAL, "state=%s", st);
    const int rc = q->type == IBV_QPT_RC, ud = q->type == IBV_QPT_UD;
    unsigned acc;
    /* The attributes each transition requires (IBA 11.2.5.2, as
     * ibv_modify_qp(3) lists them), from the words given or defaults. */
    switch (a.qp_state) {
        case IBV_QPS_INIT:
            a.pkey_index = (uint16_t)num(r, "pkey_index", 0);
            a.port_num = (uint8_t)num(r, "port", port_num);
            mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT;
            if (ud) {
                a.qkey = (uint32_t)num(r, "qkey", 0x11111111);
                mask |= IBV_QP_QKEY;
            } else {
                if (parse_access(r, arg(r, "access"), &acc)) return -1;
                a.qp_access_flags = acc;
                mask |= IBV_QP_ACCESS_FLAGS;
            }
            break;
        case IBV_QPS_RTR:
            if (!ud) {
                const char *dest = need(r, "dest");
                if (!dest || fill_ah(r, dest, &a.ah_attr)) return -1;
                if (parse_mtu(num(r, "mtu", 1024), &a.path_mtu)) return fail(r, EINVAL, "bad mtu");
                a.dest_qp_num = (uint32_t)num(r, "dqpn", 0);
                a.rq_psn = (uint32_t)num(r, "rq_psn", 0);
                mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
                if (rc) {
                    a.max_dest_rd_atomic = (uint8_t)num(r, "max_dest_rd_atomic", 4);
                    a.min_rnr_timer = (uint8_t)num(r, "min_rnr_timer", 12);
                    mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
                }
            }
            break;
        case IBV_QPS_RTS:
            a.sq_psn = (uint32_t)num(r, "sq_psn", 0);
            mask |= IBV_QP_SQ_PSN;
            if (rc) {
                a.timeout = (uint8_t)num(r, "timeout", 14);
                a.retry_cnt = (uint8_t)num(r, "retry_cnt", 7);
                a.rnr_retry = (uint8_t)num(r, "rnr_retry", 7);
                a.max_rd_atomic = (uint8_t)num(r, "max_rd_atomic", 4);
                mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
            }
            break;
        case IBV_QPS_SQD:
            if (num(r, "notify", 0)) {
                a.en_sqd_async_notify = 1;
                mask |= IBV_QP_EN_SQD_ASYNC_NOTIFY;
            }
            break;
        default: break;
    }
    if (r->err[0]) return -1;
    /* A scenario may add or take away attributes: mask=-rq_psn,+timeout. */
    const char *m = arg(r, "mask");
    if (m) {
        static const struct { const char *n; int f; } flags[] = {
            {"access", IBV_QP_ACCESS_FLAGS}, {"pkey_index", IBV_QP_PKEY_INDEX},
            {"port", IBV_QP_PORT}, {"qkey", IBV_QP_QKEY}, {"av", IBV_QP_AV},
            {"mtu", IBV_QP_PATH_MTU}, {"timeout", IBV_QP_TIMEOUT}, {"retry_cnt", IBV_QP_RETRY_CNT},
            {"rnr_retry", IBV_QP_RNR_RETRY}, {"rq_psn", IBV_QP_RQ_PSN},
            {"max_rd_atomic", IBV_QP_MAX_QP_RD_ATOMIC}, {"min_rnr_timer", IBV_QP_MIN_RNR_TIMER},
            {"sq_psn", IBV_QP_SQ_PSN}, {"max_dest_rd_atomic", IBV_QP_MAX_DEST_RD_ATOMIC},
            {"dqpn", IBV_QP_DEST_QPN},
        };
        char tmp[256];
        snprintf(tmp, sizeof tmp, "%s", m);
        for (char *save = NULL, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            int found = 0;
            for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
                if (!strcmp(t + 1, flags[i].n)) {
                    mask = t[0] == '-' ? mask & ~flags[i].f : mask | flags[i].f;
                    found = 1;
                }
            if (!found || (t[0] != '-' && t[0] != '+')) return fail(r, EINVAL, "mask word %s", t);
        }
        if (arg(r, "timeout")) a.timeout = (uint8_t)num(r, "timeout", 0);
        if (arg(r, "min_rnr_timer")) a.min_rnr_timer = (uint8_t)num(r, "min_rnr_timer", 0);
        if (arg(r, "retry_cnt")) a.retry_cnt = (uint8_t)num(r, "retry_cnt", 0);
        if (arg(r, "rnr_retry")) a.rnr_retry = (uint8_t)num(r, "rnr_retry", 0);
        if (arg(r, "access") && parse_access(r, arg(r, "access"), &acc) == 0) a.qp_access_flags = acc;
    }
    int e = ibv_modify_qp(q->qp, &a, mask);
    if (e) return fail(r, e, "ibv_modify_qp to %s: %s", qp_state_name(a.qp_state), strerror(e));
    return 0;
}

static int cmd_ah(struct req *r) {
    const char *name = need(r, "name");
    const char *dest = need(r, "dest");
    if (r->err[0] || need_ctx(r)) return -1;
    struct ah *h = FREE_SLOT(ahs);
    if (!h || strlen(name) >= sizeof h->name) return fail(r, ENOMEM, "no slot for AH");
    struct ibv_ah_attr aa;
    if (fill_ah(r, dest, &aa)) return -1;
    struct ibv_ah *ah = ibv_create_ah(pd, &aa);
    if (!ah) return fail(r, errno, "ibv_create_ah: %s", strerror(errno));
    snprintf(h->name, sizeof h->name, "%s", name);
    h->ah = ah;
    return 0;
}

/* sge=MR:OFF:LEN,MR:OFF:LEN */
static int parse_sges(struct req *r, struct ibv_sge *sg, int *n) {
    const char *s = arg(r, "sge");
    *n = 0;
    if (!s || !strcmp(s, "none")) return 0;
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", s);
    for (char *save = NULL, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *c1 = strchr(t, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2 || *n >= MAX_SGE) return fail(r, EINVAL, "sge word %s: MR:OFF:LEN", t);
        *c1 = *c2 = 0;
        struct mr *m = FIND(mrs, t);
        uint64_t off, len;
        if (!m) return fail(r, ENOENT, "sge: no MR %s", t);
        if (!parse_u64(c1 + 1, &off) || !parse_u64(c2 + 1, &len)) return fail(r, EINVAL, "sge numbers");
        sg[*n].addr = (uintptr_t)m->buf + off;
        sg[*n].length = (uint32_t)len;
        sg[*n].lkey = m->mr->lkey;
        ++*n;
    }
    return 0;
}

static int cmd_post_recv(struct req *r) {
    struct qp *q = FIND(qps, need(r, "name"));
    if (r->err[0]) return -1;
    if (!q) return fail(r, ENOENT, "no such QP");
    struct ibv_sge sg[MAX_SGE];
    int n;
    if (parse_sges(r, sg, &n)) return -1;
    struct ibv_recv_wr wr = {.wr_id = num(r, "wr_id", 0), .sg_list = sg, .num_sge = n}, *bad;
    int e = ibv_post_recv(q->qp, &wr, &bad);
    if (e) return fail(r, e, "ibv_post_recv: %s", strerror(e));
    return 0;
}

static int parse_flags(struct req *r, unsigned *f) {
    const char *s = arg(r, "flags");
    *f = 0;
    if (!s) return 0;
    char tmp[128];
    snprintf(tmp, sizeof tmp, "%s", s);
    for (char *save = NULL, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "signaled")) *f |= IBV_SEND_SIGNALED;
        else if (!strcmp(t, "solicited")) *f |= IBV_SEND_SOLICITED;
        else if (!strcmp(t, "fence")) *f |= IBV_SEND_FENCE;
        else if (!strcmp(t, "inline")) *f |= IBV_SEND_INLINE;
        else return fail(r, EINVAL, "unknown send flag %s", t);
    }
    return 0;
}

/* ATOMIC_WRITE exists only in the extended post API (ibv_wr_atomic_write). */
static int post_atomic_write(struct req *r, struct qp *q, unsigned flags, struct ibv_sge *sg, int n) {
    if (!q->qpx) return fail(r, EINVAL, "atomic_write needs a QP created with ex=1");
    uint64_t v = num(r, "value", 0);
    uint8_t bytes[8];
    /* The 8 bytes go to the wire as they lie in memory; the value is
     * given big-endian so that the scenario reads as the wire does. */
    for (int i = 0; i < 8; i++) bytes[i] = (uint8_t)(v >> (56 - 8 * i));
    (void)sg;
    (void)n;
    ibv_wr_start(q->qpx);
    q->qpx->wr_id = num(r, "wr_id", 0);
    q->qpx->wr_flags = flags;
    ibv_wr_atomic_write(q->qpx, (uint32_t)num(r, "rkey", 0), num(r, "raddr", 0), bytes);
    int e = ibv_wr_complete(q->qpx);
    if (e) return fail(r, e, "ibv_wr_atomic_write: %s", strerror(e));
    return 0;
}

static int cmd_post_send(struct req *r) {
    struct qp *q = FIND(qps, need(r, "name"));
    const char *op = need(r, "op");
    if (r->err[0]) return -1;
    if (!q) return fail(r, ENOENT, "no such QP");
    struct ibv_sge sg[MAX_SGE];
    int n;
    unsigned flags;
    if (parse_sges(r, sg, &n) || parse_flags(r, &flags)) return -1;
    if (!strcmp(op, "atomic_write")) return post_atomic_write(r, q, flags, sg, n);
    struct ibv_send_wr wr, *bad;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = num(r, "wr_id", 0);
    wr.sg_list = sg;
    wr.num_sge = n;
    wr.send_flags = flags;
    static const struct { const char *n; enum ibv_wr_opcode o; } ops[] = {
        {"send", IBV_WR_SEND}, {"send_imm", IBV_WR_SEND_WITH_IMM}, {"send_inv", IBV_WR_SEND_WITH_INV},
        {"write", IBV_WR_RDMA_WRITE}, {"write_imm", IBV_WR_RDMA_WRITE_WITH_IMM},
        {"read", IBV_WR_RDMA_READ}, {"cas", IBV_WR_ATOMIC_CMP_AND_SWP},
        {"faa", IBV_WR_ATOMIC_FETCH_AND_ADD}, {"local_inv", IBV_WR_LOCAL_INV},
        {"bind_mw", IBV_WR_BIND_MW},
    };
    int found = 0;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(op, ops[i].n)) {
            wr.opcode = ops[i].o;
            found = 1;
        }
    if (!found) return fail(r, EINVAL, "op=%s", op);
    switch (wr.opcode) {
        case IBV_WR_SEND_WITH_IMM:
        case IBV_WR_RDMA_WRITE_WITH_IMM: wr.imm_data = htonl((uint32_t)num(r, "imm", 0)); break;
        case IBV_WR_SEND_WITH_INV: wr.invalidate_rkey = (uint32_t)num(r, "inv", 0); break;
        case IBV_WR_LOCAL_INV: wr.invalidate_rkey = (uint32_t)num(r, "inv", 0); break;
        default: break;
    }
    if (wr.opcode == IBV_WR_RDMA_WRITE || wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
        wr.opcode == IBV_WR_RDMA_READ) {
        wr.wr.rdma.remote_addr = num(r, "raddr", 0);
        wr.wr.rdma.rkey = (uint32_t)num(r, "rkey", 0);
    }
    if (wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
        wr.wr.atomic.remote_addr = num(r, "raddr", 0);
        wr.wr.atomic.rkey = (uint32_t)num(r, "rkey", 0);
        wr.wr.atomic.compare_add = wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? num(r, "cmp", 0)
                                                                          : num(r, "add", 0);
        wr.wr.atomic.swap = num(r, "swap", 0);
    }
    if (wr.opcode == IBV_WR_BIND_MW) {
        struct mw *w = FIND(mws, arg(r, "mw"));
        struct mr *m = FIND(mrs, arg(r, "mr"));
        unsigned acc;
        if (!w || !m) return fail(r, ENOENT, "bind_mw needs mw= and mr=");
        if (parse_access(r, arg(r, "access"), &acc)) return -1;
        /* A type-2 window gets the next key of its index (ibv_inc_rkey). */
        wr.bind_mw.mw = w->mw;
        wr.bind_mw.rkey = ibv_inc_rkey(w->mw->rkey);
        wr.bind_mw.bind_info.mr = m->mr;
        wr.bind_mw.bind_info.addr = (uintptr_t)m->buf + num(r, "off", 0);
        wr.bind_mw.bind_info.length = num(r, "len", m->size);
        wr.bind_mw.bind_info.mw_access_flags = acc;
    }
    if (q->type == IBV_QPT_UD) {
        struct ah *h = FIND(ahs, arg(r, "ah"));
        if (!h) return fail(r, ENOENT, "a UD send needs ah=");
        wr.wr.ud.ah = h->ah;
        wr.wr.ud.remote_qpn = (uint32_t)num(r, "dqpn", 0);
        wr.wr.ud.remote_qkey = (uint32_t)num(r, "qkey", 0);
    }
    if (r->err[0]) return -1;
    int e = ibv_post_send(q->qp, &wr, &bad);
    if (e) return fail(r, e, "ibv_post_send: %s", strerror(e));
    if (wr.opcode == IBV_WR_BIND_MW) {
        struct mw *w = FIND(mws, arg(r, "mw"));
        put(",\"rkey\":%u", wr.bind_mw.rkey);
        (void)w;
    }
    return 0;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static struct qp *qp_of_num(uint32_t qpn) {
    for (int i = 0; i < MAX_OBJ; i++)
        if (qps[i].name[0] && qps[i].qp->qp_num == qpn) return &qps[i];
    return NULL;
}

static void put_wc(const struct ibv_wc *wc, const char *cq, int *first) {
    struct qp *q = qp_of_num(wc->qp_num);
    put("%s{\"cq\":\"%s\",\"wr_id\":%llu,\"status\":\"%s\",\"opcode\":\"%s\",\"vendor_err\":%u,"
        "\"byte_len\":%u,\"imm_data\":%u,\"qp_num\":%u,\"qp\":\"%s\",\"src_qp\":%u,\"wc_flags\":%u,"
        "\"pkey_index\":%u,\"slid\":%u,\"sl\":%u,\"dlid_path_bits\":%u}",
        *first ? "" : ",", cq, (unsigned long long)wc->wr_id, wc_status_name(wc->status),
        wc->status == IBV_WC_SUCCESS || (wc->opcode & IBV_WC_RECV) ? wc_opcode_name(wc->opcode)
                                                                  : "(undefined)",
        wc->vendor_err, wc->byte_len,
        (wc->wc_flags & IBV_WC_WITH_IMM) ? ntohl(wc->imm_data) : wc->imm_data, wc->qp_num,
        q ? q->name : "", wc->src_qp, wc->wc_flags, wc->pkey_index, wc->slid, wc->sl,
        wc->dlid_path_bits);
    *first = 0;
}

/* Completions of both CQs until `min` arrived or wait_ms passed. A failed
 * completion's opcode is undefined (ibv_poll_cq(3)); it is reported as such
 * unless it is a receive. */
static int cmd_poll(struct req *r) {
    double deadline = now_ms() + (double)num(r, "wait_ms", 0);
    uint64_t min = num(r, "min", 0), got = 0;
    int first = 1;
    if (r->err[0] || need_ctx(r)) return -1;
    put(",\"wc\":[");
    for (;;) {
        struct ibv_wc wc[16];
        int n = ibv_poll_cq(scq, 16, wc);
        for (int i = 0; i < n; i++) put_wc(&wc[i], "send", &first);
        got += n > 0 ? (uint64_t)n : 0;
        n = ibv_poll_cq(rcq, 16, wc);
        for (int i = 0; i < n; i++) put_wc(&wc[i], "recv", &first);
        got += n > 0 ? (uint64_t)n : 0;
        if ((min && got >= min) || now_ms() >= deadline) break;
        if (n <= 0) usleep(200);
    }
    put("]");
    return 0;
}

static const char *event_name(enum ibv_event_type t) { return ibv_event_type_str(t); }

static int cmd_events(struct req *r) {
    double deadline = now_ms() + (double)num(r, "wait_ms", 0);
    uint64_t min = num(r, "min", 0), got = 0;
    int first = 1;
    if (r->err[0] || need_ctx(r)) return -1;
    put(",\"events\":[");
    for (;;) {
        struct pollfd p = {.fd = ctx->async_fd, .events = POLLIN};
        double left = deadline - now_ms();
        if ((min && got >= min) || (left <= 0 && got >= min)) {
            /* one last look without waiting */
            if (poll(&p, 1, 0) <= 0) break;
        } else if (poll(&p, 1, left > 0 ? (int)left + 1 : 0) <= 0) {
            if (now_ms() >= deadline) break;
            continue;
        }
        struct ibv_async_event ev;
        if (ibv_get_async_event(ctx, &ev)) {
            if (now_ms() >= deadline) break;
            continue;
        }
        const char *obj = "";
        switch (ev.event_type) {
            case IBV_EVENT_QP_FATAL:
            case IBV_EVENT_QP_REQ_ERR:
            case IBV_EVENT_QP_ACCESS_ERR:
            case IBV_EVENT_COMM_EST:
            case IBV_EVENT_SQ_DRAINED:
            case IBV_EVENT_PATH_MIG:
            case IBV_EVENT_PATH_MIG_ERR:
            case IBV_EVENT_QP_LAST_WQE_REACHED: {
                struct qp *q = qp_of_num(ev.element.qp->qp_num);
                obj = q ? q->name : "?";
                break;
            }
            default: break;
        }
        put("%s{\"type\":\"%s\",\"obj\":\"%s\"}", first ? "" : ",", event_name(ev.event_type), obj);
        first = 0;
        ++got;
        ibv_ack_async_event(&ev);
    }
    put("]");
    return 0;
}

static int cmd_query(struct req *r) {
    struct qp *q = FIND(qps, need(r, "name"));
    if (r->err[0]) return -1;
    if (!q) return fail(r, ENOENT, "no such QP");
    struct ibv_qp_attr a;
    struct ibv_qp_init_attr ia;
    memset(&a, 0, sizeof a);
    int e = ibv_query_qp(q->qp, &a, 0x1fffff, &ia);
    if (e) return fail(r, e, "ibv_query_qp: %s", strerror(e));
    put(",\"qp_state\":\"%s\",\"cur_qp_state\":\"%s\",\"path_mtu\":%d,\"qkey\":%u,\"rq_psn\":%u,"
        "\"sq_psn\":%u,\"dest_qp_num\":%u,\"qp_access_flags\":%u,\"pkey_index\":%u,"
        "\"sq_draining\":%u,\"max_rd_atomic\":%u,\"max_dest_rd_atomic\":%u,\"min_rnr_timer\":%u,"
        "\"port_num\":%u,\"timeout\":%u,\"retry_cnt\":%u,\"rnr_retry\":%u,\"en_sqd_async_notify\":%u,"
        "\"cap\":{\"max_send_wr\":%u,\"max_recv_wr\":%u,\"max_send_sge\":%u,\"max_recv_sge\":%u,"
        "\"max_inline_data\":%u},\"sq_sig_all\":%d",
        qp_state_name(a.qp_state), qp_state_name(a.cur_qp_state), mtu_bytes(a.path_mtu), a.qkey,
        a.rq_psn, a.sq_psn, a.dest_qp_num, a.qp_access_flags, a.pkey_index, a.sq_draining,
        a.max_rd_atomic, a.max_dest_rd_atomic, a.min_rnr_timer, a.port_num, a.timeout, a.retry_cnt,
        a.rnr_retry, a.en_sqd_async_notify, a.cap.max_send_wr, a.cap.max_recv_wr, a.cap.max_send_sge,
        a.cap.max_recv_sge, a.cap.max_inline_data, ia.sq_sig_all);
    return 0;
}

static int cmd_read(struct req *r) {
    struct mr *m = FIND(mrs, need(r, "name"));
    uint64_t off = num(r, "off", 0), len = num(r, "len", 0);
    if (r->err[0]) return -1;
    if (!m) return fail(r, ENOENT, "no such MR");
    if (off > m->size || len > m->size - off) return fail(r, EINVAL, "beyond the MR");
    put(",\"hex\":");
    put_hex(m->buf + off, len);
    return 0;
}

static int cmd_write(struct req *r) {
    struct mr *m = FIND(mrs, need(r, "name"));
    const char *hex = need(r, "hex");
    uint64_t off = num(r, "off", 0);
    if (r->err[0]) return -1;
    if (!m) return fail(r, ENOENT, "no such MR");
    size_t len = strlen(hex) / 2;
    if (off > m->size || len > m->size - off) return fail(r, EINVAL, "beyond the MR");
    for (size_t i = 0; i < len; i++) {
        unsigned b;
        if (sscanf(hex + 2 * i, "%2x", &b) != 1) return fail(r, EINVAL, "bad hex");
        m->buf[off + i] = (uint8_t)b;
    }
    return 0;
}

static int cmd_mw(struct req *r) {
    const char *name = need(r, "name");
    if (r->err[0] || need_ctx(r)) return -1;
    struct mw *w = FREE_SLOT(mws);
    if (!w || strlen(name) >= sizeof w->name) return fail(r, ENOMEM, "no slot for MW");
    struct ibv_mw *mw = ibv_alloc_mw(pd, num(r, "type", 2) == 1 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2);
    if (!mw) return fail(r, errno, "ibv_alloc_mw: %s", strerror(errno));
    snprintf(w->name, sizeof w->name, "%s", name);
    w->mw = mw;
    put(",\"rkey\":%u", mw->rkey);
    return 0;
}

static int cmd_bind(struct req *r) {
    struct mw *w = FIND(mws, need(r, "name"));
    struct qp *q = FIND(qps, need(r, "qp"));
    struct mr *m = FIND(mrs, need(r, "mr"));
    unsigned acc;
    if (r->err[0]) return -1;
    if (!w || !q || !m) return fail(r, ENOENT, "bind needs name=, qp= and mr=");
    if (parse_access(r, arg(r, "access"), &acc)) return -1;
    struct ibv_mw_bind b;
    memset(&b, 0, sizeof b);
    b.wr_id = num(r, "wr_id", 0);
    b.send_flags = IBV_SEND_SIGNALED;
    b.bind_info.mr = m->mr;
    b.bind_info.addr = (uintptr_t)m->buf + num(r, "off", 0);
    b.bind_info.length = num(r, "len", m->size);
    b.bind_info.mw_access_flags = acc;
    int e = ibv_bind_mw(q->qp, w->mw, &b);
    if (e) return fail(r, e, "ibv_bind_mw: %s", strerror(e));
    put(",\"rkey\":%u", w->mw->rkey);
    return 0;
}

static int cmd_dealloc_mw(struct req *r) {
    struct mw *w = FIND(mws, need(r, "name"));
    if (!w) return fail(r, ENOENT, "no such MW");
    int e = ibv_dealloc_mw(w->mw);
    if (e) return fail(r, e, "ibv_dealloc_mw: %s", strerror(e));
    memset(w, 0, sizeof *w);
    return 0;
}

/* ------------------------------------------------------------------ */

static void handle(char *line, int fd) {
    struct req r;
    memset(&r, 0, sizeof r);
    char *save = NULL, *cmd = strtok_r(line, " \t\r", &save);
    out_len = 0;
    put("{\"ok\":");
    size_t ok_at = out_len;
    put("true");
    if (!cmd) {
        put(",\"cmd\":\"\"}\n");
    } else {
        for (char *w = strtok_r(NULL, " \t\r", &save); w && r.n < MAX_WORDS;
             w = strtok_r(NULL, " \t\r", &save)) {
            char *eq = strchr(w, '=');
            r.key[r.n] = w;
            r.val[r.n] = eq ? (*eq = 0, eq + 1) : (char *)"";
            r.n++;
        }
        static const struct { const char *n; int (*f)(struct req *); } cmds[] = {
            {"open", cmd_open}, {"mr", cmd_mr}, {"dereg", cmd_dereg}, {"qp", cmd_qp},
            {"modify", cmd_modify}, {"ah", cmd_ah}, {"post_recv", cmd_post_recv},
            {"post_send", cmd_post_send}, {"poll", cmd_poll}, {"events", cmd_events},
            {"query", cmd_query}, {"read", cmd_read}, {"write", cmd_write}, {"mw", cmd_mw},
            {"bind", cmd_bind}, {"dealloc_mw", cmd_dealloc_mw},
        };
        int rc = -2;
        errno = 0;
        if (!strcmp(cmd, "close")) {
            destroy_all();
            rc = 0;
        } else if (!strcmp(cmd, "ping")) {
            rc = 0;
        }
        for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
            if (!strcmp(cmd, cmds[i].n)) rc = cmds[i].f(&r);
        if (rc == -2) rc = fail(&r, EINVAL, "unknown command %s", cmd);
        if (rc || r.err[0]) {
            /* Replace what was said so far with the error. */
            int e = errno ? errno : EINVAL;
            out_len = ok_at;
            put("false,\"errno\":%d,\"error\":\"", e);
            for (const char *c = r.err; *c; c++) put(*c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
            put("\"");
        }
        put("}\n");
    }
    for (size_t done = 0; done < out_len;) {
        ssize_t n = write(fd, out + done, out_len - done);
        if (n <= 0) return;
        done += (size_t)n;
    }
}

static void serve(int fd) {
    char buf[8192];
    size_t have = 0;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
        if (n <= 0) return;
        have += (size_t)n;
        char *nl;
        while ((nl = memchr(buf, '\n', have))) {
            *nl = 0;
            handle(buf, fd);
            size_t used = (size_t)(nl + 1 - buf);
            memmove(buf, nl + 1, have - used);
            have -= used;
        }
        if (have == sizeof buf - 1) return;  /* a line too long: give up on the peer */
    }
}

int main(int argc, char **argv) {
    int port = 18530, once = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-p") && i + 1 < argc) port = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-1")) once = 1;
        else {
            fprintf(stderr, "usage: simnic-target [-p PORT] [-1]\n");
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 1)) {
        perror("simnic-target: listen");
        return 1;
    }
    printf("simnic-target: listening on port %d\n", port);
    do {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0) continue;
        serve(fd);
        close(fd);
        destroy_all();
    } while (!once);
    return 0;
}
