// The wire port's neighbour table (neighbour_table.h): the kernel's NUD
// state machine, driven by the port with the time and what it heard.
#include "neighbour_table.h"

namespace simnic::soft_engine {

const char* NeighbourTable::to_string(State s) {
    switch (s) {
        case State::Incomplete: return "INCOMPLETE";
        case State::Reachable: return "REACHABLE";
        case State::Stale: return "STALE";
        case State::Delay: return "DELAY";
        case State::Probe: return "PROBE";
        case State::Failed: return "FAILED";
    }
    return "?";
}

// neigh_rand_reach_time(): uniform in [base / 2, 3 * base / 2).
uint64_t NeighbourTable::reachable_time() {
    rng_ ^= rng_ >> 12;
    rng_ ^= rng_ << 25;
    rng_ ^= rng_ >> 27;
    const uint64_t r = (rng_ * 0x2545F4914F6CDD1Dull) >> 32;
    return p_.base_reachable_ns / 2 + (p_.base_reachable_ns ? r % p_.base_reachable_ns : 0);
}

void NeighbourTable::solicit(const Key& a, Entry& e, bool unicast, uint64_t now, std::vector<Action>& out) {
    Action act;
    act.kind = Action::Kind::Solicit;
    act.addr = a;
    act.unicast = unicast;
    act.mac = e.mac;
    out.push_back(std::move(act));
    ++e.probes;
    e.deadline = now + p_.retrans_ns;
}

// NONE or FAILED -> INCOMPLETE: the first request goes at once (the
// kernel's immediate probe), the next ones on the retrans timer.
void NeighbourTable::start_resolving(const Key& a, Entry& e, uint64_t now, std::vector<Action>& out) {
    e.state = State::Incomplete;
    e.probes = 0;
    solicit(a, e, false, now, out);
}

// The entry learned its MAC: frames that waited for it leave, in order.
void NeighbourTable::set_mac(const Key& a, Entry& e, const roce::MacAddr& mac, State s, uint64_t now,
                             std::vector<Action>& out) {
    e.mac = mac;
    e.state = s;
    e.probes = 0;
    if (s == State::Reachable) {
        e.confirmed = now;
        e.deadline = now + reachable_time();
    } else {
        e.deadline = 0;  // STALE waits for use
    }
    const bool released = !e.queue.empty();
    while (!e.queue.empty()) {
        Action act;
        act.kind = Action::Kind::Send;
        act.addr = a;
        act.mac = mac;
        act.held = std::move(e.queue.front());
        e.queue.pop_front();
        out.push_back(std::move(act));
    }
    e.queue_bytes = 0;
    // A frame sent to a STALE entry starts the reachability check.
    if (s == State::Stale && released) {
        e.state = State::Delay;
        e.deadline = now + p_.delay_probe_ns;
    }
}

// Resolution or probing gave up: the waiting frames are lost.
void NeighbourTable::fail(const Key& a, Entry& e, std::vector<Action>& out) {
    e.state = State::Failed;
    e.deadline = 0;
    e.probes = 0;
    while (!e.queue.empty()) {
        Action act;
        act.kind = Action::Kind::Drop;
        act.addr = a;
        act.held = std::move(e.queue.front());
        e.queue.pop_front();
        out.push_back(std::move(act));
    }
    e.queue_bytes = 0;
}

bool NeighbourTable::output(const Key& a, uint64_t now, roce::MacAddr& mac, std::vector<Action>& out) {
    Entry& e = entries_[a];
    if (usable(e)) {
        if (e.state == State::Stale) {
            e.state = State::Delay;
            e.deadline = now + p_.delay_probe_ns;
        }
        mac = e.mac;
        return true;
    }
    // A new entry starts INCOMPLETE with no solicitation sent yet.
    if (e.state == State::Failed || (e.state == State::Incomplete && e.probes == 0))
        start_resolving(a, e, now, out);
    return false;
}

void NeighbourTable::hold(const Key& a, Held h, std::vector<Action>& out) {
    Entry& e = entries_[a];
    // __neigh_event_send: the oldest frames make room for the newest.
    while (!e.queue.empty() && e.queue_bytes + h.frame.size() > p_.queue_bytes) {
        Action act;
        act.kind = Action::Kind::Drop;
        act.addr = a;
        e.queue_bytes -= e.queue.front().frame.size();
        act.held = std::move(e.queue.front());
        e.queue.pop_front();
        out.push_back(std::move(act));
    }
    if (h.frame.size() > p_.queue_bytes) {
        Action act;
        act.kind = Action::Kind::Drop;
        act.addr = a;
        act.held = std::move(h);
        out.push_back(std::move(act));
        return;
    }
    e.queue_bytes += h.frame.size();
    e.queue.push_back(std::move(h));
}

std::optional<roce::MacAddr> NeighbourTable::resolve(const Key& a, uint64_t now, std::vector<Action>& out) {
    roce::MacAddr mac{};
    if (output(a, now, mac, out)) return mac;
    return std::nullopt;
}

void NeighbourTable::learn(const Key& a, const roce::MacAddr& mac, Evidence ev, uint64_t now,
                           std::vector<Action>& out) {
    auto it = entries_.find(a);
    if (it == entries_.end()) {
        // Only a request to us creates an entry (neigh_event_ns); replies
        // and overheard frames do not (arp_accept and its ND twin are off).
        if (ev != Evidence::Asked) return;
        it = entries_.emplace(a, Entry{}).first;
    }
    Entry& e = it->second;
    const bool known = usable(e);
    const bool changed = !known || e.mac != mac;
    if (ev == Evidence::Answer) {
        set_mac(a, e, mac, State::Reachable, now, out);
        return;
    }
    // The same MAC keeps the entry's state (neigh_update keeps a connected
    // entry when told STALE with the address it already has).
    if (!changed) return;
    set_mac(a, e, mac, State::Stale, now, out);
}

void NeighbourTable::tick(uint64_t now, std::vector<Action>& out) {
    for (auto& [a, e] : entries_) {
        if (e.deadline == 0 || e.deadline > now) continue;
        switch (e.state) {
            case State::Incomplete:
                if (e.probes >= p_.mcast_probes) fail(a, e, out);
                else solicit(a, e, false, now, out);
                break;
            case State::Reachable:
                e.state = State::Stale;
                e.deadline = 0;
                break;
            case State::Delay:
                // Confirmed while in DELAY: REACHABLE again (set_mac did it);
                // here it was not, so probe its MAC directly.
                e.state = State::Probe;
                e.probes = 0;
                solicit(a, e, true, now, out);
                break;
            case State::Probe:
                if (e.probes >= p_.ucast_probes) fail(a, e, out);
                else solicit(a, e, true, now, out);
                break;
            case State::Stale:
            case State::Failed: e.deadline = 0; break;
        }
    }
}

uint64_t NeighbourTable::next_deadline() const {
    uint64_t d = 0;
    for (const auto& [a, e] : entries_)
        if (e.deadline && (d == 0 || e.deadline < d)) d = e.deadline;
    return d;
}

std::optional<NeighbourTable::State> NeighbourTable::state(const Key& a) const {
    auto it = entries_.find(a);
    if (it == entries_.end()) return std::nullopt;
    return it->second.state;
}

std::optional<roce::MacAddr> NeighbourTable::known(const Key& a) const {
    auto it = entries_.find(a);
    if (it == entries_.end() || !usable(it->second)) return std::nullopt;
    return it->second.mac;
}

size_t NeighbourTable::queued(const Key& a) const {
    auto it = entries_.find(a);
    return it == entries_.end() ? 0 : it->second.queue.size();
}

}  // namespace simnic::soft_engine
