// The waveform of a `simnic bench` run read back (VCD by a parser here, FST
// by fstapi's reader) and checked against the run's own counters: every
// channel's transfers (zero-time channels included) and that each transfer
// is a cycle with valid and ready high; the head item's PSN; every block's
// busy and stall time; the caches' hit and miss counts and strobes; the
// DMA tags and PCIe links; the retransmit queue; the cycle signal.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fstapi.h"
#include "simnic/bench/bench.h"

using namespace simnic;
using namespace simnic::model;

namespace {

// Per signal ("nic.parser.busy"), its values over time: (t, value) at each
// change, the first at the window's start.
using Timeline = std::vector<std::pair<uint64_t, uint64_t>>;
using Wave = std::map<std::string, Timeline>;

// "name [15:0]" -> "name".
std::string bare(const std::string& ref) { return ref.substr(0, ref.find(' ')); }

// The model never writes x or z once the window is open.
uint64_t bits(const std::string& v) {
    uint64_t r = 0;
    for (char c : v) {
        if (c != '0' && c != '1') throw std::runtime_error("not a binary value: " + v);
        r = r << 1 | uint64_t(c == '1');
    }
    return r;
}

// Keeps the last value at each time, and only real changes.
void put(Timeline& tl, uint64_t t, uint64_t v) {
    if (!tl.empty() && tl.back().first == t) {
        tl.back().second = v;
        if (tl.size() >= 2 && tl[tl.size() - 2].second == v) tl.pop_back();
    } else if (tl.empty() || tl.back().second != v) {
        tl.emplace_back(t, v);
    }
}

Wave read_vcd(const std::string& path) {
    std::ifstream in(path);
    REQUIRE(in);
    std::map<std::string, std::string> name_of;  // id -> dotted name
    std::vector<std::string> scope;
    std::string tok;
    Wave w;
    uint64_t now = 0;
    while (in >> tok) {
        if (tok == "$scope") {
            std::string kind, name, end;
            in >> kind >> name >> end;
            scope.push_back(name);
        } else if (tok == "$upscope") {
            in >> tok;
            scope.pop_back();
        } else if (tok == "$var") {
            std::string type, width, id, ref, t;
            in >> type >> width >> id >> ref;
            while (in >> t && t != "$end") {}
            std::string s;
            for (const std::string& p : scope) s += p + ".";
            name_of[id] = s + ref;
        } else if (tok[0] == '#') {
            now = std::stoull(tok.substr(1));
        } else if (tok[0] == 'b') {
            std::string id;
            in >> id;
            put(w[name_of.at(id)], now, bits(tok.substr(1)));
        } else if (tok[0] == '0' || tok[0] == '1') {
            put(w[name_of.at(tok.substr(1))], now, uint64_t(tok[0] == '1'));
        } else if (tok[0] == '$') {
            if (tok != "$dumpvars" && tok != "$end" && tok != "$enddefinitions")
                while (in >> tok && tok != "$end") {}  // $version, $timescale
        } else {
            FAIL("unexpected VCD token " << tok);
        }
    }
    return w;
}

struct FstRead {
    std::map<fstHandle, std::string> name_of;
    Wave w;
};

void on_fst(void* user, uint64_t time, fstHandle h, const unsigned char* value) {
    auto* f = static_cast<FstRead*>(user);
    put(f->w[f->name_of.at(h)], time, bits(reinterpret_cast<const char*>(value)));
}

Wave read_fst(const std::string& path) {
    void* ctx = fstReaderOpen(path.c_str());
    REQUIRE(ctx);
    FstRead f;
    std::vector<std::string> scope;
    while (fstHier* h = fstReaderIterateHier(ctx)) {
        if (h->htyp == FST_HT_SCOPE) {
            scope.push_back(h->u.scope.name);
        } else if (h->htyp == FST_HT_UPSCOPE) {
            scope.pop_back();
        } else if (h->htyp == FST_HT_VAR) {
            std::string s;
            for (const std::string& p : scope) s += p + ".";
            f.name_of[h->u.var.handle] = s + bare(h->u.var.name);
        }
    }
    fstReaderSetFacProcessMaskAll(ctx);
    fstReaderIterBlocks(ctx, on_fst, &f, nullptr);
    fstReaderClose(ctx);
    return f.w;
}

// The VCD parser keeps "name [W-1:0]" whole: strip the ranges.
Wave normalised(const Wave& in) {
    Wave out;
    for (const auto& [k, tl] : in) {
        const size_t dot = k.rfind('.');
        out[k.substr(0, dot + 1) + bare(k.substr(dot + 1))] = tl;
    }
    return out;
}

// The value at time t (after the changes at t).
uint64_t at(const Timeline& tl, uint64_t t) {
    uint64_t v = 0;
    for (const auto& [ct, cv] : tl) {
        if (ct > t) break;
        v = cv;
    }
    return v;
}
// Time high (nonzero) from the first change to `end`, weighted by value.
uint64_t integral(const Timeline& tl, uint64_t end) {
    uint64_t sum = 0;
    for (size_t i = 0; i < tl.size(); ++i) {
        const uint64_t t1 = i + 1 < tl.size() ? tl[i + 1].first : end;
        sum += tl[i].second * (t1 - tl[i].first);
    }
    return sum;
}
size_t rises(const Timeline& tl) {
    size_t n = 0;
    for (size_t i = 1; i < tl.size(); ++i) n += tl[i - 1].second == 0 && tl[i].second != 0;
    return n + (!tl.empty() && tl[0].second != 0);
}
uint64_t peak(const Timeline& tl) {
    uint64_t m = 0;
    for (const auto& c : tl) m = std::max(m, c.second);
    return m;
}

double stat(const BenchResult& r, const std::string& name) {
    for (const ModelStat& s : r.stats)
        if (s.name == name) return s.value;
    FAIL("no statistic " << name);
    return 0;
}

std::string tmp(const std::string& name) { return "/tmp/simnic-trace-test-" + std::to_string(getpid()) + "-" + name; }

const char* const kChannels[] = {
    "doorbell_in", "wqe_fetch_to_requester", "requester_to_tx_build", "rx_transport_to_tx_build",
    "tx_build_to_mac_tx", "wire_to_mac_rx", "mac_rx_to_parser", "parser_to_icrc_check", "to_rx_transport",
    "to_cqe_writer", "cqe_visible"};
const char* const kBlocks[] = {"doorbell", "requester", "tx_build", "mac_tx", "mac_rx", "parser",
                               "icrc_check", "responder", "completer", "cqe_writer"};

// READs on 4 QPs through a 2-entry direct-mapped QPC cache: hits and misses,
// DMA reads of contexts and payloads, responses, ACK-free completions.
BenchSpec workload(std::optional<uint64_t> warmup) {
    BenchSpec s;
    s.op = BenchOp::Read;
    s.size = 4096;
    s.qps = 4;
    s.depth = 4;
    s.messages = 120;
    s.warmup = warmup;
    s.cfg.qpc_cache.entries = 2;
    s.cfg.qpc_cache.ways = 1;
    return s;
}

// Every check of one waveform against the run's counters.
void check(const Wave& w, const BenchResult& r, const BenchSpec& s, bool from_idle) {
    const uint64_t P = uint64_t(s.cfg.clock_period_ps() + 0.5);
    const Timeline& cyc = w.at("nic.cycle");
    REQUIRE(!cyc.empty());
    // The window is the measurement, from its start (the statistics'
    // reset) to its end, which the last change of `cycle` marks.
    const uint64_t from = cyc.front().first, end = cyc.back().first;
    for (const auto& [name, tl] : w) {
        INFO(name);
        CHECK(tl.back().first <= end);
    }
    const uint64_t window = end - from;
    CHECK(window / P == uint64_t(stat(r, "sim.stats_cycles")));
    // The cycle at every change.
    size_t wrong_cycle = 0;
    for (const auto& [t, v] : cyc) wrong_cycle += v != t / P;
    CHECK(wrong_cycle == 0);

    for (const char* c : kChannels) {
        INFO("channel " << c);
        const std::string p = std::string("nic.") + c + ".";
        const Timeline &count = w.at(p + "count"), &valid = w.at(p + "valid"), &ready = w.at(p + "ready"),
                       &level = w.at(p + "level");
        const uint64_t transfers = uint64_t(stat(r, std::string("chan.") + c + ".transfers"));
        CHECK(transfers > 0);
        CHECK(count.back().second == transfers);
        // Every transfer shows: valid and ready are high when count moves,
        // also on channels the model crosses in zero time.
        CHECK(rises(valid) >= 1);
        size_t handshakes = count.front().second, hidden = 0;  // taken at the window's first instant
        for (size_t i = 1; i < count.size(); ++i) {
            const uint64_t t = count[i].first;
            hidden += at(valid, t) != 1 || at(ready, t) != 1;
            handshakes += count[i].second - count[i - 1].second;
        }
        CHECK(hidden == 0);
        CHECK(handshakes == transfers);
        // The fill level follows every push and pop; all empty at the end.
        CHECK(level.back().second == 0);
        CHECK((valid.back().second == 0 || end - count.back().first < P));  // the last transfer's cycle
    }
    // Bounded channels never hold more than their depth.
    CHECK(peak(w.at("nic.requester_to_tx_build.level")) <= 16);
    CHECK(peak(w.at("nic.mac_rx_to_parser.level")) <= 8);

    for (const char* b : kBlocks) {
        INFO("block " << b);
        const std::string p = std::string("nic.") + b + ".";
        const uint64_t busy = integral(w.at(p + "busy"), end), stall = integral(w.at(p + "stall"), end);
        const double util = stat(r, std::string("block.") + b + ".utilisation");
        CHECK(double(busy) == Approx(util / 100.0 * double(window)).epsilon(1e-9).margin(1));
        CHECK(stall / P == uint64_t(stat(r, std::string("block.") + b + ".stall_cycles")));
        CHECK(w.at(p + "busy").back().second == 0);
    }
    // The requester waits for its WQEs and payload: it stalls, visibly.
    CHECK(integral(w.at("nic.requester.stall"), end) > 0);

    for (const char* c : {"qpc", "mpt"}) {
        INFO("cache " << c);
        const std::string p = std::string("nic.") + c + "_cache.";
        const Timeline &hits = w.at(p + "hits"), &misses = w.at(p + "misses");
        const uint64_t h = uint64_t(stat(r, std::string("cache.") + c + ".hits"));
        const uint64_t m = uint64_t(stat(r, std::string("cache.") + c + ".misses"));
        CHECK(hits.back().second == h);
        CHECK(misses.back().second == m);
        // A strobe per lookup, merged only where lookups fall in one cycle.
        CHECK(rises(w.at(p + "hit")) <= h);
        CHECK(rises(w.at(p + "miss")) <= m);
        CHECK((h == 0) == (rises(w.at(p + "hit")) == 0));
        CHECK((m == 0) == (rises(w.at(p + "miss")) == 0));
        // Each strobe is high while its count moves.
        size_t dark = 0;
        for (size_t i = 1; i < hits.size(); ++i) dark += at(w.at(p + "hit"), hits[i].first) != 1;
        for (size_t i = 1; i < misses.size(); ++i) dark += at(w.at(p + "miss"), misses[i].first) != 1;
        CHECK(dark == 0);
    }
    CHECK(stat(r, "cache.qpc.misses") > 0);
    CHECK(stat(r, "cache.qpc.hits") > 0);

    // DMA: tags in flight up to the configured tags, none left at the end;
    // the inbound link busy exactly as long as the DMA engine counted.
    const Timeline& tags = w.at("nic.dma.tags_in_flight");
    CHECK(peak(tags) > 1);
    CHECK(peak(tags) <= s.cfg.dma.outstanding_reads);
    CHECK(tags.back().second == 0);
    // The DMA engine counts a transfer's link time when it is scheduled, so
    // the two agree when nothing was in flight at the start.
    if (from_idle)
        CHECK(double(integral(w.at("nic.dma.link_in_busy"), end)) ==
              Approx(stat(r, "dma.link_in_utilisation") / 100.0 * double(window)).epsilon(1e-9).margin(1));
    CHECK(peak(w.at("nic.dma.link_in_busy")) == 1);

    // The retransmit queue: its peak and what is left.
    const Timeline& rtq = w.at("nic.requester.rtq_entries_used");
    CHECK(peak(rtq) == uint64_t(stat(r, "requester.rtq_entries_peak")));
    CHECK(rtq.back().second == uint64_t(stat(r, "requester.rtq_entries_used")));
    CHECK(peak(rtq) > 1);
}

}  // namespace

TEST_CASE("bench trace: the waveform agrees with the run's counters, in VCD and FST alike", "[model][trace]") {
    for (std::optional<uint64_t> warmup : {std::optional<uint64_t>{0}, std::optional<uint64_t>{}}) {
        INFO("warm-up " << (warmup ? std::to_string(*warmup) : "default"));
        Wave vcd, fst;
        BenchResult rv, rf;
        for (const char* fmt : {"vcd", "fst"}) {
            BenchSpec s = workload(warmup);
            s.trace_path = tmp(std::string("wave.") + fmt);
            s.trace_format = fmt;
            BenchResult r;
            std::string err;
            REQUIRE(run_bench(s, r, err));
            CHECK(r.errors == 0);
            if (std::string(fmt) == "vcd") {
                vcd = normalised(read_vcd(s.trace_path));
                rv = r;
            } else {
                fst = read_fst(s.trace_path);
                rf = r;
            }
            std::remove(s.trace_path.c_str());
        }
        // The same run, the same waveform in both formats.
        CHECK(rv.sim_cycles == rf.sim_cycles);
        REQUIRE(vcd.size() == fst.size());
        size_t differ = 0;
        for (const auto& [name, tl] : vcd) {
            INFO(name);
            REQUIRE(fst.count(name));
            differ += fst.at(name) != tl;
        }
        CHECK(differ == 0);
        check(vcd, rv, workload(warmup), warmup == std::optional<uint64_t>{0});
    }
}

TEST_CASE("bench trace: a channel shows the item at its head, not the last one written", "[model][trace]") {
    // 64 KiB WRITEs on one QP: the requester queues a message's 16 packets,
    // PSN after PSN, faster than TX build takes them.
    BenchSpec s;
    s.op = BenchOp::Write;
    s.size = 65536;
    s.depth = 2;
    s.messages = 4;
    s.warmup = 0;
    s.trace_path = tmp("head.vcd");
    s.trace_format = "vcd";
    BenchResult r;
    std::string err;
    REQUIRE(run_bench(s, r, err));
    const Wave w = normalised(read_vcd(s.trace_path));
    std::remove(s.trace_path.c_str());
    const Timeline &count = w.at("nic.requester_to_tx_build.count"), &psn = w.at("nic.requester_to_tx_build.psn"),
                   &level = w.at("nic.requester_to_tx_build.level");
    CHECK(peak(level) > 2);
    size_t checked = 0, fell = 0;
    for (size_t i = 1; i < count.size(); ++i) {
        const uint64_t t = count[i].first;
        if (at(level, t) == 0 || count[i].second != count[i - 1].second + 1) continue;
        // One item left: the head is the next PSN.
        CHECK(at(psn, t) == ((at(psn, t - 1) + 1) & 0xFFFFFF));
        ++checked;
    }
    CHECK(checked > 10);
    // The fill level follows the pops too: one fewer, or as many where the
    // full channel's blocked producer writes again in the same instant
    // (while the channel is full); the tail of the last message drains.
    size_t odd = 0;
    for (size_t i = 1; i < count.size(); ++i) {
        const uint64_t t = count[i].first;
        if (count[i].second != count[i - 1].second + 1) continue;
        fell += at(level, t) + 1 == at(level, t - 1);
        odd += at(level, t) + 1 != at(level, t - 1) && at(level, t) != at(level, t - 1);
    }
    CHECK(odd == 0);
    CHECK(fell >= 15);
}

TEST_CASE("bench trace: a received frame shows its own BTH on the RX channels", "[model][trace]") {
    // MAC TX loops to MAC RX: every PSN the requester sends (the bench's QP
    // is connected to itself, so the destination QPN is its own) is seen
    // again on the receive side, read from the frame's BTH, where the
    // channels used to show zeros for a frame not parsed yet.
    BenchSpec s;
    s.op = BenchOp::Write;
    s.size = 8192;
    s.depth = 2;
    s.messages = 4;
    s.warmup = 0;
    s.trace_path = tmp("rxbth.vcd");
    s.trace_format = "vcd";
    BenchResult r;
    std::string err;
    REQUIRE(run_bench(s, r, err));
    const Wave w = normalised(read_vcd(s.trace_path));
    std::remove(s.trace_path.c_str());
    auto values = [&](const std::string& sig) {
        std::set<uint64_t> v;
        for (const auto& [t, x] : w.at(sig)) v.insert(x);
        return v;
    };
    const std::set<uint64_t> sent = values("nic.requester_to_tx_build.psn");
    REQUIRE(sent.size() >= 8);
    for (const char* ch : {"wire_to_mac_rx", "mac_rx_to_parser", "parser_to_icrc_check"}) {
        INFO(ch);
        const std::set<uint64_t> seen = values(std::string("nic.") + ch + ".psn");
        for (uint64_t p : sent) CHECK(seen.count(p));
        const std::set<uint64_t> qpns = values(std::string("nic.") + ch + ".qpn");
        CHECK(qpns.count(*values("nic.requester_to_tx_build.qpn").rbegin()));
    }
}
