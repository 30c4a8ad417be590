// The machine's own limits, measured in the same run as the RDMA benchmarks
// they bound (scripts/bench-soft.sh prints every figure beside its ratio to
// one of these). Absolute times on a shared machine move by tens of percent
// from hour to hour; a ratio to a limit measured minutes apart does not.
//
//   simnic_bench_limits pingpong busy|block [PAYLOAD_BYTES] [ROUND_TRIPS]
//       Two processes exchange one UDP datagram at a time over lo, as
//       ib_send_lat's two processes exchange one SEND. Prints the typical
//       (median) half round trip in microseconds, as perftest's t_typical.
//       busy: each side polls its socket with MSG_DONTWAIT (yielding the CPU
//       between polls, so that one core shared by both still makes progress),
//       as perftest polls its CQ; block: each side sleeps in recv(), as an
//       application sleeping in ibv_get_cq_event does.
//   simnic_bench_limits ceiling [SECONDS] [DATAGRAM_BYTES] [BATCH]
//       The kernel's UDP one-way ceiling over lo at a RoCE packet's size: one
//       thread sends with sendmmsg, BATCH datagrams per system call, another
//       busy-polls recvmmsg. Prints the received rate in Gb/s. A soft device's
//       default path does this plus the RDMA work.
//   simnic_bench_limits memcpy [MIB] [SECONDS]
//       One thread's memcpy bandwidth between two MIB-MiB buffers (larger
//       than the caches), in Gb/s: what `loopback on`, which copies payload
//       twice per message with no kernel in between, is bounded by.
//
// Each mode prints one line: "<name> <value>", for scripts to read.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

int usage() {
    std::fprintf(stderr,
                 "usage: simnic_bench_limits pingpong busy|block [PAYLOAD_BYTES] [ROUND_TRIPS]\n"
                 "       simnic_bench_limits ceiling [SECONDS] [DATAGRAM_BYTES] [BATCH]\n"
                 "       simnic_bench_limits memcpy [MIB] [SECONDS]\n");
    return 2;
}

// A UDP socket bound to 127.0.0.1 on a port the kernel picks; its address in *a.
int bound_socket(sockaddr_in* a) {
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    *a = sockaddr_in{};
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof *a;
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(a), sizeof *a) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(a), &len) != 0) {
        std::perror("simnic_bench_limits: socket");
        std::exit(1);
    }
    return fd;
}

// Waits for one datagram on fd, polling or sleeping.
void receive(int fd, bool busy, char* buf, size_t size) {
    for (;;) {
        const ssize_t n = recv(fd, buf, size, busy ? MSG_DONTWAIT : 0);
        if (n >= 0) return;
        if (busy) sched_yield();
    }
}

int pingpong(bool busy, size_t payload, int round_trips) {
    sockaddr_in a{}, b{};
    const int fa = bound_socket(&a), fb = bound_socket(&b);
    if (connect(fa, reinterpret_cast<sockaddr*>(&b), sizeof b) != 0 ||
        connect(fb, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        std::perror("simnic_bench_limits: connect");
        return 1;
    }
    const int warmup = std::max(100, round_trips / 10);
    std::vector<char> buf(std::max<size_t>(payload, 1));
    const pid_t peer = fork();
    if (peer == 0) {  // the echoing side, as ib_send_lat's server
        for (int i = 0; i < warmup + round_trips; ++i) {
            receive(fb, busy, buf.data(), buf.size());
            if (send(fb, buf.data(), payload, 0) < 0) _exit(1);
        }
        _exit(0);
    }
    std::vector<double> half(static_cast<size_t>(round_trips));
    for (int i = 0; i < warmup + round_trips; ++i) {
        const auto t0 = Clock::now();
        if (send(fa, buf.data(), payload, 0) < 0) {
            std::perror("simnic_bench_limits: send");
            return 1;
        }
        receive(fa, busy, buf.data(), buf.size());
        if (i >= warmup)
            half[size_t(i - warmup)] = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / 2;
    }
    int status = 0;
    waitpid(peer, &status, 0);
    std::nth_element(half.begin(), half.begin() + round_trips / 2, half.end());
    std::printf("udp_pingpong_%s_half_rtt_us %.2f\n", busy ? "busy" : "block", half[size_t(round_trips / 2)]);
    return 0;
}

int ceiling(double seconds, size_t size, int batch) {
    sockaddr_in a{};
    const int rx = bound_socket(&a);
    const int tx = socket(AF_INET, SOCK_DGRAM, 0);
    const int big = 16 << 20;
    setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    setsockopt(tx, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> received{0};
    std::thread receiver([&] {
        std::vector<std::vector<char>> bufs(64, std::vector<char>(65536));
        mmsghdr m[64];
        iovec iv[64];
        while (!stop.load(std::memory_order_relaxed)) {
            for (int i = 0; i < 64; ++i) {
                iv[i] = iovec{bufs[size_t(i)].data(), bufs[size_t(i)].size()};
                m[i] = mmsghdr{};
                m[i].msg_hdr.msg_iov = &iv[i];
                m[i].msg_hdr.msg_iovlen = 1;
            }
            const int n = recvmmsg(rx, m, 64, MSG_DONTWAIT, nullptr);
            for (int i = 0; i < n; ++i) received.fetch_add(m[i].msg_len, std::memory_order_relaxed);
            if (n <= 0) sched_yield();  // one core shared with the sender still progresses
        }
    });
    std::vector<char> payload(size, 0x5a);
    std::vector<mmsghdr> m(static_cast<size_t>(batch));
    std::vector<iovec> iv(static_cast<size_t>(batch));
    const auto t0 = Clock::now();
    const auto end = t0 + std::chrono::duration<double>(seconds);
    while (Clock::now() < end) {
        for (size_t i = 0; i < size_t(batch); ++i) {
            iv[i] = iovec{payload.data(), size};
            m[i] = mmsghdr{};
            m[i].msg_hdr.msg_name = &a;
            m[i].msg_hdr.msg_namelen = sizeof a;
            m[i].msg_hdr.msg_iov = &iv[i];
            m[i].msg_hdr.msg_iovlen = 1;
        }
        if (sendmmsg(tx, m.data(), unsigned(batch), MSG_DONTWAIT) <= 0) sched_yield();
    }
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    stop = true;
    receiver.join();
    std::printf("udp_ceiling_gbits %.2f\n", double(received.load()) * 8 / dt / 1e9);
    return 0;
}

int memcpy_bw(size_t mib, double seconds) {
    const size_t size = mib << 20;
    std::vector<char> src(size, 0x5a), dst(size, 0);
    uint64_t copied = 0;
    const auto t0 = Clock::now();
    const auto end = t0 + std::chrono::duration<double>(seconds);
    while (Clock::now() < end) {
        std::memcpy(dst.data(), src.data(), size);
        copied += size;
        src[copied % size] ^= dst[(copied + 1) % size];  // keeps the copies from being elided
    }
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf("memcpy_gbits %.2f\n", double(copied) * 8 / dt / 1e9);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) return usage();
    const std::string mode = argv[1];
    auto arg = [&](int i, double dflt) { return argc > i ? std::atof(argv[i]) : dflt; };
    if (mode == "pingpong" && argc >= 3) {
        const std::string how = argv[2];
        const double payload = arg(3, 64), trips = arg(4, 20000);
        if ((how != "busy" && how != "block") || payload < 1 || payload > 65000 || trips < 1) return usage();
        return pingpong(how == "busy", size_t(payload), int(trips));
    }
    if (mode == "ceiling") {
        // A RoCE packet of a 4096-byte MTU: BTH, payload, ICRC.
        const double seconds = arg(2, 2), size = arg(3, 12 + 4096 + 4), batch = arg(4, 16);
        if (seconds <= 0 || size < 1 || size > 65000 || batch < 1 || batch > 64) return usage();
        return ceiling(seconds, size_t(size), int(batch));
    }
    if (mode == "memcpy") {
        const double mib = arg(2, 64), seconds = arg(3, 1);
        if (mib < 1 || mib > 4096 || seconds <= 0) return usage();
        return memcpy_bw(size_t(mib), seconds);
    }
    return usage();
}
