// The kernel's own ceiling for the soft device's default path: UDP
// datagrams of a RoCE packet's size (BTH + 4096-byte payload + ICRC) sent
// over lo by one thread with sendmmsg and received by another with
// recvmmsg, with no RDMA work at all. A soft device does this plus reading
// and writing the applications' memory and the ICRC, so its ib_write_bw
// through the kernel stays below this figure (scripts/bench-soft.sh prints
// both).
//   simnic_bench_udp_lo [SECONDS] [DATAGRAM_BYTES] [BATCH]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
    const double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
    const size_t size = argc > 2 ? size_t(std::atol(argv[2])) : 12 + 4096 + 4;
    const int batch = argc > 3 ? std::atoi(argv[3]) : 16;
    if (seconds <= 0 || size == 0 || size > 65000 || batch < 1 || batch > 64) {
        std::fprintf(stderr, "usage: simnic_bench_udp_lo [SECONDS>0] [DATAGRAM_BYTES 1..65000] [BATCH 1..64]\n");
        return 2;
    }
    const int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
    const int big = 16 << 20;
    setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    setsockopt(tx, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // port 0: the kernel picks one
    socklen_t alen = sizeof a;
    if (rx < 0 || tx < 0 || bind(rx, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        getsockname(rx, reinterpret_cast<sockaddr*>(&a), &alen) != 0) {
        std::perror("simnic_bench_udp_lo: socket");
        return 1;
    }
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
        }
    });
    std::vector<char> payload(size, 0x5a);
    std::vector<mmsghdr> m(static_cast<size_t>(batch));
    std::vector<iovec> iv(static_cast<size_t>(batch));
    uint64_t sent = 0, full = 0;
    const auto t0 = std::chrono::steady_clock::now();
    const auto end = t0 + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
        for (size_t i = 0; i < size_t(batch); ++i) {
            iv[i] = iovec{payload.data(), size};
            m[i] = mmsghdr{};
            m[i].msg_hdr.msg_name = &a;
            m[i].msg_hdr.msg_namelen = sizeof a;
            m[i].msg_hdr.msg_iov = &iv[i];
            m[i].msg_hdr.msg_iovlen = 1;
        }
        const int n = sendmmsg(tx, m.data(), unsigned(batch), MSG_DONTWAIT);
        if (n > 0) sent += uint64_t(n) * size;
        else ++full;
    }
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    stop = true;
    receiver.join();
    std::printf("UDP over lo, %zu-byte datagrams, batches of %d: sent %.2f Gb/s, received %.2f Gb/s "
                "(%llu full-buffer retries)\n",
                size, batch, double(sent) * 8 / dt / 1e9, double(received.load()) * 8 / dt / 1e9,
                static_cast<unsigned long long>(full));
    close(rx);
    close(tx);
    return 0;
}
