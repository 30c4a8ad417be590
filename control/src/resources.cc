#include "simnic/control/resources.h"

#include <algorithm>
#include <cstdint>
#include <tuple>

namespace simnic::control {

namespace {

// kResourceLists' index of `name`, or its size when there is none.
std::size_t list_index(std::string_view name) {
    std::size_t i = 0;
    for (const ResourceList& l : kResourceLists) {
        if (l.name == name) break;
        ++i;
    }
    return i;
}

// A key or cursor number: a JSON integer that is not negative (parsed
// JSON holds it unsigned, one built from an int signed).
bool natural(const Json& v) { return v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0); }

std::uint64_t key_of(const Json& entry, std::string_view key) {
    const auto it = entry.find(std::string(key));
    return it != entry.end() && natural(*it) ? it->get<std::uint64_t>() : 0;
}

// A list's first batch of a page: enough to measure its entries' size by,
// few enough that a page that ends soon after builds little it does not send.
constexpr std::size_t kFirstBatch = 64;

// Where a cursor stands, comparable: (device, list, key).
using Position = std::tuple<std::string, std::size_t, std::uint64_t>;

std::optional<Position> position_of(const Json& cursor) {
    if (!cursor.is_object()) return std::nullopt;
    const auto d = cursor.find("device"), l = cursor.find("list"), k = cursor.find("key");
    if (d == cursor.end() || !d->is_string() || l == cursor.end() || !l->is_string() || k == cursor.end() ||
        !natural(*k))
        return std::nullopt;
    const std::size_t li = list_index(l->get<std::string>());
    if (li == std::size(kResourceLists)) return std::nullopt;
    return Position{d->get<std::string>(), li, k->get<std::uint64_t>()};
}

}  // namespace

std::optional<std::vector<std::string_view>> resource_lists_of(std::optional<std::string_view> lists,
                                                              std::string& err) {
    std::vector<std::string_view> out;
    if (!lists) {
        for (const ResourceList& l : kResourceLists) out.push_back(l.name);
        return out;
    }
    const std::string_view s = *lists;
    std::vector<bool> wanted(std::size(kResourceLists), false);
    std::size_t at = 0;
    while (at < s.size()) {
        std::size_t end = s.find(',', at);
        if (end == std::string::npos) end = s.size();
        const std::string_view name = s.substr(at, end - at);
        const std::size_t i = list_index(name);
        if (i == std::size(kResourceLists)) {
            err = "no resource list '" + std::string(name) + "'";
            return std::nullopt;
        }
        wanted[i] = true;
        at = end + 1;
    }
    for (std::size_t i = 0; i < wanted.size(); ++i)
        if (wanted[i]) out.push_back(kResourceLists[i].name);
    return out;
}

Json resource_page(std::vector<ResourceDevice> devices, const std::vector<std::string_view>& lists,
                   const Json& after, std::size_t budget) {
    std::sort(devices.begin(), devices.end(),
              [](const ResourceDevice& a, const ResourceDevice& b) { return a.name < b.name; });
    const std::optional<Position> from = position_of(after);
    Json out = Json::array();
    // The bytes the reply takes so far, as it is dumped: its frame, then
    // each record's fields and each entry with its comma.
    std::size_t used = std::string_view(R"({"ok":true,"devices":[],"more":})").size();
    std::size_t entries = 0;
    // The last entry taken, for the cursor.
    std::uint64_t last_key = 0;
    std::string_view last_list;
    const std::string* last_device = nullptr;
    bool cut = false;
    for (ResourceDevice& dev : devices) {
        if (from && dev.name < std::get<0>(*from)) continue;
        const bool resuming = from && dev.name == std::get<0>(*from);
        Json rec = dev.header;
        rec["name"] = dev.name;
        used += rec.dump().size() + 1;
        for (std::string_view list : lists) {
            const std::size_t li = list_index(list);
            if (resuming && li < std::get<1>(*from)) continue;  // sent in earlier pages
            const std::string_view key = kResourceLists[li].key;
            std::optional<std::uint64_t> after_key;
            if (resuming && li == std::get<1>(*from)) after_key = std::get<2>(*from);
            Json taken = Json::array();
            used += list.size() + 6;  // "list":[],
            // Room for the cursor, should the page end in this list.
            const std::size_t cursor =
                Json{{"device", dev.name}, {"key", UINT64_MAX}, {"list", std::string(list)}}.dump().size();
            // The list in batches of the entries with the smallest keys
            // after the last one taken, each about as many as the page has
            // room for, as the entries so far measure: a page of a long list
            // costs its maker the page's entries, not the list's.
            std::size_t limit = kFirstBatch, list_bytes = 0, list_entries = 0;
            for (;;) {
                Json batch = dev.list(list, after_key, limit);
                // Each entry's key is read once: a comparison that looked it
                // up by name in both entries was most of a long list's page.
                std::vector<std::pair<std::uint64_t, Json>> items;
                if (batch.is_array()) {
                    items.reserve(batch.size());
                    for (Json& e : batch) {
                        const std::uint64_t k = key_of(e, key);
                        if (after_key && k <= *after_key) continue;  // sent already
                        items.emplace_back(k, std::move(e));
                    }
                }
                std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
                for (auto& [k, e] : items) {
                    const std::size_t size = e.dump().size() + 1;
                    // At least one entry per page, so that every page moves on.
                    if (entries > 0 && used + size + cursor > budget) {
                        cut = true;
                        break;
                    }
                    used += size;
                    list_bytes += size;
                    ++list_entries;
                    ++entries;
                    last_key = k;
                    last_list = list;
                    last_device = &dev.name;
                    taken.push_back(std::move(e));
                }
                // Fewer than asked for: the list has no more. Nothing new:
                // a maker that ignores `after` gave all it has at once.
                if (cut || batch.size() < limit || items.empty()) break;
                after_key = items.back().first;
                // Room for this many more entries of the list's mean size,
                // and an eighth over, so that one more batch mostly ends it.
                const std::size_t mean = std::max<std::size_t>(1, list_bytes / list_entries);
                const std::size_t room = budget > used + cursor ? (budget - used - cursor) / mean : 0;
                limit = std::max<std::size_t>(kFirstBatch, room + room / 8 + 1);
            }
            rec[std::string(list)] = std::move(taken);
            if (cut) break;
        }
        out.push_back(std::move(rec));
        if (cut) break;
    }
    Json r{{"devices", std::move(out)}};
    if (cut) r["more"] = Json{{"device", *last_device}, {"list", std::string(last_list)}, {"key", last_key}};
    return r;
}

std::size_t entries_that_fit(const Json& items, std::size_t budget) {
    if (!items.is_array()) return 0;
    std::size_t used = 0, n = 0;
    for (const Json& e : items) {
        used += e.dump().size() + 1;
        if (n > 0 && used > budget) break;
        ++n;
    }
    return n;
}

void merge_resource_page(Json& into, Json page_devices) {
    if (!into.is_array()) into = Json::array();
    if (!page_devices.is_array()) return;
    for (Json& rec : page_devices) {
        const std::string name = rec.value("name", std::string());
        auto have = std::find_if(into.begin(), into.end(),
                                 [&name](const Json& d) { return d.value("name", std::string()) == name; });
        if (have == into.end()) {
            into.push_back(std::move(rec));
            continue;
        }
        // The device's counts stay those of its first page; its lists grow.
        for (const ResourceList& l : kResourceLists) {
            const std::string list(l.name);
            const auto more = rec.find(list);
            if (more == rec.end() || !more->is_array()) continue;
            Json& mine = (*have)[list];
            if (!mine.is_array()) mine = Json::array();
            for (Json& e : *more) mine.push_back(std::move(e));
        }
    }
}

bool fetch_resources(Json req, const std::function<bool(const Json& req, Json& reply)>& ask, Json& out,
                     std::string& err) {
    out = Json::array();
    std::optional<Position> at;
    for (;;) {
        Json reply;
        if (!ask(req, reply)) return false;
        if (auto d = reply.find("devices"); d != reply.end()) merge_resource_page(out, std::move(*d));
        const auto more = reply.find("more");
        if (more == reply.end()) return true;
        // A cursor that does not move on would ask for the same page for ever.
        const std::optional<Position> next = position_of(*more);
        if (!next || (at && !(*at < *next))) {
            err = "the daemon's resource pages do not move on (a simnic daemon bug)";
            return false;
        }
        at = next;
        req["after"] = *more;
    }
}

bool fetch_stats_pages(const std::string& device, Json& reply,
                       const std::function<bool(const Json& req, Json& reply)>& ask, std::string& err) {
    const auto cc = reply.find("congestion");
    if (cc == reply.end() || !cc->is_object()) return true;
    Json& qps = (*cc)["qps"];
    if (!qps.is_array()) qps = Json::array();
    while (cc->contains("more_after")) {
        const Json after = (*cc)["more_after"];
        cc->erase("more_after");
        if (!natural(after)) {
            err = "the daemon's congestion pages have a bad cursor (a simnic daemon bug)";
            return false;
        }
        const std::uint64_t last = after.get<std::uint64_t>();
        Json page;
        if (!ask(Json{{"op", "stats"}, {"device", device}, {"qps_after", last}}, page)) return false;
        const Json more = page.value("congestion", Json::object()).value("qps", Json::array());
        // Each page's QPs come after the cursor, in QPN order.
        std::uint64_t prev = last;
        for (const Json& q : more) {
            const std::uint64_t qpn = key_of(q, "qpn");
            if (qpn <= prev) {
                err = "the daemon's congestion pages do not move on (a simnic daemon bug)";
                return false;
            }
            prev = qpn;
            qps.push_back(q);
        }
        const Json next = page.value("congestion", Json::object()).value("more_after", Json());
        if (next.is_null()) break;
        if (more.empty()) {
            err = "the daemon's congestion pages do not move on (a simnic daemon bug)";
            return false;
        }
        (*cc)["more_after"] = next;
    }
    return true;
}

}  // namespace simnic::control
