/* simnic-workload: a seeded verbs workload with byte-for-byte checks on both
 * sides (issue 10 §3 and §6, issue 12 §1).
 *
 * A plain libibverbs program (no simnic header or library): it runs the same
 * against kernel rxe in a rig VM as against a simnic device, and builds there
 * from this one file (gcc -O2 simnic-workload.c -libverbs). Two processes
 * talk over TCP as ibv_rc_pingpong does: the server (no address given) serves
 * cases until the client says it is done; the client draws each case from
 * its seed, sends it, and is the requester of every message, the server the
 * responder.
 *
 *   server:  simnic-workload [-d DEV] [-g GIDX] [-i PORT] [-p TCP]
 *   client:  simnic-workload [-d DEV] [-g GIDX] [-i PORT] [-p TCP]
 *                            [--seed N | --seeds A-B] [--integrity] ... SERVER
 *
 * A case: a QP type (RC, UC, UD), a path MTU, 1-4 QPs, and per QP a list of
 * messages (SEND, SEND with immediate, WRITE, WRITE with immediate, READ,
 * compare-and-swap, fetch-and-add; 0 B to 128 KiB, UD within the MTU), each
 * with 1-4 SGEs scattered with gaps, posted in chains of 1-64 WQEs on a send
 * queue 1-1024 deep. Everything follows from the seed: message i of QP q, its
 * opcode, size, SGEs, immediate, atomic operands and every byte of its
 * payload are functions of (seed, q, i) alone, so that a message keeps its
 * shape when the shrinker drops its neighbours.
 *
 * Checks: every completion on both sides (status, opcode, byte_len,
 * immediate, source QP for UD, wr_id in posting order); the receiver checks
 * every SEND's bytes in the buffer it landed in; the requester checks READ
 * data and atomic results; at the end each side compares all its registered
 * memory with the image it must hold (write targets, atomic words, READ
 * sources left alone, the gaps between SGEs and regions untouched), and the
 * server tells the client what it found.
 *
 * --loss-ok (issue 12 §1, a wire that drops frames): on UC and UD a message
 * may be missing, but nothing else may be wrong: every message that arrived
 * is exactly one of those sent (matched by its bytes, never twice), a WRITE's
 * target holds for every byte either its old or its new value. RC stays
 * strict: everything arrives exactly once.
 *
 * See testbench/workload/README.md for the options, the shrinker and the
 * results line.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_QPS 4
#define MAX_SGE 4
#define MAX_BATCH 64
#define MAX_DEPTH 1024
#define MAX_MSGS 1024          /* per QP */
#define MAX_SIZE (128u << 10)
#define UD_GRH 40
#define UD_QKEY 0x11111111u
#define LOSS_OK 1u              /* UC, UD: a message may be lost */
#define DUP_OK 2u               /* UC, UD: a message whose frame the wire duplicated arrives twice */
#define DEFAULT_BUDGET (1u << 20) /* payload bytes per case, all QPs */

/* ------------------------------------------------------------------------ */
/* Operations */

enum op { OP_SEND, OP_SEND_IMM, OP_WRITE, OP_WRITE_IMM, OP_READ, OP_CAS, OP_FAA, OP_COUNT };
static const char *const op_name[OP_COUNT] = {"send", "send_imm", "write", "write_imm",
                                              "read", "cas", "faa"};
#define ALL_OPS ((1u << OP_COUNT) - 1)
#define BIT(o) (1u << (o))
static const uint32_t ops_of_type[3] = {
    ALL_OPS,                                                           /* RC */
    BIT(OP_SEND) | BIT(OP_SEND_IMM) | BIT(OP_WRITE) | BIT(OP_WRITE_IMM), /* UC */
    BIT(OP_SEND) | BIT(OP_SEND_IMM),                                   /* UD */
};
enum qpt { T_RC, T_UC, T_UD };
static const char *const qpt_name[3] = {"RC", "UC", "UD"};

static int op_has_payload(int op) { return op <= OP_WRITE_IMM; }
static int op_uses_recv(int op) { return op == OP_SEND || op == OP_SEND_IMM || op == OP_WRITE_IMM; }
static int op_writes_target(int op) { return op == OP_WRITE || op == OP_WRITE_IMM; }
static int op_has_imm(int op) { return op == OP_SEND_IMM || op == OP_WRITE_IMM; }
static int op_atomic(int op) { return op == OP_CAS || op == OP_FAA; }

/* ------------------------------------------------------------------------ */
/* Deterministic numbers: splitmix64's finaliser over a key; byte j of the
 * stream `key` is byte j%8 of mix(key + j/8), so any byte of any payload or
 * background can be computed without the ones before it. */

static uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
/* Tags that separate the streams drawn from one seed. */
enum tag { K_PARAMS = 1, K_MSG, K_PAYLOAD, K_READSRC, K_BG_CLIENT, K_BG_SERVER, K_ATOMIC, K_RECV,
           K_POST, K_PSN, K_CORRUPT };
static uint64_t key4(uint64_t seed, uint64_t qp, uint64_t idx, uint64_t tag) {
    return mix64(seed ^ mix64(qp * 0x100000001b3ull ^ mix64(idx ^ mix64(tag))));
}
static uint8_t stream_byte(uint64_t key, uint64_t j) {
    return (uint8_t)(mix64(key + (j >> 3)) >> ((j & 7) * 8));
}
static void stream_fill(uint8_t *p, size_t n, uint64_t key, uint64_t off) {
    for (size_t j = 0; j < n; j++) p[j] = stream_byte(key, off + j);
}

/* A small generator for drawing a case's parameters. */
struct rng { uint64_t s; };
static uint64_t rnext(struct rng *r) { return mix64(r->s++); }
static uint32_t rbelow(struct rng *r, uint32_t n) { return n ? (uint32_t)(rnext(r) % n) : 0; }
/* Log-uniform in [lo, hi]. */
static uint32_t rlog(struct rng *r, uint32_t lo, uint32_t hi) {
    int bits = 0;
    while ((hi >> bits) > 1) bits++;
    uint32_t e = rbelow(r, (uint32_t)bits + 1);
    uint32_t v = (1u << e) + rbelow(r, 1u << e);
    return v < lo ? lo : v > hi ? hi : v;
}

/* ------------------------------------------------------------------------ */
/* A case: what the client sends the server. Both sides derive every message
 * and the memory layout from it. Little-endian hosts only (x86 and the VMs). */

struct wl_case {
    uint64_t seed;
    uint32_t integrity;  /* 1: the fixed integrity list instead of drawn messages */
    uint32_t qp_type;    /* enum qpt */
    uint32_t mtu;        /* path MTU in bytes */
    uint32_t nqps;
    uint32_t msgs;       /* messages per QP */
    uint32_t batch;      /* at most this many WQEs per post */
    uint32_t max_sge;
    uint32_t sq_depth;
    uint32_t max_size;
    uint32_t op_mask;    /* the drawn mix */
    /* The shrinker's filters: which of the drawn messages run. */
    int32_t qp_only;     /* -1: all QPs */
    uint32_t from, count;
    uint32_t ops_filter;
    uint32_t size_cap;
    uint32_t loss_ok;    /* LOSS_OK | DUP_OK */
    int32_t corrupt;     /* inject: message index on the first QP whose data the client spoils, -1 none */
    uint32_t max_rd_atomic;
    uint32_t atomics;    /* both devices support atomics */
    uint32_t no_empty_rdma; /* READ and WRITE of 0 bytes are drawn as 1 byte */
} __attribute__((packed));

struct msg {
    int op;
    uint32_t size;
    int nsge;            /* SGEs on the requester (0 allowed for 0 bytes) */
    uint32_t imm;
    uint64_t cmp, swap;  /* CAS: compare and swap; FAA: swap is the addend */
    uint64_t orig;       /* the atomic word's initial value */
    int inl;             /* post inline if the QP allows */
};

/* The integrity set: every operation at sizes across the MTU, 1-4 SGEs. */
static uint32_t integ_sizes(uint32_t mtu, int k) {
    const uint32_t s[] = {0, 1, 8, 63, mtu - 1, mtu, mtu + 1, 2 * mtu + 7, 3 * mtu, 16384 + 5, 65536, MAX_SIZE};
    return s[k];
}
#define INTEG_NSIZES 12
static uint32_t integrity_len(int qpt) {
    if (qpt == T_UD) return 2 * 6;
    if (qpt == T_UC) return 4 * INTEG_NSIZES;
    return 5 * INTEG_NSIZES + 6;
}
static void integrity_msg(const struct wl_case *c, uint32_t i, struct msg *m) {
    if (c->qp_type == T_UD) {
        const uint32_t s[] = {0, 1, 63, c->mtu / 2 + 3, c->mtu - 1, c->mtu};
        m->op = i < 6 ? OP_SEND : OP_SEND_IMM;
        m->size = s[i % 6];
    } else if (i < 5 * INTEG_NSIZES) {
        static const int ops[] = {OP_SEND, OP_SEND_IMM, OP_WRITE, OP_WRITE_IMM, OP_READ};
        m->op = ops[i / INTEG_NSIZES];
        m->size = integ_sizes(c->mtu, (int)(i % INTEG_NSIZES));
    } else {
        m->op = (i - 5 * INTEG_NSIZES) % 2 ? OP_FAA : OP_CAS;
        m->size = 8;
    }
    m->nsge = op_atomic(m->op) ? 1 : 1 + (int)(i % (uint32_t)c->max_sge);
}

/* Message i of QP q, as drawn from the seed (or the integrity list). */
static void msg_spec(const struct wl_case *c, uint32_t q, uint32_t i, struct msg *m) {
    struct rng r = {key4(c->seed, q, i, K_MSG)};
    memset(m, 0, sizeof *m);
    if (c->integrity) {
        integrity_msg(c, i, m);
    } else {
        uint32_t mask = c->op_mask & ops_of_type[c->qp_type];
        if (!c->atomics) mask &= ~(BIT(OP_CAS) | BIT(OP_FAA));
        if (!mask) mask = BIT(OP_SEND);
        int n = __builtin_popcount(mask), k = (int)rbelow(&r, (uint32_t)n);
        for (int o = 0; o < OP_COUNT; o++)
            if ((mask & BIT(o)) && k-- == 0) { m->op = o; break; }
        uint32_t roll = rbelow(&r, 100), size;
        if (roll < 8) {
            size = rbelow(&r, 2);
        } else if (roll < 30) {
            /* Around a multiple of the MTU: the segmentation's edges. */
            size = (rbelow(&r, 4)) * c->mtu + rbelow(&r, 3);
            size = size ? size - 1 : 0;
        } else {
            size = rlog(&r, 1, c->max_size);
        }
        if (size > c->max_size) size = c->max_size;
        if (c->qp_type == T_UD && size > c->mtu) size = c->mtu;
        m->size = op_atomic(m->op) ? 8 : size;
        m->nsge = 1 + (int)rbelow(&r, c->max_sge);
    }
    if (!op_atomic(m->op) && m->size > c->size_cap) m->size = c->size_cap;
    /* --no-empty-rdma: a responder that cannot serve a READ resent after a
     * zero-length READ or WRITE (kernel rxe 6.12, docs/rxe-wire-rules.md
     * #rxe-read-replay) still gets every other case of the seed. */
    if (c->no_empty_rdma && m->size == 0 && (op_writes_target(m->op) || m->op == OP_READ)) m->size = 1;
    if (op_atomic(m->op)) m->nsge = 1;
    if (m->size == 0) m->nsge = (int)(key4(c->seed, q, i, K_RECV) & 1); /* 0 SGEs or one of 0 bytes */
    if ((uint32_t)m->nsge > m->size && m->size) m->nsge = (int)m->size;
    m->imm = (uint32_t)key4(c->seed, q, i, K_ATOMIC + 100);
    m->orig = key4(c->seed, q, i, K_ATOMIC);
    uint64_t a = key4(c->seed, q, i, K_ATOMIC + 1);
    if (m->op == OP_CAS) {
        m->cmp = (a & 1) ? m->orig : m->orig ^ (a | 1); /* half of them miss */
        m->swap = key4(c->seed, q, i, K_ATOMIC + 2);
    } else {
        m->swap = a;
    }
    m->inl = (int)((key4(c->seed, q, i, K_ATOMIC + 3) & 3) == 0);
}

static int msg_runs(const struct wl_case *c, uint32_t q, uint32_t i, const struct msg *m) {
    if (c->qp_only >= 0 && (int32_t)q != c->qp_only) return 0;
    if (i < c->from || i - c->from >= c->count) return 0;
    return (c->ops_filter & BIT(m->op)) != 0;
}

/* ------------------------------------------------------------------------ */
/* Layout. Each side's MR per QP holds the regions of its messages, each at a
 * seed-drawn misalignment and gap; a message's local buffer is split into
 * its SGEs with gaps between them. Both sides compute both layouts. */

struct piece { uint64_t off; uint32_t len; };
struct region {               /* a message's buffer on one side */
    uint64_t off;             /* start in the MR */
    uint32_t span;            /* bytes from off to the end of its last piece */
    int n;
    struct piece p[MAX_SGE];
};

static void split(struct region *g, uint64_t at, uint32_t size, int n, uint64_t key) {
    g->off = at;
    g->n = n;
    uint32_t cut[MAX_SGE + 1];
    cut[0] = 0;
    cut[n > 0 ? n : 0] = size;
    for (int k = 1; k < n; k++) cut[k] = (uint32_t)(mix64(key + (uint64_t)k) % (size + 1ull));
    /* insertion sort of the inner cuts */
    for (int a = 1; a < n; a++)
        for (int b = a; b > 1 && cut[b] < cut[b - 1]; b--) {
            uint32_t t = cut[b]; cut[b] = cut[b - 1]; cut[b - 1] = t;
        }
    uint64_t o = at;
    for (int k = 0; k < n; k++) {
        uint32_t gap = k ? 1 + (uint32_t)(mix64(key ^ (0x5a5a + (uint64_t)k)) % 16) : 0;
        o += gap;
        g->p[k].off = o;
        g->p[k].len = cut[k + 1] - cut[k];
        o += g->p[k].len;
    }
    g->span = (uint32_t)(o - at);
}

struct plan_msg {
    uint32_t idx;             /* message index i */
    struct msg m;
    struct region local;      /* the client's buffer (source, READ target, atomic result) */
    uint64_t remote;          /* the server's target: write target, READ source, atomic word */
    int recv;                 /* its receive WQE's number on the server, -1 none */
};
struct plan_recv {
    struct region buf;        /* the server's receive buffer (UD: the GRH first) */
    uint32_t cap;             /* payload capacity */
};
struct plan_qp {
    uint32_t n, nrecv;
    struct plan_msg *msg;
    struct plan_recv *rq;
    uint64_t client_len, server_len;
    uint32_t max_recv_size;
};

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

static void plan_build(const struct wl_case *c, uint32_t q, struct plan_qp *p) {
    memset(p, 0, sizeof *p);
    p->msg = calloc(c->msgs + 1, sizeof *p->msg);
    p->rq = calloc(c->msgs + 1, sizeof *p->rq);
    for (uint32_t i = 0; i < c->msgs; i++) {
        struct msg m;
        msg_spec(c, q, i, &m);
        if (!msg_runs(c, q, i, &m)) continue;
        struct plan_msg *pm = &p->msg[p->n++];
        pm->idx = i;
        pm->m = m;
        pm->recv = op_uses_recv(m.op) ? (int)p->nrecv++ : -1;
        if (m.op == OP_SEND || m.op == OP_SEND_IMM)
            if (m.size > p->max_recv_size) p->max_recv_size = m.size;
    }
    /* UC acknowledges nothing: a WRITE's completion says it left, not that
     * it landed. A last SEND with immediate on each UC QP tells the server
     * that all before it has arrived (or, under loss, is gone). */
    if (c->qp_type == T_UC && p->n > 0) {
        struct plan_msg *pm = &p->msg[p->n++];
        pm->idx = c->msgs;
        pm->m.op = OP_SEND_IMM;
        pm->m.imm = (uint32_t)key4(c->seed, q, pm->idx, K_ATOMIC + 100);
        pm->recv = (int)p->nrecv++;
    }
    uint64_t co = 64, so = 64;
    uint32_t r = 0;
    for (uint32_t k = 0; k < p->n; k++) {
        struct plan_msg *pm = &p->msg[k];
        uint64_t key = key4(c->seed, q, pm->idx, K_MSG + 50);
        uint32_t mis = (uint32_t)(key % 61);
        if (op_atomic(pm->m.op)) {
            co = align_up(co + mis, 8);
            split(&pm->local, co, 8, 1, key);
            co += 8;
            so = align_up(so + mis, 8);
            pm->remote = so;
            so += 8;
        } else {
            split(&pm->local, co + mis, pm->m.size, pm->m.nsge, key);
            co = pm->local.off + pm->local.span;
            if (!op_uses_recv(pm->m.op) || pm->m.op == OP_WRITE_IMM) {
                pm->remote = so + mis;
                so = pm->remote + pm->m.size;
            }
        }
        if (pm->recv >= 0) {
            struct plan_recv *pr = &p->rq[r++];
            uint64_t rk = key4(c->seed, q, pm->idx, K_RECV);
            uint32_t want = pm->m.op == OP_WRITE_IMM ? 0 : pm->m.size;
            /* Under loss a receive may take any message: all fit. */
            if (c->loss_ok && c->qp_type != T_RC) want = p->max_recv_size;
            pr->cap = want + (uint32_t)(rk % 33);
            if (c->qp_type == T_UD && pr->cap > c->mtu) pr->cap = c->mtu > want ? c->mtu : want;
            int n = 1 + (int)((rk >> 8) % c->max_sge);
            uint32_t total = pr->cap + (c->qp_type == T_UD ? UD_GRH : 0);
            if ((uint32_t)n > total) n = total ? (int)total : 1;
            split(&pr->buf, so + (rk >> 16) % 61, total, n, rk);
            if (c->qp_type == T_UD && pr->buf.p[0].len < UD_GRH) {
                /* The GRH must land in the first SGE (as rxe scatters it). */
                split(&pr->buf, pr->buf.off, total, 1, rk);
            }
            so = pr->buf.off + pr->buf.span;
        }
    }
    p->client_len = align_up(co + 64, 64);
    p->server_len = align_up(so + 64, 64);
}

static void plan_free(struct plan_qp *p) { free(p->msg); free(p->rq); }

/* ------------------------------------------------------------------------ */
/* Failures: the first one is kept with its context. */

struct verdict {
    int failed;
    char first[512];
    uint64_t msgs, bytes, lost, dups, completions;
};
static void failf(struct verdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void failf(struct verdict *v, const char *fmt, ...) {
    if (v->failed++) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->first, sizeof v->first, fmt, ap);
    va_end(ap);
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "simnic-workload: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
/* Pollers back off to sleeping when idle: the device may share the CPUs. */
static void idle(unsigned *spins) {
    if (++*spins > 64) usleep(*spins > 4096 ? 1000 : 50);
}

/* ------------------------------------------------------------------------ */
/* The TCP side channel: framed messages. */

enum { M_HELLO = 1, M_CASE, M_QPINFO, M_READY, M_DONE, M_RESULT, M_END };

static int xfer_try(int fd, void *buf, size_t len, int sending) {
    uint8_t *p = buf;
    while (len) {
        ssize_t n = sending ? write(fd, p, len) : read(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return n ? -errno : -EPIPE;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}
static void xfer(int fd, void *buf, size_t len, int sending) {
    int e = xfer_try(fd, buf, len, sending);
    if (e) die("the TCP side channel failed (%s)", e == -EPIPE ? "peer closed" : strerror(-e));
}
static void send_msg(int fd, uint32_t type, const void *p, uint32_t len) {
    uint32_t h[2] = {type, len};
    xfer(fd, h, sizeof h, 1);
    if (len) xfer(fd, (void *)p, len, 1);
}
/* Receives a message of `type` into p (at most cap bytes); returns its length. */
static uint32_t recv_msg(int fd, uint32_t type, void *p, uint32_t cap) {
    uint32_t h[2];
    xfer(fd, h, sizeof h, 0);
    if (h[0] != type || h[1] > cap) die("side channel: got message %u of %u bytes, wanted %u", h[0], h[1], type);
    if (h[1]) xfer(fd, p, h[1], 0);
    return h[1];
}

/* Connects and reads the server's HELLO into `hello`. A forwarded port (the
 * rig's, QEMU's user network) accepts and then closes while nothing listens
 * behind it yet: that counts as not yet listening. */
static int tcp_connect(const char *host, int port, void *hello, uint32_t len) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1) die("bad server address %s", host);
    for (int i = 0; i < 300; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
        uint32_t h[2];
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 && !xfer_try(fd, h, sizeof h, 0)) {
            if (h[0] != M_HELLO || h[1] != len) die("%s:%d is not a simnic-workload server", host, port);
            xfer(fd, hello, len, 0);
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            return fd;
        }
        close(fd);
        usleep(100000);
    }
    die("cannot connect to %s:%d", host, port);
}
static int tcp_accept(int port) {
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 1)) die("cannot listen on TCP %d", port);
    int fd = accept(ls, NULL, NULL);
    close(ls);
    if (fd < 0) die("accept failed");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* ------------------------------------------------------------------------ */
/* The device. */

struct caps {
    uint32_t mtu, max_qp_wr, max_sge, max_rd_atom, atomics, max_inline;
} __attribute__((packed));

struct dev {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    int port, gidx;
    union ibv_gid gid;
    struct caps caps;
};

static uint32_t mtu_bytes(enum ibv_mtu m) { return 128u << m; }
static enum ibv_mtu mtu_enum(uint32_t b) {
    switch (b) {
    case 256: return IBV_MTU_256;
    case 512: return IBV_MTU_512;
    case 1024: return IBV_MTU_1024;
    case 2048: return IBV_MTU_2048;
    default: return IBV_MTU_4096;
    }
}

static void dev_open(struct dev *d, const char *name, int port, int gidx) {
    int n;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (!list || !n) die("no RDMA device (%s)", strerror(errno));
    struct ibv_device *dv = NULL;
    for (int i = 0; i < n; i++)
        if (!name || !strcmp(ibv_get_device_name(list[i]), name)) { dv = list[i]; break; }
    if (!dv) die("no RDMA device %s", name);
    d->ctx = ibv_open_device(dv);
    ibv_free_device_list(list);
    if (!d->ctx) die("cannot open the device");
    d->pd = ibv_alloc_pd(d->ctx);
    if (!d->pd) die("cannot allocate a PD");
    d->port = port;
    d->gidx = gidx;
    if (ibv_query_gid(d->ctx, (uint8_t)port, gidx, &d->gid)) die("cannot read GID %d", gidx);
    struct ibv_device_attr a;
    struct ibv_port_attr pa;
    if (ibv_query_device(d->ctx, &a) || ibv_query_port(d->ctx, (uint8_t)port, &pa))
        die("cannot query the device");
    d->caps.mtu = mtu_bytes(pa.active_mtu);
    d->caps.max_qp_wr = (uint32_t)a.max_qp_wr;
    d->caps.max_sge = (uint32_t)a.max_sge;
    d->caps.max_rd_atom = (uint32_t)(a.max_qp_rd_atom < a.max_qp_init_rd_atom ? a.max_qp_rd_atom
                                                                              : a.max_qp_init_rd_atom);
    d->caps.atomics = a.atomic_cap != IBV_ATOMIC_NONE;
}

/* What each side tells the other about one QP. */
struct qpinfo {
    uint32_t qpn, psn, rkey, status;
    uint64_t addr;
    uint8_t gid[16];
} __attribute__((packed));

struct side_qp {
    struct ibv_cq *scq, *rcq;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    struct ibv_ah *ah;
    uint8_t *buf;
    uint64_t len;
    uint32_t psn, max_inline;
};

static int qp_create(struct dev *d, const struct wl_case *c, struct side_qp *s, uint32_t rq_depth,
                     uint64_t len, uint64_t bgkey, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    s->len = len;
    if (posix_memalign((void **)&s->buf, 4096, len)) { snprintf(err, errlen, "out of memory"); return -1; }
    stream_fill(s->buf, len, bgkey, 0);
    int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
              (c->atomics ? IBV_ACCESS_REMOTE_ATOMIC : 0);
    s->mr = ibv_reg_mr(d->pd, s->buf, len, acc);
    s->scq = ibv_create_cq(d->ctx, (int)c->sq_depth, NULL, NULL, 0);
    s->rcq = ibv_create_cq(d->ctx, (int)(rq_depth ? rq_depth : 1), NULL, NULL, 0);
    if (!s->mr || !s->scq || !s->rcq) { snprintf(err, errlen, "MR/CQ creation failed: %s", strerror(errno)); return -1; }
    static const enum ibv_qp_type t[3] = {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD};
    struct ibv_qp_init_attr ia = {
        .send_cq = s->scq, .recv_cq = s->rcq, .qp_type = t[c->qp_type],
        .cap = {.max_send_wr = c->sq_depth, .max_recv_wr = rq_depth ? rq_depth : 1,
                .max_send_sge = c->max_sge, .max_recv_sge = c->max_sge, .max_inline_data = 64}};
    s->qp = ibv_create_qp(d->pd, &ia);
    if (!s->qp) {
        ia.cap.max_inline_data = 0;
        s->qp = ibv_create_qp(d->pd, &ia);
    }
    if (!s->qp) { snprintf(err, errlen, "ibv_create_qp(%s, sq %u rq %u sge %u) failed: %s", qpt_name[c->qp_type],
                           c->sq_depth, rq_depth, c->max_sge, strerror(errno)); return -1; }
    s->max_inline = ia.cap.max_inline_data;
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = (uint8_t)d->port};
    int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    int rc; /* a verb's own errno: ibv_modify_qp returns it and need not set errno */
    if (c->qp_type == T_UD) {
        a.qkey = UD_QKEY;
        mask |= IBV_QP_QKEY;
    } else {
        a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
                            (c->qp_type == T_RC ? IBV_ACCESS_REMOTE_READ | (c->atomics ? IBV_ACCESS_REMOTE_ATOMIC : 0) : 0);
        mask |= IBV_QP_ACCESS_FLAGS;
    }
    if ((rc = ibv_modify_qp(s->qp, &a, mask))) { snprintf(err, errlen, "QP to INIT failed: %s", strerror(rc)); return -1; }
    return 0;
}

static void fill_ah(struct dev *d, const struct qpinfo *them, struct ibv_ah_attr *ah) {
    memset(ah, 0, sizeof *ah);
    ah->is_global = 1;
    ah->port_num = (uint8_t)d->port;
    ah->grh.sgid_index = (uint8_t)d->gidx;
    ah->grh.hop_limit = 64;
    memcpy(ah->grh.dgid.raw, them->gid, 16);
}

static int qp_connect(struct dev *d, const struct wl_case *c, struct side_qp *s, const struct qpinfo *them,
                      char *err, size_t errlen) {
    struct ibv_qp_attr a;
    int rc;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    int mask = IBV_QP_STATE;
    if (c->qp_type != T_UD) {
        fill_ah(d, them, &a.ah_attr);
        a.path_mtu = mtu_enum(c->mtu);
        a.dest_qp_num = them->qpn;
        a.rq_psn = them->psn;
        mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
        if (c->qp_type == T_RC) {
            a.max_dest_rd_atomic = (uint8_t)c->max_rd_atomic;
            a.min_rnr_timer = 1;
            mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
        }
    }
    if ((rc = ibv_modify_qp(s->qp, &a, mask))) { snprintf(err, errlen, "QP to RTR failed: %s", strerror(rc)); return -1; }
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = s->psn;
    mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
    if (c->qp_type == T_RC) {
        a.timeout = 14; /* 67 ms: a lost frame costs little */
        a.retry_cnt = 7;
        a.rnr_retry = 7; /* infinite: the server posts receives as they complete */
        a.max_rd_atomic = (uint8_t)c->max_rd_atomic;
        mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
    }
    if ((rc = ibv_modify_qp(s->qp, &a, mask))) { snprintf(err, errlen, "QP to RTS failed: %s", strerror(rc)); return -1; }
    if (c->qp_type == T_UD) {
        struct ibv_ah_attr ah;
        fill_ah(d, them, &ah);
        s->ah = ibv_create_ah(d->pd, &ah);
        if (!s->ah) { snprintf(err, errlen, "ibv_create_ah failed: %s", strerror(errno)); return -1; }
    }
    return 0;
}

static void qp_destroy(struct side_qp *s) {
    if (s->ah) ibv_destroy_ah(s->ah);
    if (s->qp) ibv_destroy_qp(s->qp);
    if (s->scq) ibv_destroy_cq(s->scq);
    if (s->rcq) ibv_destroy_cq(s->rcq);
    if (s->mr) ibv_dereg_mr(s->mr);
    free(s->buf);
    memset(s, 0, sizeof *s);
}

static uint32_t draw_psn(uint64_t seed, uint32_t q, int side) {
    uint64_t k = key4(seed, q, (uint64_t)side, K_PSN);
    /* A quarter start just below the 24-bit wrap. */
    return (k & 3) == 0 ? 0xffffffu - (uint32_t)((k >> 8) % 64) : (uint32_t)(k >> 8) & 0xffffffu;
}

/* ------------------------------------------------------------------------ */
/* The memory images each side must hold at the end. `expect` starts as the
 * background; the side writes what each region must hold, and bytes no check
 * covers are copied from `got`. Returns 0 or fills the verdict. */

static void place(uint8_t *img, const struct region *g, uint64_t key, uint32_t len, uint32_t skip) {
    /* The first `len` bytes of stream `key` scattered over g's pieces,
     * starting `skip` bytes into them (UD's GRH). */
    uint64_t j = 0;
    for (int k = 0; k < g->n && j < len + skip; k++) {
        for (uint32_t b = 0; b < g->p[k].len && j < len + skip; b++, j++)
            if (j >= skip) img[g->p[k].off + b] = stream_byte(key, j - skip);
    }
}
static void copy_region(uint8_t *img, const uint8_t *got, uint64_t off, uint64_t len) {
    memcpy(img + off, got + off, len);
}

static const char *region_of(const struct plan_qp *p, int server, uint64_t off, char *buf, size_t n) {
    for (uint32_t k = 0; k < p->n; k++) {
        const struct plan_msg *pm = &p->msg[k];
        if (!server && off >= pm->local.off && off < pm->local.off + pm->local.span) {
            snprintf(buf, n, "message %u (%s %u B, %d SGEs): byte %llu of its local buffer", pm->idx,
                     op_name[pm->m.op], pm->m.size, pm->m.nsge, (unsigned long long)(off - pm->local.off));
            return buf;
        }
        if (server && pm->recv < 0 && off >= pm->remote && off < pm->remote + (op_atomic(pm->m.op) ? 8 : pm->m.size)) {
            snprintf(buf, n, "message %u (%s %u B): byte %llu of its %s", pm->idx, op_name[pm->m.op], pm->m.size,
                     (unsigned long long)(off - pm->remote),
                     op_atomic(pm->m.op) ? "atomic word" : pm->m.op == OP_READ ? "READ source" : "WRITE target");
            return buf;
        }
        if (server && pm->m.op == OP_WRITE_IMM && off >= pm->remote && off < pm->remote + pm->m.size) {
            snprintf(buf, n, "message %u (write_imm %u B): byte %llu of its WRITE target", pm->idx, pm->m.size,
                     (unsigned long long)(off - pm->remote));
            return buf;
        }
        if (server && pm->recv >= 0) {
            const struct plan_recv *pr = &p->rq[pm->recv];
            if (off >= pr->buf.off && off < pr->buf.off + pr->buf.span) {
                snprintf(buf, n, "receive buffer %d (%u B, %d SGEs): byte %llu", pm->recv, pr->cap, pr->buf.n,
                         (unsigned long long)(off - pr->buf.off));
                return buf;
            }
        }
    }
    snprintf(buf, n, "byte %llu of the MR, outside every buffer", (unsigned long long)off);
    return buf;
}

static void compare_image(struct verdict *v, const struct wl_case *c, uint32_t q, const struct plan_qp *p,
                          int server, const uint8_t *want, const uint8_t *got, uint64_t len) {
    if (!memcmp(want, got, len)) return;
    uint64_t o = 0, bad = 0;
    while (o < len && want[o] == got[o]) o++;
    for (uint64_t j = o; j < len; j++) bad += want[j] != got[j];
    char where[256];
    failf(v, "seed %llu QP %u: %s memory differs in %llu bytes, first at %s: 0x%02x, want 0x%02x",
          (unsigned long long)c->seed, q, server ? "the responder's" : "the requester's", (unsigned long long)bad,
          region_of(p, server, o, where, sizeof where), got[o], want[o]);
}

/* ------------------------------------------------------------------------ */
/* Client: the requester. */

static void build_wr(const struct wl_case *c, uint32_t q, struct side_qp *s, const struct plan_msg *pm,
                     const struct qpinfo *them, struct ibv_send_wr *wr, struct ibv_sge *sg) {
    memset(wr, 0, sizeof *wr);
    wr->wr_id = pm->idx;
    wr->sg_list = sg;
    wr->num_sge = pm->local.n;
    wr->send_flags = IBV_SEND_SIGNALED;
    for (int k = 0; k < pm->local.n; k++) {
        sg[k].addr = (uintptr_t)(s->buf + pm->local.p[k].off);
        sg[k].length = pm->local.p[k].len;
        sg[k].lkey = s->mr->lkey;
    }
    static const enum ibv_wr_opcode opc[OP_COUNT] = {
        IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM,
        IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD};
    wr->opcode = opc[pm->m.op];
    if (op_has_imm(pm->m.op)) wr->imm_data = htonl(pm->m.imm);
    if (op_has_payload(pm->m.op) && pm->m.inl && pm->m.size <= s->max_inline) wr->send_flags |= IBV_SEND_INLINE;
    if (c->qp_type == T_UD) {
        wr->wr.ud.ah = s->ah;
        wr->wr.ud.remote_qpn = them->qpn;
        wr->wr.ud.remote_qkey = UD_QKEY;
    } else if (op_atomic(pm->m.op)) {
        wr->wr.atomic.remote_addr = them->addr + pm->remote;
        wr->wr.atomic.rkey = them->rkey;
        wr->wr.atomic.compare_add = pm->m.op == OP_CAS ? pm->m.cmp : pm->m.swap;
        wr->wr.atomic.swap = pm->m.swap;
    } else if (pm->m.op != OP_SEND && pm->m.op != OP_SEND_IMM) {
        wr->wr.rdma.remote_addr = them->addr + pm->remote;
        wr->wr.rdma.rkey = them->rkey;
    }
    (void)q;
}

static const char *wc_opname(enum ibv_wc_opcode o) {
    switch (o) {
    case IBV_WC_SEND: return "SEND";
    case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
    case IBV_WC_RDMA_READ: return "RDMA_READ";
    case IBV_WC_COMP_SWAP: return "COMP_SWAP";
    case IBV_WC_FETCH_ADD: return "FETCH_ADD";
    case IBV_WC_RECV: return "RECV";
    case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
    default: return "other";
    }
}

struct client_opts {
    int corrupt_seen;
};

/* A QP is stuck when it has work outstanding and no completion came for
 * this many seconds (--stall): on a lossy wire a slow case that still
 * completes is not stuck (RC's go-back-N over a TCG VM can take minutes for
 * a 128 KiB message at 5%). Per QP, so that one stuck QP is not hidden by
 * another's progress. */
static double g_stall = 20.0;

/* Runs one case's traffic on the client; returns with every WQE completed or
 * one of its QPs is stuck. */
static void client_traffic(const struct wl_case *c, struct side_qp *s, struct plan_qp *plan, const struct qpinfo *them,
                           struct verdict *v) {
    double last_completion[MAX_QPS];
    for (uint32_t q = 0; q < MAX_QPS; q++) last_completion[q] = now_s();
    uint32_t posted[MAX_QPS] = {0}, done[MAX_QPS] = {0}, posts[MAX_QPS] = {0};
    int dead[MAX_QPS] = {0};
    static const enum ibv_wc_opcode want_opc[OP_COUNT] = {
        IBV_WC_SEND, IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ,
        IBV_WC_COMP_SWAP, IBV_WC_FETCH_ADD};
    unsigned spins = 0;
    for (;;) {
        int busy = 0, progress = 0;
        for (uint32_t q = 0; q < c->nqps; q++) {
            struct plan_qp *p = &plan[q];
            if (done[q] < p->n && !dead[q]) busy = 1;
            /* Post a chain of 1..batch WQEs as room allows. */
            uint32_t room = c->sq_depth - (posted[q] - done[q]);
            if (!dead[q] && posted[q] < p->n && room) {
                uint32_t k = 1 + (uint32_t)(key4(c->seed, q, posts[q]++, K_POST) % c->batch);
                if (k > room) k = room;
                if (k > p->n - posted[q]) k = p->n - posted[q];
                struct ibv_send_wr wr[MAX_BATCH], *bad = NULL;
                struct ibv_sge sg[MAX_BATCH][MAX_SGE];
                for (uint32_t j = 0; j < k; j++) {
                    build_wr(c, q, &s[q], &p->msg[posted[q] + j], &them[q], &wr[j], sg[j]);
                    wr[j].next = j + 1 < k ? &wr[j + 1] : NULL;
                }
                if (ibv_post_send(s[q].qp, wr, &bad)) {
                    failf(v, "seed %llu QP %u: ibv_post_send of %u WQEs failed at message %llu: %s",
                          (unsigned long long)c->seed, q, k, bad ? (unsigned long long)bad->wr_id : 0ull, strerror(errno));
                    dead[q] = 1;
                } else {
                    posted[q] += k;
                    progress = 1;
                }
            }
            struct ibv_wc wc[16];
            int n = ibv_poll_cq(s[q].scq, 16, wc);
            if (n < 0) { failf(v, "QP %u: ibv_poll_cq failed", q); dead[q] = 1; continue; }
            if (n > 0 || posted[q] == done[q]) last_completion[q] = now_s();
            for (int j = 0; j < n; j++) {
                progress = 1;
                v->completions++;
                if (done[q] >= posted[q]) {
                    failf(v, "seed %llu QP %u: a completion (wr_id %llu) for nothing outstanding",
                          (unsigned long long)c->seed, q, (unsigned long long)wc[j].wr_id);
                    continue;
                }
                const struct plan_msg *pm = &p->msg[done[q]++];
                if (wc[j].status != IBV_WC_SUCCESS) {
                    failf(v, "seed %llu QP %u: message %u (%s %u B, %d SGEs) completed with %s (vendor error 0x%x)",
                          (unsigned long long)c->seed, q, pm->idx, op_name[pm->m.op], pm->m.size, pm->m.nsge,
                          ibv_wc_status_str(wc[j].status), wc[j].vendor_err);
                    dead[q] = 1; /* the QP is in ERROR: what is outstanding flushes */
                    continue;
                }
                if (wc[j].wr_id != pm->idx) {
                    failf(v, "seed %llu QP %u: completion for wr_id %llu where message %u was next",
                          (unsigned long long)c->seed, q, (unsigned long long)wc[j].wr_id, pm->idx);
                    continue;
                }
                if (wc[j].opcode != want_opc[pm->m.op])
                    failf(v, "seed %llu QP %u: message %u (%s): completion opcode %s", (unsigned long long)c->seed,
                          q, pm->idx, op_name[pm->m.op], wc_opname(wc[j].opcode));
                if ((pm->m.op == OP_READ || op_atomic(pm->m.op)) && wc[j].byte_len != pm->m.size)
                    failf(v, "seed %llu QP %u: message %u (%s %u B): byte_len %u", (unsigned long long)c->seed, q,
                          pm->idx, op_name[pm->m.op], pm->m.size, wc[j].byte_len);
                v->msgs++;
                v->bytes += pm->m.size;
            }
        }
        if (!busy) break;
        if (dead[0] + dead[1] + dead[2] + dead[3]) {
            /* Drain what flushes, then stop. */
            int left = 0;
            for (uint32_t q = 0; q < c->nqps; q++) left += posted[q] != done[q];
            if (!left) break;
        }
        int stuck = 0;
        for (uint32_t q = 0; q < c->nqps; q++)
            stuck |= posted[q] != done[q] && now_s() - last_completion[q] > g_stall;
        if (stuck) {
            for (uint32_t q = 0; q < c->nqps; q++)
                if (done[q] < plan[q].n)
                    failf(v, "seed %llu QP %u: stuck: %u of %u messages completed (%u posted), none for %.0f s",
                          (unsigned long long)c->seed, q, done[q], plan[q].n, posted[q], g_stall);
            break;
        }
        if (progress) spins = 0; else idle(&spins);
    }
}

static int corrupt_here(const struct wl_case *c, uint32_t q, const struct plan_msg *pm) {
    return c->corrupt >= 0 && q == (c->qp_only >= 0 ? (uint32_t)c->qp_only : 0) &&
           pm->idx == (uint32_t)c->corrupt;
}

/* The client's part of one case. Returns 0 when both sides found nothing. */
static int client_case(int fd, struct dev *d, const struct wl_case *c, struct verdict *v) {
    send_msg(fd, M_CASE, c, sizeof *c);
    struct plan_qp plan[MAX_QPS];
    struct side_qp s[MAX_QPS];
    struct qpinfo mine[MAX_QPS], them[MAX_QPS];
    char err[256] = "";
    memset(s, 0, sizeof s);
    memset(mine, 0, sizeof mine);
    for (uint32_t q = 0; q < c->nqps; q++) {
        plan_build(c, q, &plan[q]);
        if (!err[0] && qp_create(d, c, &s[q], 1, plan[q].client_len, key4(c->seed, q, 0, K_BG_CLIENT), err, sizeof err)) {
            mine[q].status = 1;
        }
        if (s[q].qp) {
            s[q].psn = draw_psn(c->seed, q, 0);
            mine[q].qpn = s[q].qp->qp_num;
            mine[q].psn = s[q].psn;
        }
        memcpy(mine[q].gid, d->gid.raw, 16);
    }
    recv_msg(fd, M_QPINFO, them, sizeof them);
    send_msg(fd, M_QPINFO, mine, (uint32_t)(c->nqps * sizeof mine[0]));
    int setup_ok = !err[0];
    for (uint32_t q = 0; q < c->nqps; q++)
        if (them[q].status) setup_ok = 0;
    uint32_t ready = 0;
    recv_msg(fd, M_READY, &ready, sizeof ready);
    if (!ready) setup_ok = 0;
    for (uint32_t q = 0; q < c->nqps && setup_ok; q++)
        if (qp_connect(d, c, &s[q], &them[q], err, sizeof err)) setup_ok = 0;
    if (!setup_ok) {
        failf(v, "seed %llu: setup failed: %s", (unsigned long long)c->seed, err[0] ? err : "on the server");
    } else {
        /* The sources: each message's payload in its pieces. */
        for (uint32_t q = 0; q < c->nqps; q++)
            for (uint32_t k = 0; k < plan[q].n; k++) {
                struct plan_msg *pm = &plan[q].msg[k];
                if (op_has_payload(pm->m.op)) {
                    place(s[q].buf, &pm->local, key4(c->seed, q, pm->idx, K_PAYLOAD), pm->m.size, 0);
                    if (corrupt_here(c, q, pm) && pm->m.size)
                        s[q].buf[pm->local.p[pm->local.n - 1].off + pm->local.p[pm->local.n - 1].len / 2] ^= 0x5a;
                }
            }
        client_traffic(c, s, plan, them, v);
        /* The requester's memory: READ targets, atomic results, all gaps. */
        for (uint32_t q = 0; q < c->nqps; q++) {
            uint8_t *want = malloc(s[q].len);
            stream_fill(want, s[q].len, key4(c->seed, q, 0, K_BG_CLIENT), 0);
            for (uint32_t k = 0; k < plan[q].n; k++) {
                struct plan_msg *pm = &plan[q].msg[k];
                if (op_has_payload(pm->m.op)) {
                    copy_region(want, s[q].buf, pm->local.off, pm->local.span); /* ours to send */
                } else if (pm->m.op == OP_READ) {
                    place(want, &pm->local, key4(c->seed, q, pm->idx, K_READSRC), pm->m.size, 0);
                    if (corrupt_here(c, q, pm) && pm->m.size)
                        s[q].buf[pm->local.p[0].off + pm->local.p[0].len / 2] ^= 0x5a;
                } else {
                    memcpy(want + pm->local.off, &pm->m.orig, 8); /* atomics return the old value */
                    if (corrupt_here(c, q, pm)) s[q].buf[pm->local.off] ^= 0x5a;
                }
            }
            /* An atomic's wrong result: whose value is it? */
            for (uint32_t k = 0; k < plan[q].n; k++) {
                struct plan_msg *pm = &plan[q].msg[k];
                uint64_t got;
                if (!op_atomic(pm->m.op)) continue;
                memcpy(&got, s[q].buf + pm->local.off, 8);
                if (got == pm->m.orig) continue;
                char whose[160] = "no message's original value, nor the background";
                uint8_t bgb[8];
                uint64_t bg;
                stream_fill(bgb, 8, key4(c->seed, q, 0, K_BG_CLIENT), pm->local.off);
                memcpy(&bg, bgb, 8);
                if (got == bg) snprintf(whose, sizeof whose, "the buffer's old content: nothing was written");
                for (uint32_t j = 0; j < plan[q].n; j++) {
                    struct plan_msg *o2 = &plan[q].msg[j];
                    uint64_t after = o2->m.op == OP_FAA ? o2->m.orig + o2->m.swap
                                     : o2->m.cmp == o2->m.orig ? o2->m.swap : o2->m.orig;
                    if (op_atomic(o2->m.op) && (got == o2->m.orig || got == after))
                        snprintf(whose, sizeof whose, "the %s value of message %u (%s, %d after it)",
                                 got == o2->m.orig ? "original" : "final", o2->idx, op_name[o2->m.op], (int)(j - k));
                }
                if (got == (pm->m.op == OP_FAA ? pm->m.orig + pm->m.swap : pm->m.swap))
                    snprintf(whose, sizeof whose, "its own result (executed twice?)");
                failf(v, "seed %llu QP %u: message %u (%s) returned 0x%016llx, want 0x%016llx: %s",
                      (unsigned long long)c->seed, q, pm->idx, op_name[pm->m.op], (unsigned long long)got,
                      (unsigned long long)pm->m.orig, whose);
                break;
            }
            compare_image(v, c, q, &plan[q], 0, want, s[q].buf, s[q].len);
            free(want);
        }
    }
    char status[600];
    snprintf(status, sizeof status, "%s", v->failed ? v->first : "");
    send_msg(fd, M_DONE, status, (uint32_t)strlen(status) + 1);
    struct { uint64_t failed, lost, dups; char text[512]; } res;
    memset(&res, 0, sizeof res);
    recv_msg(fd, M_RESULT, &res, sizeof res);
    if (res.failed && v->failed) {
        size_t l = strlen(v->first);
        snprintf(v->first + l, sizeof v->first - l, "; the responder: %s", res.text);
        v->failed++;
    } else if (res.failed) {
        failf(v, "%s", res.text);
    }
    v->lost += res.lost;
    v->dups += res.dups;
    for (uint32_t q = 0; q < c->nqps; q++) {
        qp_destroy(&s[q]);
        plan_free(&plan[q]);
    }
    return v->failed ? 1 : 0;
}

/* ------------------------------------------------------------------------ */
/* Server: the responder. */

struct recv_state {
    uint32_t posted, done;     /* receive WQEs */
    int *got;                  /* loss mode: plan index of the message each receive holds, -1 */
    uint8_t *matched;          /* loss mode: per plan message, seen */
    uint32_t len[MAX_MSGS + 1];/* byte_len of each completed receive */
};

static void post_recvs(const struct wl_case *c, uint32_t q, struct side_qp *s, const struct plan_qp *p,
                       struct recv_state *r, uint32_t upto, struct verdict *v) {
    while (r->posted < upto) {
        uint32_t k = 1 + (uint32_t)(key4(c->seed, q, r->posted, K_POST + 1) % c->batch);
        if (k > upto - r->posted) k = upto - r->posted;
        struct ibv_recv_wr wr[MAX_BATCH], *bad = NULL;
        struct ibv_sge sg[MAX_BATCH][MAX_SGE];
        for (uint32_t j = 0; j < k; j++) {
            const struct plan_recv *pr = &p->rq[r->posted + j];
            memset(&wr[j], 0, sizeof wr[j]);
            wr[j].wr_id = r->posted + j;
            wr[j].sg_list = sg[j];
            wr[j].num_sge = pr->buf.n;
            for (int g = 0; g < pr->buf.n; g++) {
                sg[j][g].addr = (uintptr_t)(s->buf + pr->buf.p[g].off);
                sg[j][g].length = pr->buf.p[g].len;
                sg[j][g].lkey = s->mr->lkey;
            }
            wr[j].next = j + 1 < k ? &wr[j + 1] : NULL;
        }
        if (ibv_post_recv(s->qp, wr, &bad)) {
            failf(v, "seed %llu QP %u: ibv_post_recv failed: %s", (unsigned long long)c->seed, q, strerror(errno));
            return;
        }
        r->posted += k;
    }
}

/* Does the data in receive `rq` hold message pm's payload? */
static int recv_holds(const struct wl_case *c, uint32_t q, const struct side_qp *s, const struct plan_recv *pr,
                      const struct plan_msg *pm, uint64_t *bad_at) {
    uint32_t skip = c->qp_type == T_UD ? UD_GRH : 0, len = pm->m.op == OP_WRITE_IMM ? 0 : pm->m.size;
    uint64_t key = key4(c->seed, q, pm->idx, K_PAYLOAD), j = 0;
    for (int k = 0; k < pr->buf.n && j < len + skip; k++)
        for (uint32_t b = 0; b < pr->buf.p[k].len && j < len + skip; b++, j++)
            if (j >= skip && s->buf[pr->buf.p[k].off + b] != stream_byte(key, j - skip)) {
                *bad_at = j - skip;
                return 0;
            }
    return 1;
}

/* One receive completion: which message it is, and whether all of it is right. */
static void check_recv(const struct wl_case *c, uint32_t q, struct side_qp *s, const struct plan_qp *p,
                       struct recv_state *r, const struct ibv_wc *wc, const struct qpinfo *them, struct verdict *v) {
    unsigned long long sd = (unsigned long long)c->seed;
    uint32_t rid = r->done++;
    if (wc->status != IBV_WC_SUCCESS) {
        failf(v, "seed %llu QP %u: receive %u completed with %s (vendor error 0x%x)", sd, q, rid,
              ibv_wc_status_str(wc->status), wc->vendor_err);
        return;
    }
    if (wc->wr_id != rid) {
        failf(v, "seed %llu QP %u: receive completion wr_id %llu where %u was next", sd, q,
              (unsigned long long)wc->wr_id, rid);
        return;
    }
    if (c->qp_type == T_UD && (wc->src_qp != them->qpn || !(wc->wc_flags & IBV_WC_GRH)))
        failf(v, "seed %llu QP %u: UD receive %u: src_qp 0x%x (want 0x%x), wc_flags 0x%x", sd, q, rid, wc->src_qp,
              them->qpn, wc->wc_flags);
    r->len[rid] = wc->byte_len;
    const struct plan_recv *pr = &p->rq[rid];
    uint32_t skip = c->qp_type == T_UD ? UD_GRH : 0;
    /* The candidates: in order, the message this receive was posted for;
     * under loss, any not yet seen. */
    uint32_t first = 0, last = p->n;
    const struct plan_msg *want = NULL;
    for (uint32_t k = 0; k < p->n; k++)
        if (p->msg[k].recv == (int)rid) { want = &p->msg[k]; first = k; last = k + 1; }
    int loss = c->loss_ok && c->qp_type != T_RC;
    if (loss) first = 0, last = p->n;
    const struct plan_msg *hit = NULL;
    uint64_t bad_at = 0;
    for (uint32_t k = first; k < last && !hit; k++) {
        const struct plan_msg *pm = &p->msg[k];
        if (pm->recv < 0 || (loss && r->matched[k])) continue;
        int opc_ok = wc->opcode == (pm->m.op == OP_WRITE_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV);
        int imm_ok = op_has_imm(pm->m.op) ? (wc->wc_flags & IBV_WC_WITH_IMM) && ntohl(wc->imm_data) == pm->m.imm
                                          : !(wc->wc_flags & IBV_WC_WITH_IMM);
        int len_ok = wc->byte_len == pm->m.size + (pm->m.op == OP_WRITE_IMM ? 0 : skip);
        int data_ok = recv_holds(c, q, s, pr, pm, &bad_at);
        if (opc_ok && imm_ok && len_ok && data_ok) {
            hit = pm;
            if (loss) {
                r->matched[k] = 1;
                r->got[rid] = (int)k;
            }
            break;
        }
        if (!loss) {
            if (!opc_ok)
                failf(v, "seed %llu QP %u: message %u (%s %u B): receive opcode %s", sd, q, pm->idx,
                      op_name[pm->m.op], pm->m.size, wc_opname(wc->opcode));
            else if (!imm_ok)
                failf(v, "seed %llu QP %u: message %u (%s): immediate 0x%08x (flags 0x%x), want 0x%08x", sd, q,
                      pm->idx, op_name[pm->m.op], ntohl(wc->imm_data), wc->wc_flags, pm->m.imm);
            else if (!len_ok)
                failf(v, "seed %llu QP %u: message %u (%s %u B): byte_len %u", sd, q, pm->idx, op_name[pm->m.op],
                      pm->m.size, wc->byte_len);
            else
                failf(v, "seed %llu QP %u: message %u (%s %u B, receive %u with %d SGEs): payload differs at byte %llu",
                      sd, q, pm->idx, op_name[pm->m.op], pm->m.size, rid, pr->buf.n, (unsigned long long)bad_at);
        }
    }
    if (loss && !hit && (c->loss_ok & DUP_OK)) {
        /* UD has no PSN check, and UC starts a new message at any first or
         * only packet whatever its PSN (IBA 9.7.5.1, rxe's check_psn): a
         * frame the wire duplicated may be a second message. */
        for (uint32_t k = 0; k < p->n && !hit; k++) {
            const struct plan_msg *pm = &p->msg[k];
            if (!r->matched[k] || wc->byte_len != pm->m.size + skip) continue;
            int imm_ok = op_has_imm(pm->m.op) ? (wc->wc_flags & IBV_WC_WITH_IMM) && ntohl(wc->imm_data) == pm->m.imm
                                              : !(wc->wc_flags & IBV_WC_WITH_IMM);
            if (imm_ok && recv_holds(c, q, s, pr, pm, &bad_at)) {
                hit = pm;
                r->got[rid] = (int)k;
                v->dups++;
            }
        }
    }
    if (loss && !hit) {
        /* Name the message it resembles most: the same immediate or length. */
        char like[200] = "";
        for (uint32_t k = 0; k < p->n && !like[0]; k++) {
            const struct plan_msg *pm = &p->msg[k];
            if (pm->recv < 0) continue;
            if ((op_has_imm(pm->m.op) && (wc->wc_flags & IBV_WC_WITH_IMM) && ntohl(wc->imm_data) == pm->m.imm) ||
                (!op_has_imm(pm->m.op) && wc->byte_len == pm->m.size + skip)) {
                int data_ok = recv_holds(c, q, s, pr, pm, &bad_at);
                snprintf(like, sizeof like, "; message %u (%s %u B%s) has its %s%s", pm->idx, op_name[pm->m.op],
                         pm->m.size, r->matched[k] ? ", already received" : "",
                         op_has_imm(pm->m.op) ? "immediate" : "length",
                         data_ok ? "" : ", not its data");
            }
        }
        failf(v, "seed %llu QP %u: receive %u (%s, byte_len %u, imm 0x%08x) is none of the messages sent, or one "
                 "already received%s", sd, q, rid, wc_opname(wc->opcode), wc->byte_len, ntohl(wc->imm_data), like);
    }
    (void)want;
}

static void server_case(int fd, struct dev *d, const struct wl_case *c) {
    struct plan_qp plan[MAX_QPS];
    struct side_qp s[MAX_QPS];
    struct qpinfo mine[MAX_QPS], them[MAX_QPS];
    struct recv_state *rs = calloc(MAX_QPS, sizeof *rs);
    struct verdict v;
    memset(&v, 0, sizeof v);
    memset(s, 0, sizeof s);
    memset(mine, 0, sizeof mine);
    char err[256] = "";
    int loss = c->loss_ok && c->qp_type != T_RC;
    uint32_t rq_depth[MAX_QPS];
    for (uint32_t q = 0; q < c->nqps; q++) {
        plan_build(c, q, &plan[q]);
        /* RC: a queue of the case's depth, refilled as receives complete (the
         * requester's RNR retries cover the gaps). UC and UD have no RNR: all
         * receives are posted up front. */
        rq_depth[q] = c->qp_type == T_RC ? c->sq_depth : plan[q].nrecv;
        if (rq_depth[q] < 1) rq_depth[q] = 1;
        rs[q].got = malloc((plan[q].nrecv + 1) * sizeof(int));
        rs[q].matched = calloc(plan[q].n + 1, 1);
        for (uint32_t k = 0; k <= plan[q].nrecv; k++) rs[q].got[k] = -1;
        if (!err[0] && qp_create(d, c, &s[q], rq_depth[q], plan[q].server_len, key4(c->seed, q, 0, K_BG_SERVER),
                                 err, sizeof err))
            mine[q].status = 1;
        /* READ sources and atomic words. */
        if (s[q].buf)
            for (uint32_t k = 0; k < plan[q].n; k++) {
                struct plan_msg *pm = &plan[q].msg[k];
                if (pm->m.op == OP_READ)
                    stream_fill(s[q].buf + pm->remote, pm->m.size, key4(c->seed, q, pm->idx, K_READSRC), 0);
                else if (op_atomic(pm->m.op))
                    memcpy(s[q].buf + pm->remote, &pm->m.orig, 8);
            }
        if (s[q].qp) {
            s[q].psn = draw_psn(c->seed, q, 1);
            mine[q].qpn = s[q].qp->qp_num;
            mine[q].psn = s[q].psn;
            mine[q].rkey = s[q].mr->rkey;
            mine[q].addr = (uintptr_t)s[q].buf;
        }
        memcpy(mine[q].gid, d->gid.raw, 16);
    }
    send_msg(fd, M_QPINFO, mine, (uint32_t)(c->nqps * sizeof mine[0]));
    recv_msg(fd, M_QPINFO, them, sizeof them);
    uint32_t ready = !err[0];
    for (uint32_t q = 0; q < c->nqps; q++)
        if (them[q].status) ready = 0;
    for (uint32_t q = 0; q < c->nqps && ready; q++) {
        if (qp_connect(d, c, &s[q], &them[q], err, sizeof err)) { ready = 0; break; }
        post_recvs(c, q, &s[q], &plan[q], &rs[q], plan[q].nrecv < rq_depth[q] ? plan[q].nrecv : rq_depth[q], &v);
    }
    if (err[0]) failf(&v, "seed %llu: server setup: %s", (unsigned long long)c->seed, err);
    send_msg(fd, M_READY, &ready, sizeof ready);

    /* Receive until the client is done and every receive is in (or, under
     * loss, the line has been quiet for a while). */
    char client_status[600] = "";
    int client_done = 0;
    double t_done = 0, t_last = now_s();
    unsigned spins = 0;
    while (ready) {
        int progress = 0, all = 1;
        for (uint32_t q = 0; q < c->nqps; q++) {
            struct ibv_wc wc[16];
            int n = ibv_poll_cq(s[q].rcq, 16, wc);
            for (int j = 0; j < n; j++) check_recv(c, q, &s[q], &plan[q], &rs[q], &wc[j], &them[q], &v);
            if (n > 0) {
                progress = 1;
                t_last = now_s();
                if (c->qp_type == T_RC) {
                    uint32_t upto = rs[q].done + rq_depth[q];
                    post_recvs(c, q, &s[q], &plan[q], &rs[q], upto < plan[q].nrecv ? upto : plan[q].nrecv, &v);
                }
            }
            if (rs[q].done < plan[q].nrecv) all = 0;
        }
        if (!client_done) {
            struct pollfd pf = {.fd = fd, .events = POLLIN};
            if (poll(&pf, 1, 0) > 0) {
                recv_msg(fd, M_DONE, client_status, sizeof client_status);
                client_done = 1;
                t_done = now_s();
            }
        }
        if (client_done) {
            if (all) break;
            double quiet = now_s() - (t_last > t_done ? t_last : t_done);
            if (loss && quiet > 0.5) break;
            if (now_s() - t_done > 10.0) {
                for (uint32_t q = 0; q < c->nqps; q++)
                    if (rs[q].done < plan[q].nrecv)
                        failf(&v, "seed %llu QP %u: %u of %u receives completed 10 s after the requester finished",
                              (unsigned long long)c->seed, q, rs[q].done, plan[q].nrecv);
                break;
            }
        }
        if (progress) spins = 0; else idle(&spins);
    }
    if (!ready) recv_msg(fd, M_DONE, client_status, sizeof client_status);

    /* The responder's memory. */
    for (uint32_t q = 0; q < c->nqps && ready; q++) {
        struct plan_qp *p = &plan[q];
        uint8_t *want = malloc(s[q].len);
        stream_fill(want, s[q].len, key4(c->seed, q, 0, K_BG_SERVER), 0);
        for (uint32_t k = 0; k < p->n; k++) {
            struct plan_msg *pm = &p->msg[k];
            uint64_t pk = key4(c->seed, q, pm->idx, K_PAYLOAD);
            if (pm->m.op == OP_READ) {
                stream_fill(want + pm->remote, pm->m.size, key4(c->seed, q, pm->idx, K_READSRC), 0);
            } else if (op_atomic(pm->m.op)) {
                uint64_t w = pm->m.orig;
                if (pm->m.op == OP_FAA) w += pm->m.swap;
                else if (pm->m.cmp == pm->m.orig) w = pm->m.swap;
                memcpy(want + pm->remote, &w, 8);
            } else if (op_writes_target(pm->m.op)) {
                int arrived = !loss || (pm->m.op == OP_WRITE_IMM && rs[q].matched[k]);
                if (arrived) {
                    stream_fill(want + pm->remote, pm->m.size, pk, 0);
                } else {
                    /* Lost or unconfirmed (UC): each byte old or new. */
                    for (uint32_t b = 0; b < pm->m.size; b++) {
                        uint8_t nb = stream_byte(pk, b), got = s[q].buf[pm->remote + b];
                        want[pm->remote + b] = got == nb ? nb : want[pm->remote + b];
                    }
                }
            }
        }
        /* Receive buffers: the message each holds; the rest untouched. */
        uint32_t skip = c->qp_type == T_UD ? UD_GRH : 0;
        for (uint32_t rid = 0; rid < p->nrecv; rid++) {
            const struct plan_recv *pr = &p->rq[rid];
            if (skip) copy_region(want, s[q].buf, pr->buf.p[0].off, UD_GRH); /* the GRH rxe writes */
            const struct plan_msg *pm = NULL;
            if (loss) {
                if (rid >= rs[q].done) {
                    /* Never completed: a lost message may have left part of itself. */
                    copy_region(want, s[q].buf, pr->buf.off, pr->buf.span);
                    continue;
                }
                if (rs[q].got[rid] >= 0) pm = &p->msg[rs[q].got[rid]];
                /* A message dropped part-way (UC) may have left bytes in the
                 * buffer that the next one did not overwrite: only the bytes
                 * of the message it holds, and the gaps, are checked. */
                for (int g = 0; g < pr->buf.n; g++) copy_region(want, s[q].buf, pr->buf.p[g].off, pr->buf.p[g].len);
            } else {
                for (uint32_t k = 0; k < p->n; k++)
                    if (p->msg[k].recv == (int)rid) pm = &p->msg[k];
            }
            if (pm && pm->m.op != OP_WRITE_IMM)
                place(want, &pr->buf, key4(c->seed, q, pm->idx, K_PAYLOAD), pm->m.size, skip);
        }
        compare_image(&v, c, q, p, 1, want, s[q].buf, s[q].len);
        free(want);
        if (loss)
            for (uint32_t k = 0; k < p->n; k++)
                if (p->msg[k].recv >= 0 && !rs[q].matched[k]) v.lost++;
    }
    struct { uint64_t failed, lost, dups; char text[512]; } res;
    memset(&res, 0, sizeof res);
    res.failed = (uint64_t)v.failed;
    res.lost = v.lost;
    res.dups = v.dups;
    snprintf(res.text, sizeof res.text, "%s", v.first);
    send_msg(fd, M_RESULT, &res, sizeof res);
    if (v.failed) fprintf(stderr, "simnic-workload server: %s\n", v.first);
    if (client_status[0]) fprintf(stderr, "simnic-workload server: the client says: %s\n", client_status);
    for (uint32_t q = 0; q < c->nqps; q++) {
        qp_destroy(&s[q]);
        plan_free(&plan[q]);
        free(rs[q].got);
        free(rs[q].matched);
    }
    free(rs);
}

/* ------------------------------------------------------------------------ */
/* Drawing a case from its seed, within both devices' limits. */

struct overrides {
    int qp_type, mtu, qps, msgs, batch, sges, depth, max_size, qp_only, from, count, size_cap, corrupt;
    uint32_t ops, ops_filter, no_empty_rdma;
};

static void case_from_seed(uint64_t seed, const struct caps *cap, uint32_t budget, const struct overrides *o,
                           struct wl_case *c) {
    struct rng r = {key4(seed, 0, 0, K_PARAMS)};
    memset(c, 0, sizeof *c);
    c->seed = seed;
    uint32_t roll = rbelow(&r, 10);
    c->qp_type = roll < 6 ? T_RC : roll < 8 ? T_UC : T_UD;
    if (o->qp_type >= 0) c->qp_type = (uint32_t)o->qp_type;
    uint32_t mtus = 1;
    while ((256u << mtus) <= cap->mtu && mtus < 5) mtus++;
    c->mtu = 256u << rbelow(&r, mtus);
    if (o->mtu > 0) c->mtu = (uint32_t)o->mtu;
    if (c->mtu > cap->mtu) c->mtu = cap->mtu;
    c->nqps = 1 + rbelow(&r, MAX_QPS);
    c->sq_depth = rlog(&r, 1, MAX_DEPTH);
    c->batch = rlog(&r, 1, MAX_BATCH);
    c->max_sge = 1 + rbelow(&r, MAX_SGE);
    static const uint32_t sizes[] = {64, 4096, 16384, MAX_SIZE};
    c->max_size = sizes[rbelow(&r, 4)];
    do c->op_mask = (uint32_t)rnext(&r) & ops_of_type[c->qp_type]; while (!c->op_mask);
    c->msgs = 1 + rlog(&r, 1, 400);
    if (o->qps > 0) c->nqps = (uint32_t)o->qps;
    if (o->depth > 0) c->sq_depth = (uint32_t)o->depth;
    if (o->batch > 0) c->batch = (uint32_t)o->batch;
    if (o->sges > 0) c->max_sge = (uint32_t)o->sges;
    if (o->max_size >= 0) c->max_size = (uint32_t)o->max_size;
    if (o->ops) c->op_mask = o->ops & ops_of_type[c->qp_type];
    if (!c->op_mask) c->op_mask = BIT(OP_SEND);
    if (c->nqps > MAX_QPS) c->nqps = MAX_QPS;
    if (c->sq_depth > cap->max_qp_wr) c->sq_depth = cap->max_qp_wr;
    if (c->max_sge > cap->max_sge) c->max_sge = cap->max_sge;
    if (c->max_size > MAX_SIZE) c->max_size = MAX_SIZE;
    c->atomics = cap->atomics;
    c->max_rd_atomic = cap->max_rd_atom < 16 ? cap->max_rd_atom : 16;
    if (c->max_rd_atomic < 1) c->max_rd_atomic = 1;
    c->qp_only = o->qp_only;
    c->ops_filter = o->ops_filter ? o->ops_filter : ALL_OPS;
    c->size_cap = o->size_cap >= 0 ? (uint32_t)o->size_cap : MAX_SIZE;
    c->corrupt = o->corrupt;
    c->no_empty_rdma = o->no_empty_rdma;
    /* The message count: what the seed drew, cut where the payload budget
     * runs out (a message's size does not depend on the count). */
    if (o->msgs > 0) {
        c->msgs = (uint32_t)o->msgs;
    } else {
        uint64_t total = 0;
        uint32_t n = 0;
        for (; n < c->msgs; n++) {
            for (uint32_t q = 0; q < c->nqps; q++) {
                struct msg m;
                msg_spec(c, q, n, &m);
                total += m.size;
            }
            if (total > budget && n > 0) break;
        }
        c->msgs = n;
    }
    if (c->msgs > MAX_MSGS) c->msgs = MAX_MSGS;
    /* UC and UD post all receives up front: the device must hold them. */
    c->from = o->from >= 0 ? (uint32_t)o->from : 0;
    c->count = o->count >= 0 ? (uint32_t)o->count : c->msgs;
}

static void integrity_case(uint64_t seed, const struct caps *cap, int qpt, const struct overrides *o, struct wl_case *c) {
    memset(c, 0, sizeof *c);
    c->seed = seed;
    c->integrity = 1;
    c->qp_type = (uint32_t)qpt;
    c->mtu = o->mtu > 0 && (uint32_t)o->mtu < cap->mtu ? (uint32_t)o->mtu : cap->mtu;
    c->nqps = qpt == T_RC ? 2 : 1;
    c->batch = 4;
    c->max_sge = cap->max_sge < MAX_SGE ? cap->max_sge : MAX_SGE;
    c->sq_depth = 16;
    c->max_size = MAX_SIZE;
    c->op_mask = ops_of_type[qpt];
    c->msgs = integrity_len(qpt);
    c->atomics = cap->atomics;
    c->max_rd_atomic = cap->max_rd_atom < 16 ? cap->max_rd_atom : 16;
    if (o->qps > 0) c->nqps = (uint32_t)o->qps;
    if (o->batch > 0) c->batch = (uint32_t)o->batch;
    if (o->depth > 0) c->sq_depth = (uint32_t)o->depth;
    if (o->sges > 0) c->max_sge = (uint32_t)o->sges;
    c->qp_only = o->qp_only;
    c->from = o->from >= 0 ? (uint32_t)o->from : 0;
    c->count = o->count >= 0 ? (uint32_t)o->count : c->msgs;
    c->ops_filter = o->ops_filter ? o->ops_filter : ALL_OPS;
    c->size_cap = o->size_cap >= 0 ? (uint32_t)o->size_cap : MAX_SIZE;
    c->corrupt = o->corrupt;
    c->no_empty_rdma = o->no_empty_rdma;
}

static void ops_str(uint32_t mask, char *buf, size_t n) {
    buf[0] = 0;
    for (int o = 0; o < OP_COUNT; o++)
        if (mask & BIT(o)) {
            size_t l = strlen(buf);
            snprintf(buf + l, n - l, "%s%s", l ? "," : "", op_name[o]);
        }
}
static uint32_t parse_ops(const char *s) {
    uint32_t m = 0;
    char *dup = strdup(s), *save = NULL;
    for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int o;
        for (o = 0; o < OP_COUNT && strcmp(t, op_name[o]); o++) {}
        if (o == OP_COUNT) die("unknown operation %s (send,send_imm,write,write_imm,read,cas,faa)", t);
        m |= BIT(o);
    }
    free(dup);
    return m;
}

static void describe(const struct wl_case *c, char *buf, size_t n) {
    char ops[96];
    ops_str(c->op_mask, ops, sizeof ops);
    snprintf(buf, n, "%s%s mtu %u qps %u msgs %u depth %u batch %u sges %u max %u ops %s", c->integrity ? "integrity " : "",
             qpt_name[c->qp_type], c->mtu, c->nqps, c->msgs, c->sq_depth, c->batch, c->max_sge, c->max_size, ops);
}

/* ------------------------------------------------------------------------ */
/* The shrinker: smaller cases that still fail, greedily. */

struct runner {
    int fd;
    struct dev *d;
    int cases;
};

static int run_case(struct runner *rn, const struct wl_case *c, struct verdict *v) {
    memset(v, 0, sizeof *v);
    rn->cases++;
    return client_case(rn->fd, rn->d, c, v);
}

/* The options the client was started with that shape cases: a printed
 * command must draw the same case from the same seed. */
static struct caps g_caps;
static uint32_t g_budget = DEFAULT_BUDGET;
static const struct overrides no_overrides = {.qp_type = -1, .mtu = -1, .qps = -1, .msgs = -1, .batch = -1,
                                              .sges = -1, .depth = -1, .max_size = -1, .qp_only = -1, .from = -1,
                                              .count = -1, .size_cap = -1, .corrupt = -1};

/* Flags that rebuild `c`: its seed, and whatever differs from the case that
 * seed draws on its own. */
static void case_flags(const struct wl_case *c, char *buf, size_t n) {
    char ops[96];
    size_t l = 0;
    struct wl_case pristine;
    if (c->integrity) integrity_case(c->seed, &g_caps, (int)c->qp_type, &no_overrides, &pristine);
    else case_from_seed(c->seed, &g_caps, g_budget, &no_overrides, &pristine);
    const struct wl_case *orig = &pristine;
    buf[0] = 0;
#define ADD(...) (l += (size_t)snprintf(buf + l, l < n ? n - l : 0, __VA_ARGS__))
    if (c->integrity) {
        ADD(" --integrity-only %s", qpt_name[c->qp_type]);
        if (c->seed != 1) ADD(" --integrity-seed %llu", (unsigned long long)c->seed);
    } else {
        ADD(" --seed %llu", (unsigned long long)c->seed);
        if (g_budget != DEFAULT_BUDGET) ADD(" --budget %u", g_budget);
        if (c->qp_type != orig->qp_type) ADD(" --qp-type %s", qpt_name[c->qp_type]);
        if (c->max_size != orig->max_size) ADD(" --max-size %u", c->max_size);
        if (c->op_mask != orig->op_mask) { ops_str(c->op_mask, ops, sizeof ops); ADD(" --ops %s", ops); }
    }
    if (c->mtu != orig->mtu) ADD(" --mtu %u", c->mtu);
    if (c->msgs != orig->msgs) ADD(" --msgs %u", c->msgs);
    if (c->nqps != orig->nqps) ADD(" --qps %u", c->nqps);
    if (c->qp_only >= 0) ADD(" --qp %d", c->qp_only);
    if (c->from != 0) ADD(" --from %u", c->from);
    if (c->count != c->msgs) ADD(" --count %u", c->count);
    if (c->ops_filter != ALL_OPS) { ops_str(c->ops_filter, ops, sizeof ops); ADD(" --only-ops %s", ops); }
    if (c->size_cap != MAX_SIZE) ADD(" --size-cap %u", c->size_cap);
    if (c->batch != orig->batch) ADD(" --batch %u", c->batch);
    if (c->sq_depth != orig->sq_depth) ADD(" --depth %u", c->sq_depth);
    if (c->max_sge != orig->max_sge) ADD(" --sges %u", c->max_sge);
    if (c->loss_ok & LOSS_OK) ADD(" --loss-ok");
    if (c->loss_ok & DUP_OK) ADD(" --dup-ok");
    if (c->no_empty_rdma) ADD(" --no-empty-rdma");
    if (c->corrupt >= 0) ADD(" --inject-corrupt %d", c->corrupt);
#undef ADD
}

static uint32_t executed(const struct wl_case *c) {
    uint32_t n = 0;
    for (uint32_t q = 0; q < c->nqps; q++) {
        struct plan_qp p;
        plan_build(c, q, &p);
        n += p.n;
        plan_free(&p);
    }
    return n;
}

/* Runs candidate t; adopts it as the best if it still fails. */
static int attempt(struct runner *rn, struct wl_case *best, const struct wl_case *t, char *last, size_t n, int *tries) {
    struct verdict v;
    if (!memcmp(t, best, sizeof *t) || executed(t) == 0) return 0;
    ++*tries;
    if (!run_case(rn, t, &v)) return 0;
    *best = *t;
    snprintf(last, n, "%s", v.first);
    return 1;
}

static void shrink(struct runner *rn, const struct wl_case *orig, const char *rerun_prefix) {
    struct wl_case best = *orig, t;
    struct verdict v;
    char last[512] = "";
    int tries = 0;
#define TRY(mutate) (t = best, mutate, attempt(rn, &best, &t, last, sizeof last, &tries))
    run_case(rn, &best, &v);
    snprintf(last, sizeof last, "%s", v.first);
    printf("shrinking %s %llu (%u messages): %s\n", orig->integrity ? "integrity case, seed" : "seed",
           (unsigned long long)orig->seed, executed(orig), last);
    if (!v.failed) {
        printf("the case passed when run again: nothing to shrink (a flaky failure?)\n");
        return;
    }
    for (int round = 0; round < 6; round++) {
        int changed = 0;
        /* One QP. */
        if (best.qp_only < 0 && best.nqps > 1)
            for (uint32_t q = 0; q < best.nqps && best.qp_only < 0; q++) changed |= TRY(t.qp_only = (int32_t)q);
        /* The message window: halves while one fails, then trim either end. */
        while (best.count > 1) {
            uint32_t h = best.count / 2;
            if (TRY(t.count = h) || TRY((t.from = best.from + h, t.count = best.count - h))) changed = 1;
            else break;
        }
        for (uint32_t step = best.count / 2; step >= 1; step /= 2) {
            while (best.count > step &&
                   (TRY(t.count = best.count - step) || TRY((t.from = best.from + step, t.count = best.count - step))))
                changed = 1;
        }
        /* The op mix: drop each operation in turn. */
        for (int o = 0; o < OP_COUNT; o++)
            if (best.ops_filter & BIT(o)) changed |= TRY(t.ops_filter = best.ops_filter & ~BIT(o));
        /* Sizes, queue shapes, SGEs. */
        uint32_t maxs = 0;
        for (uint32_t q = 0; q < best.nqps; q++) {
            struct plan_qp p;
            plan_build(&best, q, &p);
            for (uint32_t k = 0; k < p.n; k++) if (p.msg[k].m.size > maxs) maxs = p.msg[k].m.size;
            plan_free(&p);
        }
        if (maxs < best.size_cap) best.size_cap = maxs;
        while (best.size_cap > 0 && TRY(t.size_cap = best.size_cap / 2)) changed = 1;
        if (best.batch > 1) changed |= TRY(t.batch = 1);
        while (best.sq_depth > 1 && TRY(t.sq_depth = best.sq_depth / 2)) changed = 1;
        if (best.max_sge > 1) changed |= TRY(t.max_sge = 1);
        if (!changed) break;
    }
#undef TRY
    char flags[512], desc[256];
    case_flags(&best, flags, sizeof flags);
    describe(&best, desc, sizeof desc);
    printf("shrunk in %d runs to %u message(s): %s\n  %s\n", tries, executed(&best), desc, last);
    for (uint32_t q = 0; q < best.nqps; q++) {
        struct plan_qp p;
        plan_build(&best, q, &p);
        for (uint32_t k = 0; k < p.n; k++)
            printf("  QP %u message %u: %s %u B, %d SGEs%s\n", q, p.msg[k].idx, op_name[p.msg[k].m.op],
                   p.msg[k].m.size, p.msg[k].m.nsge,
                   p.msg[k].idx == best.msgs ? " (UC's closing marker)" : p.msg[k].m.inl ? ", inline if it fits" : "");
        plan_free(&p);
    }
    printf("rerun: %s%s SERVER\n", rerun_prefix, flags);
}

/* ------------------------------------------------------------------------ */

static void usage(void) {
    puts("usage: simnic-workload [options] [SERVER]\n"
         "  -d DEV  -g GIDX (default 1)  -i IBPORT (1)  -p TCPPORT (18520)\n"
         "client only (the server takes every case from the client):\n"
         "  --seed N | --seeds A-B     seeded random cases (default: none unless --integrity)\n"
         "  --integrity                the fixed integrity set (RC, UC, UD; all operations,\n"
         "                             sizes across the MTU, 1-4 SGEs)\n"
         "  --integrity-only RC|UC|UD[,...]  only these integrity cases\n"
         "  --integrity-seed N         the seed of the integrity set's payloads (default 1)\n"
         "  --loss-ok                  UC/UD: a lost message may be missing (a lossy wire)\n"
         "  --dup-ok                   --loss-ok, and UC/UD: a message may arrive twice (a wire that duplicates)\n"
         "  --no-empty-rdma            READ and WRITE of 0 bytes become 1 byte (a responder that mishandles them)\n"
         "  --stall S                  a QP with work outstanding is stuck after S seconds without a completion (default 20)\n"
         "  --shrink                   shrink the first failing case and print it\n"
         "  --budget BYTES             payload bytes per drawn case (default 1 MiB)\n"
         "  --qp-type RC|UC|UD --mtu N --qps N --msgs N --max-size N --ops LIST\n"
         "  --batch N --depth N --sges N  override what the seed draws\n"
         "  --qp Q --from I --count N --only-ops LIST --size-cap N  run part of a case\n"
         "  --inject-corrupt I         spoil message I's data on the requester (checker test)\n"
         "  --results FILE             append a results.jsonl line (kind workload)\n"
         "  --name S --target S --peer S --role S   its fields\n"
         "  -v                         one line per case");
}

static int qpt_parse(const char *s) {
    for (int t = 0; t < 3; t++)
        if (!strcasecmp(s, qpt_name[t])) return t;
    die("unknown QP type %s (RC, UC, UD)", s);
}

/* "RC", "UC,UD", ...: a mask of QP types (bit t for qpt_name[t]). */
static int qpt_mask_parse(const char *s) {
    char buf[64];
    snprintf(buf, sizeof buf, "%s", s);
    int mask = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
        mask |= 1 << qpt_parse(t);
    if (!mask) die("--integrity-only wants RC, UC, UD or a list of them");
    return mask;
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", *s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

int main(int argc, char **argv) {
    const char *devname = NULL, *server = NULL, *results = NULL, *name = NULL, *target = "", *peer = "", *role = "";
    int gidx = 1, ibport = 1, tcp = 18520, integ = 0, do_shrink = 0, verbose = 0, loss_ok = 0, integ_only = -1;
    uint64_t seed_lo = 0, seed_hi = 0, integ_seed = 1;
    int have_seeds = 0;
    uint32_t budget = DEFAULT_BUDGET;
    struct overrides o = {.qp_type = -1, .mtu = -1, .qps = -1, .msgs = -1, .batch = -1, .sges = -1, .depth = -1,
                          .max_size = -1, .qp_only = -1, .from = -1, .count = -1, .size_cap = -1, .corrupt = -1};
    enum { O_SEED = 256, O_SEEDS, O_INTEG, O_INTEG_ONLY, O_LOSS, O_DUP, O_SHRINK, O_BUDGET, O_QPT, O_MTU, O_QPS, O_MSGS,
           O_MAXSIZE, O_OPS, O_BATCH, O_DEPTH, O_SGES, O_QP, O_FROM, O_COUNT, O_ONLYOPS, O_SIZECAP, O_CORRUPT,
           O_RESULTS, O_NAME, O_INTEG_SEED, O_TARGET, O_PEER, O_ROLE, O_STALL, O_NO_EMPTY_RDMA };
    static const struct option lo[] = {
        {"seed", 1, 0, O_SEED}, {"seeds", 1, 0, O_SEEDS}, {"integrity", 0, 0, O_INTEG},
        {"integrity-only", 1, 0, O_INTEG_ONLY}, {"loss-ok", 0, 0, O_LOSS}, {"dup-ok", 0, 0, O_DUP}, {"shrink", 0, 0, O_SHRINK},
        {"budget", 1, 0, O_BUDGET}, {"qp-type", 1, 0, O_QPT}, {"mtu", 1, 0, O_MTU}, {"qps", 1, 0, O_QPS},
        {"msgs", 1, 0, O_MSGS}, {"max-size", 1, 0, O_MAXSIZE}, {"ops", 1, 0, O_OPS}, {"batch", 1, 0, O_BATCH},
        {"depth", 1, 0, O_DEPTH}, {"sges", 1, 0, O_SGES}, {"qp", 1, 0, O_QP}, {"from", 1, 0, O_FROM},
        {"count", 1, 0, O_COUNT}, {"only-ops", 1, 0, O_ONLYOPS}, {"size-cap", 1, 0, O_SIZECAP},
        {"inject-corrupt", 1, 0, O_CORRUPT}, {"results", 1, 0, O_RESULTS}, {"integrity-seed", 1, 0, O_INTEG_SEED}, {"name", 1, 0, O_NAME},
        {"target", 1, 0, O_TARGET}, {"peer", 1, 0, O_PEER}, {"role", 1, 0, O_ROLE}, {"stall", 1, 0, O_STALL},
        {"no-empty-rdma", 0, 0, O_NO_EMPTY_RDMA},
        {"help", 0, 0, 'h'},
        {0, 0, 0, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "d:g:i:p:vh", lo, NULL)) != -1) {
        switch (opt) {
        case 'd': devname = optarg; break;
        case 'g': gidx = atoi(optarg); break;
        case 'i': ibport = atoi(optarg); break;
        case 'p': tcp = atoi(optarg); break;
        case 'v': verbose = 1; break;
        case O_SEED: seed_lo = seed_hi = strtoull(optarg, NULL, 0); have_seeds = 1; break;
        case O_SEEDS: {
            char *e;
            seed_lo = strtoull(optarg, &e, 0);
            seed_hi = *e == '-' ? strtoull(e + 1, NULL, 0) : seed_lo;
            if (seed_hi < seed_lo) die("--seeds A-B wants A <= B");
            have_seeds = 1;
            break;
        }
        case O_INTEG: integ = 1; break;
        case O_INTEG_ONLY: integ_only = qpt_mask_parse(optarg); break;
        case O_LOSS: loss_ok |= LOSS_OK; break;
        case O_DUP: loss_ok |= LOSS_OK | DUP_OK; break;
        case O_SHRINK: do_shrink = 1; break;
        case O_BUDGET: budget = (uint32_t)strtoul(optarg, NULL, 0); break;
        case O_QPT: o.qp_type = qpt_parse(optarg); break;
        case O_MTU: o.mtu = atoi(optarg); break;
        case O_QPS: o.qps = atoi(optarg); break;
        case O_MSGS: o.msgs = atoi(optarg); break;
        case O_MAXSIZE: o.max_size = atoi(optarg); break;
        case O_OPS: o.ops = parse_ops(optarg); break;
        case O_BATCH: o.batch = atoi(optarg); break;
        case O_DEPTH: o.depth = atoi(optarg); break;
        case O_SGES: o.sges = atoi(optarg); break;
        case O_QP: o.qp_only = atoi(optarg); break;
        case O_FROM: o.from = atoi(optarg); break;
        case O_COUNT: o.count = atoi(optarg); break;
        case O_ONLYOPS: o.ops_filter = parse_ops(optarg); break;
        case O_SIZECAP: o.size_cap = atoi(optarg); break;
        case O_CORRUPT: o.corrupt = atoi(optarg); break;
        case O_RESULTS: results = optarg; break;
        case O_INTEG_SEED: integ_seed = strtoull(optarg, NULL, 0); break;
        case O_NAME: name = optarg; break;
        case O_TARGET: target = optarg; break;
        case O_PEER: peer = optarg; break;
        case O_ROLE: role = optarg; break;
        case O_STALL: g_stall = atof(optarg); break;
        case O_NO_EMPTY_RDMA: o.no_empty_rdma = 1; break;
        case 'h': usage(); return 0;
        default: usage(); return 2;
        }
    }
    if (optind < argc) server = argv[optind];
    if (o.batch > MAX_BATCH || o.sges > MAX_SGE || o.qps > MAX_QPS || o.depth > MAX_DEPTH || o.msgs > MAX_MSGS ||
        o.max_size > (int)MAX_SIZE)
        die("an override is beyond the program's limits (batch %d, sges %d, qps %d, depth %d, msgs %d, size %u)",
            MAX_BATCH, MAX_SGE, MAX_QPS, MAX_DEPTH, MAX_MSGS, MAX_SIZE);

    signal(SIGPIPE, SIG_IGN); /* a peer gone mid-write is an error, not a death */
    struct dev d;
    memset(&d, 0, sizeof d);
    dev_open(&d, devname, ibport, gidx);
    setvbuf(stdout, NULL, _IOLBF, 0);

    if (!server) {
        int fd = tcp_accept(tcp);
        struct caps theirs;
        send_msg(fd, M_HELLO, &d.caps, sizeof d.caps);
        recv_msg(fd, M_HELLO, &theirs, sizeof theirs);
        int cases = 0;
        for (;;) {
            uint32_t h[2];
            xfer(fd, h, sizeof h, 0);
            if (h[0] == M_END) break;
            struct wl_case c;
            if (h[0] != M_CASE || h[1] != sizeof c) die("side channel: expected a case");
            xfer(fd, &c, sizeof c, 0);
            if (c.nqps < 1 || c.nqps > MAX_QPS || c.msgs > MAX_MSGS || c.max_sge < 1 || c.max_sge > MAX_SGE ||
                c.batch < 1 || c.batch > MAX_BATCH || c.sq_depth < 1 || c.qp_type > T_UD)
                die("side channel: a case out of range");
            server_case(fd, &d, &c);
            cases++;
        }
        printf("simnic-workload server: %d cases served\n", cases);
        return 0;
    }

    if (!have_seeds && !integ && integ_only < 0) { integ = 1; }
    struct caps theirs, both;
    int fd = tcp_connect(server, tcp, &theirs, sizeof theirs);
    send_msg(fd, M_HELLO, &d.caps, sizeof d.caps);
    both = d.caps;
#define MIN_INTO(f) if (theirs.f < both.f) both.f = theirs.f
    MIN_INTO(mtu); MIN_INTO(max_qp_wr); MIN_INTO(max_sge); MIN_INTO(max_rd_atom); MIN_INTO(atomics);
#undef MIN_INTO
    g_caps = both;
    g_budget = budget;
    struct runner rn = {.fd = fd, .d = &d};
    double t0 = now_s();
    int ncases = 0, nfail = 0, shrunk = 0;
    uint64_t msgs = 0, bytes = 0, lost = 0, dups = 0;
    char failing[256] = "", first_fail[512] = "";
    char prefix[512];
    snprintf(prefix, sizeof prefix, "%s%s%s -g %d -p %d", argv[0], devname ? " -d " : "", devname ? devname : "",
             gidx, tcp);

    struct wl_case list[3 + 4096];
    int n = 0;
    if (integ || integ_only >= 0)
        for (int t = 0; t < 3; t++)
            if (integ_only < 0 || (integ_only >> t & 1)) integrity_case(integ_seed, &both, t, &o, &list[n++]);
    int seeds_at = n;
    for (uint64_t s = seed_lo; have_seeds && s <= seed_hi && n < (int)(sizeof list / sizeof list[0]); s++)
        case_from_seed(s, &both, budget, &o, &list[n++]);
    (void)seeds_at;
    for (int k = 0; k < n; k++) {
        list[k].loss_ok = (uint32_t)loss_ok;
        struct verdict v;
        double t1 = now_s();
        int bad = run_case(&rn, &list[k], &v);
        ncases++;
        msgs += v.msgs;
        bytes += v.bytes;
        lost += v.lost;
        dups += v.dups;
        char desc[256];
        describe(&list[k], desc, sizeof desc);
        if (verbose || bad)
            printf("%s %llu: %s: %s, %llu messages, %llu bytes, %llu lost, %.2f s\n",
                   list[k].integrity ? "integrity" : "seed", (unsigned long long)list[k].seed, bad ? "FAIL" : "pass",
                   desc, (unsigned long long)v.msgs, (unsigned long long)v.bytes, (unsigned long long)v.lost,
                   now_s() - t1);
        if (bad) {
            printf("  %s\n", v.first);
            char flags[512];
            case_flags(&list[k], flags, sizeof flags);
            printf("  rerun: %s%s SERVER\n", prefix, flags);
            if (!nfail) snprintf(first_fail, sizeof first_fail, "%s", v.first);
            nfail++;
            size_t l = strlen(failing);
            if (l < sizeof failing - 24)
                snprintf(failing + l, sizeof failing - l, "%s%s%llu", l ? " " : "", list[k].integrity ? "integrity-" : "",
                         (unsigned long long)list[k].seed);
            if (do_shrink && !shrunk) {
                shrink(&rn, &list[k], prefix);
                shrunk = 1;
            }
        }
    }
    send_msg(fd, M_END, NULL, 0);
    double secs = now_s() - t0;
    char detail[1024];
    snprintf(detail, sizeof detail, "%d cases (%s%s), %d failed%s%s; %llu messages, %llu bytes%s in %.1f s%s%s", ncases,
             integ || integ_only >= 0 ? "integrity set" : "", have_seeds ? (integ || integ_only >= 0 ? " + seeds" : "seeds") : "",
             nfail, nfail ? ": " : "", failing, (unsigned long long)msgs, (unsigned long long)bytes,
             loss_ok ? "" : "", secs, nfail ? "; first: " : "", nfail ? first_fail : "");
    if (loss_ok) {
        size_t l = strlen(detail);
        snprintf(detail + l, sizeof detail - l, "; UC/UD messages lost: %llu, UC/UD duplicates: %llu",
                 (unsigned long long)lost, (unsigned long long)dups);
    }
    printf("simnic-workload: %s: %s\n", nfail ? "FAIL" : "pass", detail);
    if (results) {
        char nm[128];
        if (!name) {
            if (have_seeds)
                snprintf(nm, sizeof nm, "%sseeds %llu-%llu%s", integ || integ_only >= 0 ? "integrity + " : "",
                         (unsigned long long)seed_lo, (unsigned long long)seed_hi, loss_ok ? " (loss ok)" : "");
            else
                snprintf(nm, sizeof nm, "integrity set%s", loss_ok ? " (loss ok)" : "");
            name = nm;
        }
        FILE *f = fopen(results, "a");
        if (!f) die("cannot append to %s: %s", results, strerror(errno));
        fprintf(f, "{\"kind\": \"workload\", \"name\": ");
        json_str(f, name);
        fprintf(f, ", \"target\": ");
        json_str(f, target);
        fprintf(f, ", \"peer\": ");
        json_str(f, peer);
        fprintf(f, ", \"mtu\": %u, \"role\": ", both.mtu);
        json_str(f, role);
        fprintf(f, ", \"result\": \"%s\", \"detail\": ", nfail ? "fail" : "pass");
        json_str(f, detail);
        fprintf(f, ", \"reason\": \"\"}\n");
        fclose(f);
    }
    return nfail ? 1 : 0;
}
