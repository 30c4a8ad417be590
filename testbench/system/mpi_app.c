/* A small MPI program for simnic devices under Open MPI over UCX (issue 11):
 * point-to-point ping-pong between rank 0 and every other rank at sizes of
 * 1 B to 4 MiB, each message's bytes checked; an allreduce checked against
 * its closed form; one-sided put and get in a window, checked. Prints one
 * line per part from rank 0 and "mpi_app: ok" at the end; any mismatch
 * aborts with the first wrong byte.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BYTES (4u << 20)

static int rank, size;

static void die(const char* what, size_t at, unsigned got, unsigned want) {
    fprintf(stderr, "mpi_app: rank %d: %s: byte %zu is 0x%02x, not 0x%02x\n", rank, what, at, got, want);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

/* The byte at `i` of a message of `n` bytes from `from`, round `r`. */
static unsigned char pattern(size_t i, size_t n, int from, int r) {
    return (unsigned char)((i * 131u) ^ (n * 7u) ^ ((unsigned)from << 4) ^ (unsigned)r);
}

static void fill(unsigned char* b, size_t n, int from, int r) {
    for (size_t i = 0; i < n; ++i) b[i] = pattern(i, n, from, r);
}

static void check(const char* what, const unsigned char* b, size_t n, int from, int r) {
    for (size_t i = 0; i < n; ++i)
        if (b[i] != pattern(i, n, from, r)) die(what, i, b[i], pattern(i, n, from, r));
}

static void pingpong(unsigned char* buf) {
    for (size_t n = 1; n <= MAX_BYTES; n *= 4) {
        const int rounds = n >= (1u << 20) ? 3 : 10;
        double t0 = MPI_Wtime();
        for (int peer = 1; peer < size; ++peer) {
            for (int r = 0; r < rounds; ++r) {
                if (rank == 0) {
                    fill(buf, n, 0, r);
                    MPI_Send(buf, (int)n, MPI_BYTE, peer, r, MPI_COMM_WORLD);
                    MPI_Recv(buf, (int)n, MPI_BYTE, peer, r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    check("pong", buf, n, peer, r);
                } else if (rank == peer) {
                    MPI_Recv(buf, (int)n, MPI_BYTE, 0, r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    check("ping", buf, n, 0, r);
                    fill(buf, n, peer, r);
                    MPI_Send(buf, (int)n, MPI_BYTE, 0, r, MPI_COMM_WORLD);
                }
            }
        }
        if (rank == 0)
            printf("pingpong %zu bytes: %.1f us per round trip\n", n,
                   (MPI_Wtime() - t0) * 1e6 / (double)(rounds * (size - 1)));
    }
}

static void allreduce(void) {
    enum { N = 1024 };
    static int64_t in[N], out[N];
    for (int i = 0; i < N; ++i) in[i] = (int64_t)rank * N + i;
    MPI_Allreduce(in, out, N, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    /* sum over ranks of (rank * N + i) */
    for (int i = 0; i < N; ++i) {
        const int64_t want = (int64_t)N * size * (size - 1) / 2 + (int64_t)i * size;
        if (out[i] != want) {
            fprintf(stderr, "mpi_app: rank %d: allreduce[%d] = %lld, not %lld\n", rank, i, (long long)out[i],
                    (long long)want);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (rank == 0) printf("allreduce of %d int64 over %d ranks: ok\n", N, size);
}

static void one_sided(void) {
    const size_t n = 64 * 1024;
    unsigned char* base;
    MPI_Win win;
    MPI_Win_allocate((MPI_Aint)(n * (size_t)size), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    memset(base, 0, n * (size_t)size);
    unsigned char* mine = malloc(n);
    unsigned char* got = malloc(n);
    fill(mine, n, rank, 99);
    /* Every rank puts its block into slot `rank` of the next rank's window. */
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Win_fence(0, win);
    MPI_Put(mine, (int)n, MPI_BYTE, next, (MPI_Aint)(n * (size_t)rank), (int)n, MPI_BYTE, win);
    MPI_Win_fence(0, win);
    check("put", base + n * (size_t)prev, n, prev, 99);
    /* And gets back what it put there. */
    MPI_Get(got, (int)n, MPI_BYTE, next, (MPI_Aint)(n * (size_t)rank), (int)n, MPI_BYTE, win);
    MPI_Win_fence(0, win);
    check("get", got, n, rank, 99);
    MPI_Win_free(&win);
    free(mine);
    free(got);
    if (rank == 0) printf("one-sided put and get of %zu bytes: ok\n", n);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    unsigned char* buf = malloc(MAX_BYTES);
    if (!buf) MPI_Abort(MPI_COMM_WORLD, 1);
    pingpong(buf);
    allreduce();
    one_sided();
    free(buf);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("mpi_app: ok\n");
    MPI_Finalize();
    return 0;
}
