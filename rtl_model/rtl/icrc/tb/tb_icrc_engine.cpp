// Verilator testbench for icrc_engine: RTL against the C++ packet core.
//
// Stimulus (seeded; --seed N or SIMNIC_SEED=N, printed at start):
//   - random frames of every opcode from PacketGen (encode_frame), IPv4/IPv6,
//     with and without VLAN, payloads 0..4096, plus "unaligned" frames (pad
//     not matching the payload) so that every frame length modulo the beat
//     width is seen;
//   - every vector of packet_core_vectors(), including bad-ICRC ones;
//   - frames with one flipped bit in the ICRC-covered, unmasked bytes (the
//     ok bit must drop) and with a flipped bit anywhere (RTL must equal the
//     reference, whatever it says);
//   - frames the engine must flag: not IP, IPv4 IHL < 5, too short.
// Frames are driven back to back (one beat every cycle, no idle cycle
// between frames), then again with random idle cycles, and bytes outside
// tkeep are random garbage. Each result must come a fixed number of cycles
// after the frame's last beat. Exit status is non-zero on the first mismatch,
// after printing the frame in hex.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "Vicrc_engine.h"
#include "Vicrc_engine___024root.h"
#include "packet_gen.h"
#include "simnic/roce/bytes.h"
#include "simnic/roce/icrc.h"
#include "simnic/roce/packet.h"
#include "tb_fail.h"
#include "tb_run.h"
#include "verilated_block.h"
#include "vectors.h"

#ifndef TB_DATA_WIDTH
#error "TB_DATA_WIDTH must match the verilated DataWidth"
#endif

namespace {

using namespace simnic;
using roce::IpVersion;

constexpr size_t kBeatBytes = TB_DATA_WIDTH / 8;
constexpr unsigned log2u(size_t v) { return v <= 1 ? 0 : 1 + log2u(v / 2); }
// The RTL's documented latency: one register per tail stage, plus the output.
constexpr uint64_t kLatency = log2u(kBeatBytes) + 1;
static_assert(kBeatBytes >= 32 && (kBeatBytes & (kBeatBytes - 1)) == 0);

// ---- Reference ---------------------------------------------------------------

struct Expect {
    uint32_t icrc = 0;
    bool ok = false;
    bool err = false;
};

// Where the IP and UDP headers are, found from the bytes the same way the
// RTL finds them (ethertype after an optional tag, IPv4 IHL), so that frames
// the packet core refuses (unaligned, corrupted) still have a reference.
struct Layout {
    bool err = true;
    size_t l3 = 0, l4 = 0;
    IpVersion ver = IpVersion::V4;
};

Layout layout_of(const std::vector<uint8_t>& f) {
    Layout l;
    if (f.size() < 19) return l;
    uint16_t et = roce::load_be16(&f[12]);
    l.l3 = 14;
    if (et == roce::kEtherTypeVlan) {
        et = roce::load_be16(&f[16]);
        l.l3 = 18;
    }
    const unsigned ihl = f[l.l3] & 0x0f;
    if (et == roce::kEtherTypeIpv4) {
        if (ihl < 5) return l;
        l.ver = IpVersion::V4;
        l.l4 = l.l3 + ihl * 4;
    } else if (et == roce::kEtherTypeIpv6) {
        l.ver = IpVersion::V6;
        l.l4 = l.l3 + roce::kIpv6HdrBytes;
    } else {
        return l;
    }
    l.err = f.size() < l.l4 + roce::kUdpHdrBytes + roce::kBthBytes + roce::kIcrcBytes;
    return l;
}

Expect reference(const std::vector<uint8_t>& f) {
    Expect e;
    const Layout l = layout_of(f);
    if (l.err) {
        e.err = true;
        return e;
    }
    e.icrc = roce::compute_icrc(f.data(), f.size(), l.l3, l.l4, l.ver);
    e.ok = e.icrc == roce::load_le32(&f[f.size() - 4]);
    return e;
}

using tb::fail;

// ---- Jobs ----------------------------------------------------------------------

struct Job {
    std::string name;
    std::vector<uint8_t> frame;
    Expect exp;
};

// Check the reference against decode_frame() wherever the packet core
// accepts the frame, so that the offsets rule above cannot drift from it.
void cross_check(const Job& j, bool must_decode) {
    roce::Packet pkt;
    const roce::DecodeResult r = roce::decode_frame(j.frame.data(), j.frame.size(), pkt);
    const bool decoded = r.ok() || r.error == roce::DecodeError::BadIcrc;
    if (must_decode && !decoded)
        fail(j.name + ": packet core refused a generated frame: " + roce::to_string(r.error),
             &j.frame);
    if (!decoded) return;
    if (j.exp.err || r.computed_icrc != j.exp.icrc || j.exp.ok != r.ok())
        fail(j.name + ": tb reference disagrees with decode_frame()", &j.frame);
}

// ---- Harness -------------------------------------------------------------------

struct Stats {
    uint64_t frames = 0, beats = 0, cycles = 0, stall_cycles = 0;
};

class Harness {
public:
    Harness(VerilatedContext* ctx, uint64_t seed) : dut_(ctx), rng_(seed) {
        rtl::reset_top(*dut_, [this] { tick(); });
    }

    // Drive the jobs in order; idle_prob > 0 inserts 1..4 idle cycles before
    // a beat with that probability (also inside frames).
    Stats run(const std::vector<Job>& jobs, double idle_prob) {
        Stats s;
        const uint64_t start = dut_.cycles();
        std::bernoulli_distribution idle(idle_prob);
        std::uniform_int_distribution<int> idle_len(1, 4);
        for (size_t k = 0; k < jobs.size(); ++k) {
            const std::vector<uint8_t>& f = jobs[k].frame;
            const size_t nbeats = (f.size() + kBeatBytes - 1) / kBeatBytes;
            for (size_t b = 0; b < nbeats; ++b) {
                if (idle_prob > 0 && idle(rng_)) {
                    for (int i = idle_len(rng_); i > 0; --i) {
                        dut_->s_axis_tvalid_i = 0;
                        fill_garbage();
                        tick();
                    }
                }
                const size_t off = b * kBeatBytes;
                const size_t n = std::min(kBeatBytes, f.size() - off);
                rtl::load_beat(*dut_, kBeatBytes, &f[off], n, [this] { return static_cast<uint8_t>(rng_()); });
                dut_->s_axis_tvalid_i = 1;
                dut_->s_axis_tlast_i = b + 1 == nbeats;
                // Accepted at the next edge if ready; the engine never stalls,
                // so a low ready is counted and the beat held.
                while (!dut_->s_axis_tready_o) {
                    ++s.stall_cycles;
                    tick();
                }
                if (b + 1 == nbeats) pending_.push_back({&jobs[k], dut_.cycles() + 1});
                tick();
                ++s.beats;
            }
            ++s.frames;
        }
        dut_->s_axis_tvalid_i = 0;
        s.cycles = dut_.cycles() - start;  // up to and including the last beat
        for (uint64_t i = 0; i < kLatency + 4 && !pending_.empty(); ++i) tick();
        if (!pending_.empty()) fail("results missing after the last frame: " + pending_.front().job->name);
        return s;
    }

    uint64_t cycles() const { return dut_.cycles(); }
    uint64_t latency_min() const { return lat_min_; }
    uint64_t latency_max() const { return lat_max_; }

private:
    struct Pending {
        const Job* job;
        uint64_t accept_cycle;  // the edge that took the last beat
    };

    void fill_garbage() {
        for (size_t w = 0; w < kBeatBytes / 4; ++w) dut_->s_axis_tdata_i[w] = static_cast<uint32_t>(rng_());
        dut_->s_axis_tlast_i = rng_() & 1;
        rtl::set_keep(dut_->s_axis_tkeep_i, rng_() % (kBeatBytes + 1));
    }

    void tick() {
        dut_.tick([this] { check_output(); });
    }

    void check_output() {
        if (!dut_->m_valid_o) return;
        if (pending_.empty()) fail("m_valid_o without a frame in flight");
        const Pending p = pending_.front();
        pending_.pop_front();
        const Job& j = *p.job;
        const uint64_t lat = dut_.cycles() - p.accept_cycle;
        lat_min_ = std::min(lat_min_, lat);
        lat_max_ = std::max(lat_max_, lat);
        char buf[256];
        if (lat != kLatency) {
            std::snprintf(buf, sizeof buf, "%s: latency %" PRIu64 " cycles, expected %" PRIu64,
                          j.name.c_str(), lat, kLatency);
            fail(buf, &j.frame);
        }
        const bool err = dut_->m_err_o;
        const bool ok = dut_->m_icrc_ok_o;
        const uint32_t icrc = dut_->m_icrc_o;
        if (err != j.exp.err || ok != j.exp.ok || (!j.exp.err && icrc != j.exp.icrc)) {
            std::snprintf(buf, sizeof buf,
                          "%s: RTL icrc=%08x ok=%d err=%d, reference icrc=%08x ok=%d err=%d",
                          j.name.c_str(), icrc, ok, err, j.exp.icrc, j.exp.ok, j.exp.err);
            fail(buf, &j.frame);
        }
    }

    // Clocked as the model clocks it (rising edges only, verilated_block.h),
    // so that the checks on every cycle cover that too.
    rtl::VerilatedBlock<Vicrc_engine, true> dut_;
    std::mt19937_64 rng_;
    std::deque<Pending> pending_;
    uint64_t lat_min_ = ~uint64_t{0}, lat_max_ = 0;
};

// ---- Stimulus ------------------------------------------------------------------

struct Coverage {
    std::map<uint8_t, unsigned> opcodes;
    std::vector<unsigned> len_mod = std::vector<unsigned>(kBeatBytes);   // frame length mod B
    std::vector<unsigned> tail_mod = std::vector<unsigned>(kBeatBytes);  // covered bytes mod B
    unsigned l2l3[2][2] = {};  // [vlan][ipv6]
    unsigned icrc_straddles = 0, single_beat = 0, ip_options = 0, corrupted = 0,
             bad_vectors = 0, errors = 0;

    void add(const std::vector<uint8_t>& f) {
        const Layout l = layout_of(f);
        if (l.err) return;
        len_mod[f.size() % kBeatBytes]++;
        tail_mod[(f.size() - l.l3 - 4) % kBeatBytes]++;
        l2l3[l.l3 == 18][l.ver == IpVersion::V6]++;
        const size_t last_n = (f.size() - 1) % kBeatBytes + 1;
        if (last_n < 4) icrc_straddles++;
        if (f.size() <= kBeatBytes) single_beat++;
        if (l.ver == IpVersion::V4 && l.l4 - l.l3 > 20) ip_options++;
    }
};

Job job_from(std::string name, std::vector<uint8_t> frame) {
    Job j{std::move(name), std::move(frame), {}};
    j.exp = reference(j.frame);
    return j;
}

// A copy of f with one bit flipped in a byte the ICRC covers and no mask
// forces (nor the IHL nibble, which moves the masks): the ok bit must drop.
Job corrupt_covered(const Job& src, std::mt19937_64& rng) {
    const Layout l = layout_of(src.frame);
    std::vector<size_t> bits;
    auto masked = [&](size_t byte, unsigned bit) {
        const size_t ip = byte - l.l3;
        const size_t l4 = l.l4 - l.l3;
        if (byte >= l.l3 && ip < l4) {
            if (l.ver == IpVersion::V4)
                return ip == 1 || ip == 8 || ip == 10 || ip == 11 || (ip == 0 && bit < 4);
            return (ip == 0 && bit < 4) || (ip >= 1 && ip <= 3) || ip == 7;
        }
        return ip == l4 + 6 || ip == l4 + 7 || ip == l4 + 8 + 4;
    };
    size_t byte;
    unsigned bit;
    do {
        byte = l.l3 + rng() % (src.frame.size() - l.l3);
        bit = rng() % 8;
    } while (masked(byte, bit));
    Job j{src.name + "+flip@" + std::to_string(byte) + "." + std::to_string(bit), src.frame, {}};
    j.frame[byte] ^= static_cast<uint8_t>(1u << bit);
    j.exp = reference(j.frame);
    if (j.exp.ok || j.exp.err) fail("corruption did not change the reference ICRC", &j.frame);
    return j;
}

Job corrupt_anywhere(const Job& src, std::mt19937_64& rng) {
    const size_t byte = rng() % src.frame.size();
    const unsigned bit = rng() % 8;
    std::vector<uint8_t> f = src.frame;
    f[byte] ^= static_cast<uint8_t>(1u << bit);
    return job_from(src.name + "+anyflip@" + std::to_string(byte) + "." + std::to_string(bit),
                    std::move(f));
}

std::vector<Job> error_frames(tb::PacketGen& gen) {
    std::vector<Job> out;
    // Not IP: an ARP-sized frame and a RoCE frame with its ethertype changed.
    std::vector<uint8_t> arp(60, 0x5a);
    arp[12] = 0x08;
    arp[13] = 0x06;
    out.push_back(job_from("arp", arp));
    tb::GenFrame g = gen.make(roce::op::RC_SEND_ONLY, 100);
    std::vector<uint8_t> f = g.bytes;
    const size_t et = g.pkt.l3_off - 2;
    f[et] = 0x88;
    f[et + 1] = 0xb5;
    out.push_back(job_from("non-ip-ethertype", f));
    // IPv4 with IHL < 5.
    for (int tries = 0; tries < 20; ++tries) {
        g = gen.make(roce::op::RC_ACKNOWLEDGE, 0);
        if (g.pkt.ip_version != IpVersion::V4) continue;
        f = g.bytes;
        f[g.pkt.l3_off] = static_cast<uint8_t>((f[g.pkt.l3_off] & 0xf0) | 4);
        out.push_back(job_from("ihl4", f));
        break;
    }
    // Too short: a minimal frame (IP, UDP, BTH, ICRC and nothing else) cut
    // at every length below its own, and the minimal frame itself, which is
    // legal.
    for (int k = 0; k < 4; ++k) {
        g = gen.make(roce::op::RC_SEND_ONLY, 0);
        for (size_t len = 1; len <= g.bytes.size(); ++len) {
            std::vector<uint8_t> t(g.bytes.begin(), g.bytes.begin() + static_cast<long>(len));
            Job j = job_from("short" + std::to_string(len), t);
            if (j.exp.err != (len < g.bytes.size())) fail(j.name + ": wrong reference", &j.frame);
            out.push_back(std::move(j));
        }
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    const auto [seed, npackets] = tb::tb_args(argc, argv, "tb_icrc_engine", TB_DATA_WIDTH, 0x1c4c5eed);

    auto ctx = std::make_unique<VerilatedContext>();
    ctx->commandArgs(argc, argv);

    tb::PacketGenOptions opt;
    opt.unaligned_prob = 0.3;
    tb::PacketGen gen(seed, opt);
    std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
    Coverage cov;

    // Random frames: every opcode in turn, then random ones.
    std::vector<Job> random_jobs;
    const auto& ops = tb::PacketGen::opcodes();
    for (uint64_t i = 0; i < npackets; ++i) {
        const uint8_t op = i < ops.size() * 20 ? ops[i % ops.size()] : 0;
        tb::GenFrame g = i < ops.size() * 20 ? gen.next(op) : gen.next();
        Job j = job_from(std::string(roce::opcode_info(g.pkt.hdr.bth.opcode).name) + "#" +
                             std::to_string(i),
                         std::move(g.bytes));
        if (!j.exp.ok) fail(j.name + ": generated frame has a bad ICRC", &j.frame);
        cross_check(j, g.decodable);
        cov.opcodes[g.pkt.hdr.bth.opcode]++;
        cov.add(j.frame);
        random_jobs.push_back(std::move(j));
    }

    // Hand-built vectors.
    std::vector<Job> vector_jobs;
    for (const tb::FrameVector& v : tb::packet_core_vectors()) {
        Job j = job_from("vector:" + v.name, v.frame);
        if (j.exp.ok != v.icrc_valid) fail(j.name + ": reference disagrees with icrc_valid", &j.frame);
        cross_check(j, false);
        if (!v.icrc_valid) cov.bad_vectors++;
        cov.add(j.frame);
        vector_jobs.push_back(std::move(j));
    }

    // Corruptions and error frames.
    std::vector<Job> bad_jobs;
    for (size_t i = 0; i < std::max<size_t>(1000, npackets / 5); ++i) {
        const Job& src = random_jobs[rng() % random_jobs.size()];
        bad_jobs.push_back(corrupt_covered(src, rng));
        cov.corrupted++;
        bad_jobs.push_back(corrupt_anywhere(src, rng));
    }
    for (Job& j : error_frames(gen)) {
        if (j.exp.err) cov.errors++;
        bad_jobs.push_back(std::move(j));
    }

    // One back-to-back stream of everything, shuffled so that every kind of
    // frame follows every other kind.
    std::vector<Job> all;
    all.insert(all.end(), random_jobs.begin(), random_jobs.end());
    all.insert(all.end(), vector_jobs.begin(), vector_jobs.end());
    all.insert(all.end(), bad_jobs.begin(), bad_jobs.end());
    std::shuffle(all.begin(), all.end(), rng);

    Harness h(ctx.get(), seed);
    const auto t0 = std::chrono::steady_clock::now();
    const Stats b2b = h.run(all, 0.0);
    const auto t1 = std::chrono::steady_clock::now();
    // The same frames again with idle cycles between and inside frames.
    std::shuffle(all.begin(), all.end(), rng);
    const Stats gaps = h.run(all, 0.2);
    const auto t2 = std::chrono::steady_clock::now();

    // Coverage.
    for (uint8_t op : ops)
        if (cov.opcodes[op] < 20)
            fail(std::string("opcode not covered enough: ") + roce::opcode_info(op).name);
    for (size_t r = 0; r < kBeatBytes; ++r) {
        if (!cov.len_mod[r]) fail("frame length mod " + std::to_string(kBeatBytes) + " = " +
                                  std::to_string(r) + " not covered");
        if (!cov.tail_mod[r]) fail("tail length " + std::to_string(r) + " not covered");
    }
    for (auto& v : cov.l2l3)
        for (unsigned c : v)
            if (!c) fail("a VLAN x IP version combination is not covered");
    if (!cov.icrc_straddles) fail("no frame whose ICRC straddles two beats");
    if (kBeatBytes >= 64 && !cov.single_beat) fail("no single-beat frame");
    if (!cov.ip_options) fail("no IPv4 frame with options");
    if (!cov.bad_vectors) fail("no vector with a bad ICRC");
    if (!cov.errors) fail("no error frame");

    // Throughput: back to back, every cycle must take a beat.
    const double bpc = static_cast<double>(b2b.beats) / static_cast<double>(b2b.cycles);
    const double secs = std::chrono::duration<double>(t2 - t0).count();
    const double b2b_secs = std::chrono::duration<double>(t1 - t0).count();
    std::printf("frames: %zu random (%zu opcodes), %zu vectors (%u bad ICRC), %zu corrupted/error\n",
                random_jobs.size(), ops.size(), vector_jobs.size(), cov.bad_vectors, bad_jobs.size());
    std::printf("coverage: all %zu lengths mod %zu, all %zu tail lengths, %u ICRC-straddling, "
                "%u single-beat, %u IPv4-with-options frames\n",
                kBeatBytes, kBeatBytes, kBeatBytes, cov.icrc_straddles, cov.single_beat,
                cov.ip_options);
    std::printf("back to back: %" PRIu64 " frames, %" PRIu64 " beats in %" PRIu64
                " cycles: %.4f beats/cycle, %.2f cycles/frame, %" PRIu64 " stall cycles\n",
                b2b.frames, b2b.beats, b2b.cycles, bpc,
                static_cast<double>(b2b.cycles) / static_cast<double>(b2b.frames), b2b.stall_cycles);
    std::printf("with idle gaps: %" PRIu64 " frames, %" PRIu64 " beats in %" PRIu64 " cycles\n",
                gaps.frames, gaps.beats, gaps.cycles);
    std::printf("latency: %" PRIu64 "..%" PRIu64 " cycles from last beat to result (expected %" PRIu64
                ")\n", h.latency_min(), h.latency_max(), kLatency);
    tb::print_sim_speed(h.cycles(), secs, b2b.frames, b2b_secs);
    if (b2b.stall_cycles != 0 || bpc < 1.0) fail("throughput below one beat per cycle");
    std::printf("PASS\n");
    return 0;
}
