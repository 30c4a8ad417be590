// Verilator testbench for roce_parser: RTL against its C++ twin.
//
// For every frame the RTL's header vector must equal
// simnic::roce::parse_header_vector() field by field (verdict included).
//
// Stimulus (seeded; --seed N or SIMNIC_SEED=N, printed at start):
//   - random frames of every opcode from PacketGen (encode_frame): IPv4 with
//     and without options, IPv6, with and without VLAN, payloads 0..4096,
//     some with a pad that does not fit the payload (dropped);
//   - every vector of packet_core_vectors();
//   - every record of every golden capture (testbench/golden/*/mtu*/*.pcap*),
//     RoCE or not;
//   - short frames padded to the Ethernet minimum, as a sending MAC does
//     (accepted), and frames with bytes appended (dropped);
//   - mutants of random frames: truncated anywhere (most often inside the
//     headers), a bit flipped in the headers (with the IPv4 checksum fixed
//     up or not), and one header field set to a chosen or random value with
//     the checksum fixed up, so that every check of the parser is reached:
//     ethertype, VLAN, IP version, IHL, IP length, fragment bits, protocol,
//     UDP length and port, opcode, TVer, pad;
//   - frames that are not RoCE at all: ARP, random bytes of random length,
//     the empty frame.
// Every drop reason must be seen, and every opcode accepted.
//
// Streaming: every frame back to back, one beat per cycle with no idle
// cycle and the output always ready (each record must come exactly Latency
// cycles after its frame's last beat, and the input must never stall); then
// the same frames reshuffled with random idle cycles between and inside
// frames and random output backpressure (records must still come in order
// and equal the reference). Bytes outside tkeep and on idle cycles are
// random garbage. Exit status is non-zero on the first mismatch, after
// printing the frame in hex and the differing fields.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "Vroce_parser.h"
#include "Vroce_parser___024root.h"
#include "packet_gen.h"
#include "roce_parser_ports.h"
#include "simnic/roce/bytes.h"
#include "simnic/roce/header_vector.h"
#include "simnic/roce/packet.h"
#include "tb_fail.h"
#include "tb_golden.h"
#include "tb_run.h"
#include "verilated_block.h"
#include "vectors.h"

#ifndef TB_DATA_WIDTH
#error "TB_DATA_WIDTH must match the verilated DataWidth"
#endif
#ifndef SIMNIC_GOLDEN_DIR
#error "SIMNIC_GOLDEN_DIR must name testbench/golden"
#endif

namespace {

using namespace simnic;
using roce::HeaderVector;
using roce::IpVersion;
using roce::ParseVerdict;

constexpr size_t kBeatBytes = TB_DATA_WIDTH / 8;
constexpr uint64_t kLatency = rtl::kRoceParserLatency;

using tb::fail;

// ---- Jobs ----------------------------------------------------------------------

struct Job {
    std::string name;
    std::vector<uint8_t> frame;
    HeaderVector exp;  // parse_header_vector(frame)
};

Job job_from(std::string name, std::vector<uint8_t> frame) {
    Job j{std::move(name), std::move(frame), {}};
    // A copy of exactly the frame's size, so that a read past the end would
    // not go unnoticed under the sanitizers.
    std::unique_ptr<uint8_t[]> buf(new uint8_t[std::max<size_t>(1, j.frame.size())]);
    std::copy(j.frame.begin(), j.frame.end(), buf.get());
    j.exp = roce::parse_header_vector(buf.get(), j.frame.size());
    return j;
}

// ---- Harness -------------------------------------------------------------------

struct Stats {
    uint64_t frames = 0, beats = 0, cycles = 0, in_stall_cycles = 0, out_stall_cycles = 0;
};

class Harness {
public:
    Harness(VerilatedContext* ctx, uint64_t seed) : dut_(ctx), rng_(seed) {
        dut_->m_ready_i = 1;
        rtl::reset_top(*dut_, [this] { tick(); });
    }

    // Drive the jobs in order. idle_prob > 0 inserts 1..4 idle cycles before
    // a beat with that probability (also inside frames); stall_prob > 0
    // holds m_ready_i low on a cycle with that probability. exact_latency:
    // every record must come exactly kLatency cycles after its last beat.
    Stats run(const std::vector<Job>& jobs, double idle_prob, double stall_prob, bool exact_latency) {
        Stats s;
        stall_prob_ = stall_prob;
        exact_latency_ = exact_latency;
        stats_ = &s;
        const uint64_t start = dut_.cycles();
        std::bernoulli_distribution idle(idle_prob);
        std::uniform_int_distribution<int> idle_len(1, 4);
        for (const Job& job : jobs) {
            const std::vector<uint8_t>& f = job.frame;
            const size_t nbeats = std::max<size_t>(1, (f.size() + kBeatBytes - 1) / kBeatBytes);
            for (size_t b = 0; b < nbeats; ++b) {
                if (idle_prob > 0 && idle(rng_)) {
                    for (int i = idle_len(rng_); i > 0; --i) {
                        dut_->s_axis_tvalid_i = 0;
                        fill_garbage();
                        step();
                    }
                }
                const size_t off = std::min(f.size(), b * kBeatBytes);
                const size_t n = std::min(kBeatBytes, f.size() - off);
                rtl::load_beat(*dut_, kBeatBytes, f.data() + off, n,
                               [this] { return static_cast<uint8_t>(rng_()); });
                dut_->s_axis_tvalid_i = 1;
                dut_->s_axis_tlast_i = b + 1 == nbeats;
                // Accepted at the next edge once ready (which depends on
                // m_ready_i, so it is drawn and settled first).
                for (;;) {
                    draw_ready();
                    dut_->eval();
                    if (dut_->s_axis_tready_o) break;
                    ++s.in_stall_cycles;
                    tick();
                }
                if (b + 1 == nbeats) pending_.push_back({&job, dut_.cycles() + 1, 0});
                tick();
                ++s.beats;
            }
            ++s.frames;
        }
        dut_->s_axis_tvalid_i = 0;
        s.cycles = dut_.cycles() - start;  // up to and including the last beat
        for (uint64_t i = 0; i < 64 * (kLatency + 4) && !pending_.empty(); ++i) step();
        if (!pending_.empty())
            fail("records missing after the last frame: " + pending_.front().job->name);
        stats_ = nullptr;
        return s;
    }

    uint64_t cycles() const { return dut_.cycles(); }
    uint64_t latency_min() const { return lat_min_; }
    uint64_t latency_max() const { return lat_max_; }
    uint64_t records() const { return records_; }

private:
    struct Pending {
        const Job* job;
        uint64_t accept_cycle;  // the edge that took the last beat
        uint64_t valid_cycle;   // the edge after which its record was first valid (0: not yet)
    };

    void draw_ready() {
        dut_->m_ready_i = !(stall_prob_ > 0 && std::bernoulli_distribution(stall_prob_)(rng_));
    }

    // One cycle with no beat offered.
    void step() {
        draw_ready();
        dut_->eval();
        tick();
    }

    void fill_garbage() {
        rtl::load_beat(*dut_, kBeatBytes, nullptr, 0, [this] { return static_cast<uint8_t>(rng_()); });
        dut_->s_axis_tlast_i = rng_() & 1;
        using Keep = std::decay_t<decltype(dut_->s_axis_tkeep_i)>;
        dut_->s_axis_tkeep_i = static_cast<Keep>(rng_());
    }

    // Inputs are settled (eval()ed with clk low). A record on the port with
    // m_ready_i high is taken by this edge.
    void tick() {
        if (dut_->m_valid_o && dut_->m_ready_i) take_record();
        else if (dut_->m_valid_o && stats_) ++stats_->out_stall_cycles;
        dut_.tick([this] {
            if (!dut_->m_valid_o) return;
            if (pending_.empty()) fail("m_valid_o without a frame in flight");
            if (pending_.front().valid_cycle == 0) pending_.front().valid_cycle = dut_.cycles();
        });
    }

    void take_record() {
        if (pending_.empty()) fail("m_valid_o without a frame in flight");
        const Pending p = pending_.front();
        pending_.pop_front();
        const Job& j = *p.job;
        ++records_;
        const uint64_t lat = p.valid_cycle - p.accept_cycle;
        lat_min_ = std::min(lat_min_, lat);
        lat_max_ = std::max(lat_max_, lat);
        char buf[256];
        if (p.valid_cycle == 0 || lat < kLatency || (exact_latency_ && lat != kLatency)) {
            std::snprintf(buf, sizeof buf, "%s: latency %" PRIu64 " cycles, expected %" PRIu64,
                          j.name.c_str(), lat, kLatency);
            fail(buf, &j.frame);
        }
        const HeaderVector got = rtl::read_header_vector(*dut_);
        if (got != j.exp) {
            std::snprintf(buf, sizeof buf, "%s: RTL verdict %s, reference %s; fields (RTL != C++):\n",
                          j.name.c_str(), roce::kParseVerdictIds[static_cast<size_t>(got.verdict) %
                                                                 roce::kNumParseVerdicts],
                          roce::kParseVerdictIds[static_cast<size_t>(j.exp.verdict)]);
            fail(buf + roce::diff(got, j.exp), &j.frame);
        }
    }

    // Clocked as the model clocks it (rising edges only, verilated_block.h),
    // so that the checks on every cycle cover that too.
    rtl::VerilatedBlock<Vroce_parser, true> dut_;
    std::mt19937_64 rng_;
    std::deque<Pending> pending_;
    uint64_t lat_min_ = ~uint64_t{0}, lat_max_ = 0, records_ = 0;
    double stall_prob_ = 0;
    bool exact_latency_ = true;
    Stats* stats_ = nullptr;
};

// ---- Stimulus ------------------------------------------------------------------

// Where the IPv4 header is, if the frame's first bytes say IPv4 (for fixing
// its checksum after an edit).
bool ipv4_l3(const std::vector<uint8_t>& f, size_t& l3) {
    if (f.size() < 14) return false;
    uint16_t et = roce::load_be16(&f[12]);
    l3 = 14;
    if (et == roce::kEtherTypeVlan) {
        if (f.size() < 18) return false;
        et = roce::load_be16(&f[16]);
        l3 = 18;
    }
    return et == roce::kEtherTypeIpv4 && f.size() >= l3 + 20;
}

// Recompute the IPv4 header checksum in place, over the IHL (if the frame
// holds that much). A bad IHL of 3 or 4 still covers the checksum field:
// the sum over those 12 or 16 bytes is made right too, so that a parser
// that forgot the IHL >= 5 check would go on and get it wrong.
void fix_ipv4_checksum(std::vector<uint8_t>& f) {
    size_t l3;
    if (!ipv4_l3(f, l3)) return;
    const size_t hl = size_t{f[l3] & 0x0fu} * 4;
    if (hl < 12 || f.size() < l3 + hl) return;
    roce::store_be16(&f[l3 + 10], 0);
    roce::store_be16(&f[l3 + 10], roce::ipv4_checksum(&f[l3], hl));
}

class Mutator {
public:
    explicit Mutator(std::mt19937_64& rng) : rng_(rng) {}

    // A mutant of a generated frame `g`, named after what was done.
    Job mutate(const tb::GenFrame& g, const std::string& base) {
        std::vector<uint8_t> f = g.bytes;
        const roce::Packet& p = g.pkt;
        const bool v4 = p.ip_version == IpVersion::V4;
        const size_t l3 = p.l3_off, l4 = p.l4_off, bth = p.bth_off;
        std::string what;
        switch (pick(16)) {
            case 0: {  // truncate, mostly inside the headers
                const size_t cut = pick(4) != 0 ? pick(std::min(f.size(), p.payload_off + 8))
                                                : pick(f.size());
                f.resize(cut);
                what = "cut" + std::to_string(cut);
                break;
            }
            case 1: {  // append bytes
                const size_t n = 1 + pick(8);
                for (size_t i = 0; i < n; ++i) f.push_back(byte());
                what = "append" + std::to_string(n);
                break;
            }
            case 2: {  // flip a header bit, checksum fixed up or not
                const size_t at = pick(std::min(f.size(), p.payload_off + 4));
                f[at] ^= static_cast<uint8_t>(1u << pick(8));
                const bool fix = pick(2) != 0;
                if (fix) fix_ipv4_checksum(f);
                what = "flip@" + std::to_string(at) + (fix ? "+csum" : "");
                break;
            }
            case 3: {  // ethertype
                static const uint16_t types[] = {0x0806, 0x88a8, 0x8100, 0x86dd, 0x0800, 0x88b5};
                const uint16_t t = pick(3) == 0 ? static_cast<uint16_t>(rng_()) : types[pick(6)];
                roce::store_be16(&f[l3 - 2], t);
                what = "ethertype";
                break;
            }
            case 4: {  // the IP version nibble
                f[l3] = static_cast<uint8_t>((f[l3] & 0x0f) | (pick(16) << 4));
                fix_ipv4_checksum(f);
                what = "ipver";
                break;
            }
            case 5: {  // IHL (IPv6: the traffic class nibble there)
                f[l3] = static_cast<uint8_t>((f[l3] & 0xf0) | pick(16));
                fix_ipv4_checksum(f);
                what = "ihl";
                break;
            }
            case 6: {  // IP length
                const size_t at = l3 + (v4 ? 2 : 4);
                const int delta = pick(4) == 0 ? static_cast<int>(rng_() & 0xffff)
                                               : static_cast<int>(pick(9)) - 4;
                roce::store_be16(&f[at], static_cast<uint16_t>(roce::load_be16(&f[at]) + delta));
                fix_ipv4_checksum(f);
                what = "iplen" + std::to_string(delta);
                break;
            }
            case 7: {  // IPv4 flags and fragment offset (IPv6: next header, hop limit)
                // MF alone, offset alone, DF, the reserved bit, or anything.
                static const uint16_t frags[] = {0x2000, 0x0001, 0x1000, 0x4000, 0x8000, 0x6000};
                roce::store_be16(&f[l3 + 6], pick(2) ? frags[pick(6)] : static_cast<uint16_t>(rng_()));
                fix_ipv4_checksum(f);
                what = "frag";
                break;
            }
            case 8: {  // protocol / next header
                static const uint8_t protos[] = {6, 17, 1, 0, 43, 44};
                f[l3 + (v4 ? 9 : 6)] = pick(2) ? protos[pick(6)] : byte();
                fix_ipv4_checksum(f);
                what = "proto";
                break;
            }
            case 9: {  // UDP length
                const int delta = static_cast<int>(pick(9)) - 4;
                roce::store_be16(&f[l4 + 4],
                                 static_cast<uint16_t>(roce::load_be16(&f[l4 + 4]) + delta));
                what = "udplen" + std::to_string(delta);
                break;
            }
            case 10: {  // UDP destination port
                roce::store_be16(&f[l4 + 2], pick(2) ? static_cast<uint16_t>(rng_())
                                                     : static_cast<uint16_t>(4791 ^ (1u << pick(16))));
                what = "dport";
                break;
            }
            case 11: {  // opcode: any byte, or a supported one with other headers
                const auto& ops = tb::PacketGen::opcodes();
                f[bth] = pick(2) ? byte() : ops[pick(ops.size())];
                what = "opcode" + std::to_string(f[bth]);
                break;
            }
            case 12: {  // TVer
                f[bth + 1] = static_cast<uint8_t>((f[bth + 1] & 0xf0) | (1 + pick(15)));
                what = "tver";
                break;
            }
            case 14:
            case 15: {
                // Cut, then make the IP (and mostly the UDP) length agree, so
                // that the UDP, BTH and extension header length checks are
                // reached; cuts cluster around their boundaries.
                const size_t hdr_end = p.payload_off;
                const size_t around[] = {l4 + 8, bth + 12, hdr_end + 4};
                size_t cut = pick(3) ? around[pick(3)] + pick(4) - 2
                                     : l4 + pick(hdr_end + 8 - l4);
                cut = std::min(std::max(cut, l4), f.size());
                f.resize(cut);
                if (v4)
                    roce::store_be16(&f[l3 + 2], static_cast<uint16_t>(cut - l3));
                else
                    roce::store_be16(&f[l3 + 4], static_cast<uint16_t>(cut - l4));
                fix_ipv4_checksum(f);
                const bool udp = cut >= l4 + 6 && pick(4) != 0;
                if (udp) roce::store_be16(&f[l4 + 4], static_cast<uint16_t>(cut - l4));
                what = "cutfix" + std::to_string(cut) + (udp ? "+udp" : "");
                break;
            }
            default: {  // pad count
                f[bth + 1] = static_cast<uint8_t>((f[bth + 1] & 0xcf) | (pick(4) << 4));
                what = "pad";
                break;
            }
        }
        return job_from(base + "+" + what, std::move(f));
    }

private:
    size_t pick(size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng_() % n); }
    uint8_t byte() { return static_cast<uint8_t>(rng_()); }
    std::mt19937_64& rng_;
};

std::vector<Job> golden_jobs(size_t& files) {
    std::vector<Job> out;
    files = tb::for_each_golden_frame(SIMNIC_GOLDEN_DIR, [&](const std::filesystem::path& path, size_t k,
                                                             const std::vector<uint8_t>& frame) {
        out.push_back(job_from("golden:" + tb::golden_name(SIMNIC_GOLDEN_DIR, path) + "#" + std::to_string(k),
                               frame));
    });
    return out;
}

struct Coverage {
    std::map<ParseVerdict, unsigned> verdicts;
    std::map<uint8_t, unsigned> accepted_ops;
    unsigned l2l3[2][2] = {};  // accepted, [vlan][ipv6]
    unsigned ip_options = 0, eth_padded = 0, single_beat = 0, straddling = 0;

    void add(const Job& j) {
        const HeaderVector& h = j.exp;
        verdicts[h.verdict]++;
        if (!h.accepted()) return;
        accepted_ops[h.opcode]++;
        l2l3[h.has_vlan][h.ip_version == 6]++;
        if (h.ip_version == 4 && h.l4_off - h.l3_off > 20) ip_options++;
        const size_t end = size_t{h.payload_off} + h.payload_len + h.pad + 4;
        if (end < j.frame.size()) eth_padded++;
        if (j.frame.size() <= kBeatBytes) single_beat++;
        // The headers cross a beat boundary.
        if (h.l3_off / kBeatBytes != (h.payload_off - 1u) / kBeatBytes) straddling++;
    }
};

}  // namespace

int main(int argc, char** argv) {
    const auto [seed, npackets] = tb::tb_args(argc, argv, "tb_roce_parser", TB_DATA_WIDTH, 0x9a45e5eed);

    auto ctx = std::make_unique<VerilatedContext>();
    ctx->commandArgs(argc, argv);

    tb::PacketGenOptions opt;
    opt.unaligned_prob = 0.1;
    opt.ipv4_options_prob = 0.25;
    tb::PacketGen gen(seed, opt);
    std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
    Mutator mut(rng);
    Coverage cov;

    // Random frames: every opcode in turn, then random ones.
    std::vector<Job> random_jobs;
    const auto& ops = tb::PacketGen::opcodes();
    for (uint64_t i = 0; i < npackets; ++i) {
        tb::GenFrame g = i < ops.size() * 40 ? gen.next(ops[i % ops.size()]) : gen.next();
        Job j = job_from(std::string(roce::opcode_info(g.pkt.hdr.bth.opcode).name) + "#" +
                             std::to_string(i),
                         std::move(g.bytes));
        if (j.exp.accepted() != g.decodable)
            fail(j.name + ": twin disagrees with the generator about the frame", &j.frame);
        random_jobs.push_back(std::move(j));
    }

    std::vector<Job> vector_jobs;
    for (const tb::FrameVector& v : tb::packet_core_vectors())
        vector_jobs.push_back(job_from("vector:" + v.name, v.frame));

    size_t golden_files = 0;
    std::vector<Job> gold = golden_jobs(golden_files);
    if (golden_files == 0 || gold.empty()) fail("no golden capture found in " SIMNIC_GOLDEN_DIR);
    size_t golden_accepted = 0;
    for (const Job& j : gold) golden_accepted += j.exp.accepted();

    // Mutants and frames that are not RoCE.
    std::vector<Job> bad_jobs;
    for (uint64_t i = 0; i < std::max<uint64_t>(4000, npackets); ++i) {
        // Small payloads keep the mutants short.
        const uint8_t op = ops[rng() % ops.size()];
        size_t plen;
        do {
            plen = rng() % 13;
        } while (!tb::PacketGen::payload_allowed(op, plen));
        const tb::GenFrame g = gen.make(op, plen);
        bad_jobs.push_back(mut.mutate(g, std::string(roce::opcode_info(op).name) + "#m" +
                                             std::to_string(i)));
    }
    for (int i = 0, padded = 0; i < 10000 && padded < 100; ++i) {
        // Short frames, padded to 60 bytes by the "MAC" with zeros or junk.
        tb::GenFrame g = gen.make(roce::op::RC_SEND_ONLY, rng() % 4);
        if (g.bytes.size() >= roce::kEthMinFrameBytes) continue;
        ++padded;
        const bool junk = rng() % 2;
        while (g.bytes.size() < roce::kEthMinFrameBytes)
            g.bytes.push_back(junk ? static_cast<uint8_t>(rng()) : 0);
        bad_jobs.push_back(job_from("ethpad#" + std::to_string(i), std::move(g.bytes)));
    }
    {
        std::vector<uint8_t> arp(60, 0x5a);
        roce::store_be16(&arp[12], 0x0806);
        bad_jobs.push_back(job_from("arp", arp));
        bad_jobs.push_back(job_from("empty", {}));
        for (int i = 0; i < 300; ++i) {
            std::vector<uint8_t> f(rng() % 200);
            for (auto& b : f) b = static_cast<uint8_t>(rng());
            if (rng() % 2 && f.size() >= 14) roce::store_be16(&f[12], rng() % 2 ? 0x0800 : 0x86dd);
            bad_jobs.push_back(job_from("junk#" + std::to_string(i), std::move(f)));
        }
    }

    std::vector<Job> all;
    all.insert(all.end(), random_jobs.begin(), random_jobs.end());
    all.insert(all.end(), vector_jobs.begin(), vector_jobs.end());
    all.insert(all.end(), gold.begin(), gold.end());
    all.insert(all.end(), bad_jobs.begin(), bad_jobs.end());
    for (const Job& j : all) cov.add(j);

    // Coverage of the reference's outcomes, before spending time on the RTL.
    for (size_t v = 0; v < roce::kNumParseVerdicts; ++v)
        if (cov.verdicts[static_cast<ParseVerdict>(v)] == 0)
            fail(std::string("verdict never produced: ") + roce::kParseVerdictIds[v]);
    for (uint8_t op : ops)
        if (cov.accepted_ops[op] < 20)
            fail(std::string("opcode not accepted often enough: ") + roce::opcode_info(op).name);
    for (auto& v : cov.l2l3)
        for (unsigned c : v)
            if (!c) fail("a VLAN x IP version combination is never accepted");
    if (!cov.ip_options) fail("no accepted IPv4 frame with options");
    if (!cov.eth_padded) fail("no accepted frame with Ethernet padding");
    if (kBeatBytes >= 64 && !cov.single_beat) fail("no accepted single-beat frame");
    if (!cov.straddling) fail("no accepted frame whose headers straddle beats");

    std::shuffle(all.begin(), all.end(), rng);
    Harness h(ctx.get(), seed);
    const auto t0 = std::chrono::steady_clock::now();
    const Stats b2b = h.run(all, 0.0, 0.0, true);
    const auto t1 = std::chrono::steady_clock::now();
    std::shuffle(all.begin(), all.end(), rng);
    const Stats gaps = h.run(all, 0.2, 0.3, false);
    // Heavy backpressure: the pipeline fills up and the input stalls.
    std::vector<Job> some(all.begin(), all.begin() + static_cast<long>(std::min<size_t>(all.size(), 3000)));
    const Stats stalls = h.run(some, 0.0, 0.8, false);
    const auto t2 = std::chrono::steady_clock::now();

    const double bpc = static_cast<double>(b2b.beats) / static_cast<double>(b2b.cycles);
    const double secs = std::chrono::duration<double>(t2 - t0).count();
    const double b2b_secs = std::chrono::duration<double>(t1 - t0).count();
    std::printf("frames: %zu random (%zu opcodes), %zu vectors, %zu golden (%zu captures, %zu "
                "accepted), %zu mutated/non-RoCE\n",
                random_jobs.size(), ops.size(), vector_jobs.size(), gold.size(), golden_files,
                golden_accepted, bad_jobs.size());
    std::printf("verdicts:");
    for (size_t v = 0; v < roce::kNumParseVerdicts; ++v)
        std::printf(" %s=%u", roce::kParseVerdictIds[v], cov.verdicts[static_cast<ParseVerdict>(v)]);
    std::printf("\ncoverage: accepted [vlan][ipv6] = %u %u %u %u, %u IPv4-options, %u "
                "Ethernet-padded, %u single-beat, %u with headers across beats\n",
                cov.l2l3[0][0], cov.l2l3[0][1], cov.l2l3[1][0], cov.l2l3[1][1], cov.ip_options,
                cov.eth_padded, cov.single_beat, cov.straddling);
    std::printf("back to back: %" PRIu64 " frames, %" PRIu64 " beats in %" PRIu64
                " cycles: %.4f beats/cycle, %.2f cycles/frame, %" PRIu64 " input stall cycles\n",
                b2b.frames, b2b.beats, b2b.cycles, bpc,
                static_cast<double>(b2b.cycles) / static_cast<double>(b2b.frames),
                b2b.in_stall_cycles);
    std::printf("with idle gaps and output backpressure (30%%): %" PRIu64 " frames in %" PRIu64
                " cycles, %" PRIu64 " input stall cycles, %" PRIu64 " output stall cycles\n",
                gaps.frames, gaps.cycles, gaps.in_stall_cycles, gaps.out_stall_cycles);
    std::printf("heavy backpressure (80%%): %" PRIu64 " frames in %" PRIu64 " cycles, %" PRIu64
                " input stall cycles\n",
                stalls.frames, stalls.cycles, stalls.in_stall_cycles);
    std::printf("latency: %" PRIu64 " cycles from last beat to record back to back (expected %" PRIu64
                "); %" PRIu64 "..%" PRIu64 " overall\n",
                kLatency, kLatency, h.latency_min(), h.latency_max());
    std::printf("records checked: %" PRIu64 " (RTL == parse_header_vector(), every field)\n",
                h.records());
    tb::print_sim_speed(h.cycles(), secs, b2b.frames, b2b_secs);
    if (b2b.in_stall_cycles != 0 || bpc < 1.0) fail("throughput below one beat per cycle");
    if (stalls.in_stall_cycles == 0) fail("backpressure never reached the input");
    std::printf("PASS\n");
    return 0;
}
