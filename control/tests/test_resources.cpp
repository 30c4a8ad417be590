// The resources op's pages (resources.h): every entry once, in order, in
// replies no longer than the budget, whatever changes between pages.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "simnic/control/resources.h"

using namespace simnic::control;

namespace {

// Devices whose lists the test holds and may change between pages.
struct World {
    // device -> list -> entries (unsorted on purpose: the pager sorts)
    std::map<std::string, std::map<std::string, std::vector<Json>>> lists;
    // Whether the lists' maker gives only the `limit` smallest keys after
    // `after`, as the daemon's does, or the whole list each time (which the
    // pager takes too), and what it was asked: device, list, after, limit.
    bool honour = false;
    // The page each was asked for.
    std::vector<std::tuple<std::string, std::string, std::optional<std::uint64_t>, std::size_t, std::size_t>> asked;
    std::size_t page = 0;

    void add(const std::string& dev, const std::string& list, const std::string& key, std::uint64_t k) {
        lists[dev][list].push_back(Json{{key, k}, {"pid", 4242}, {"pad", std::string(40, 'p')}});
    }
    std::vector<ResourceDevice> devices() {
        std::vector<ResourceDevice> out;
        for (auto& [name, ls] : lists) {
            auto* mine = &ls;
            out.push_back(ResourceDevice{
                name, Json{{"qps", mine->count("qp_list") ? (*mine)["qp_list"].size() : 0}},
                [this, mine, name = name](std::string_view l, std::optional<std::uint64_t> after, std::size_t limit) {
                    asked.emplace_back(name, std::string(l), after, limit, page);
                    Json a = Json::array();
                    auto it = mine->find(std::string(l));
                    if (it == mine->end()) return a;
                    if (!honour) {
                        for (const Json& e : it->second) a.push_back(e);
                        return a;
                    }
                    const std::string key(std::find_if(std::begin(kResourceLists), std::end(kResourceLists),
                                                       [l](const ResourceList& r) { return r.name == l; })
                                              ->key);
                    std::vector<Json> above;
                    for (const Json& e : it->second)
                        if (!after || e[key].get<std::uint64_t>() > *after) above.push_back(e);
                    std::sort(above.begin(), above.end(), [&key](const Json& x, const Json& y) {
                        return x[key].get<std::uint64_t>() < y[key].get<std::uint64_t>();
                    });
                    if (above.size() > limit) above.resize(limit);
                    // In reverse: a maker's batch need not be in order.
                    for (auto e = above.rbegin(); e != above.rend(); ++e) a.push_back(*e);
                    return a;
                }});
        }
        return out;
    }
    // Every page of a request, through the pager, as a client gets them.
    Json fetch(const Json& req, std::size_t budget, std::size_t& pages, std::size_t& longest,
               const std::function<void(std::size_t page)>& between = {}) {
        Json out;
        std::string err;
        pages = longest = 0;
        const bool ok = fetch_resources(
            req,
            [&](const Json& r, Json& reply) {
                if (between) between(pages);
                ++page;
                std::string e;
                std::optional<std::string_view> lists;
                if (r.contains("lists")) lists = r["lists"].get_ref<const std::string&>();
                const auto wanted = resource_lists_of(lists, e);
                REQUIRE(wanted);
                reply = resource_page(devices(), *wanted, r.value("after", Json()), budget);
                reply["ok"] = true;
                ++pages;
                longest = std::max(longest, reply.dump().size());
                return true;
            },
            out, err);
        REQUIRE(ok);
        CHECK(err.empty());
        return out;
    }
};

std::vector<std::uint64_t> keys(const Json& devs, const std::string& dev, const std::string& list,
                                const std::string& key) {
    std::vector<std::uint64_t> out;
    for (const Json& d : devs)
        if (d["name"] == dev && d.contains(list))
            for (const Json& e : d[list]) out.push_back(e[key].get<std::uint64_t>());
    return out;
}

std::vector<std::uint64_t> range(std::uint64_t from, std::uint64_t to) {
    std::vector<std::uint64_t> v;
    for (std::uint64_t i = from; i <= to; ++i) v.push_back(i);
    return v;
}

}  // namespace

TEST_CASE("resources: many objects come in pages no longer than the budget, each once and in key order",
          "[resources]") {
    World w;
    // Keys put in out of order: the pages give them sorted.
    for (std::uint64_t i = 3000; i >= 1; --i) w.add("dev_b", "mr_list", "mrn", i);
    for (std::uint64_t i = 1; i <= 500; ++i) w.add("dev_b", "qp_list", "qpn", 1000 + i);
    for (std::uint64_t i = 1; i <= 40; ++i) w.add("dev_a", "cq_list", "cqn", i);
    w.add("dev_c", "gids", "index", 0);
    w.add("dev_c", "gids", "index", 1);

    std::size_t pages = 0, longest = 0;
    const std::size_t budget = 16 * 1024;
    const Json all = w.fetch(Json{{"op", "resources"}}, budget, pages, longest);
    CHECK(pages > 10);  // some 270 KiB of entries
    CHECK(longest <= budget);
    REQUIRE(all.size() == 3);
    CHECK(all[0]["name"] == "dev_a");  // name order
    CHECK(all[1]["name"] == "dev_b");
    CHECK(all[2]["name"] == "dev_c");
    CHECK(keys(all, "dev_a", "cq_list", "cqn") == range(1, 40));
    CHECK(keys(all, "dev_b", "mr_list", "mrn") == range(1, 3000));
    CHECK(keys(all, "dev_b", "qp_list", "qpn") == range(1001, 1500));
    CHECK(keys(all, "dev_c", "gids", "index") == range(0, 1));
    // The counts of a device come with it; every requested list is there,
    // empty ones too.
    CHECK(all[1]["qps"] == 500);
    CHECK(all[0].contains("mw_list"));
    CHECK(all[0]["mw_list"].empty());

    SECTION("a maker that gives batches after the cursor, as the daemon's, gives the same pages") {
        w.honour = true;
        w.asked.clear();
        std::size_t pages2 = 0;
        CHECK(w.fetch(Json{{"op", "resources"}}, budget, pages2, longest) == all);
        CHECK(pages2 == pages);
        CHECK(longest <= budget);
        // The cursor's key goes only to the list a page resumes in, and no
        // batch is longer than a page can hold.
        std::size_t resumed = 0, at_page = SIZE_MAX;
        for (const auto& [dev, list, after, limit, page] : w.asked) {
            CHECK(limit <= budget / 16);  // no entry is shorter
            const bool first_of_page = page != at_page;
            at_page = page;
            if (!after) continue;
            CHECK((list == "mr_list" || list == "qp_list"));  // the only lists longer than a page
            resumed += first_of_page;
        }
        CHECK(resumed == pages - 1);
    }

    SECTION("one page when it all fits, without a cursor") {
        const Json one = w.fetch(Json{{"op", "resources"}}, 1 << 20, pages, longest);
        CHECK(pages == 1);
        CHECK(one == all);
    }
}

TEST_CASE("resources: a page of entries shorter than the pager reckons takes several batches, each after the last",
          "[resources]") {
    World w;
    w.honour = true;
    // {"mrn":N}: shorter than any entry the daemon makes, so a page's first
    // batch leaves it room and the pager asks again after its last key.
    for (std::uint64_t i = 5000; i >= 1; --i) w.lists["d"]["mr_list"].push_back(Json{{"mrn", i}});
    std::size_t pages = 0, longest = 0;
    const std::size_t budget = 16 * 1024;
    const Json all = w.fetch(Json{{"op", "resources"}, {"lists", "mr_list"}}, budget, pages, longest);
    CHECK(keys(all, "d", "mr_list", "mrn") == range(1, 5000));
    CHECK(longest <= budget);
    CHECK(pages > 1);
    // Within a page, each batch asks after the last key of the one before
    // (keys 1, 2, ...: after + limit), for about as many as the page has
    // room for: the first batch measured the entries, so two batches end
    // the page.
    std::size_t again = 0;
    for (std::size_t i = 1; i < w.asked.size(); ++i) {
        const auto& [d0, l0, after0, limit0, page0] = w.asked[i - 1];
        const auto& [d1, l1, after1, limit1, page1] = w.asked[i];
        if (page1 != page0) continue;
        ++again;
        REQUIRE(after1);
        CHECK(*after1 == (after0 ? *after0 : 0) + limit0);
        CHECK(limit1 > limit0);
        CHECK(limit1 <= budget / 8);  // about the page's room at 9 to 13 bytes an entry, not the whole list
        if (i >= 2) CHECK(std::get<4>(w.asked[i - 2]) != page1);
    }
    CHECK(again >= pages - 1);  // the last page's first batch may end the list
}

TEST_CASE("resources: the lists asked for, and none: the counts alone", "[resources]") {
    World w;
    for (std::uint64_t i = 1; i <= 100; ++i) w.add("d", "mr_list", "mrn", i);
    for (std::uint64_t i = 1; i <= 10; ++i) w.add("d", "qp_list", "qpn", i);
    std::size_t pages = 0, longest = 0;

    const Json qps = w.fetch(Json{{"op", "resources"}, {"lists", "qp_list,gids"}}, 1024, pages, longest);
    REQUIRE(qps.size() == 1);
    CHECK(keys(qps, "d", "qp_list", "qpn") == range(1, 10));
    CHECK(qps[0].contains("gids"));
    CHECK_FALSE(qps[0].contains("mr_list"));

    const Json counts = w.fetch(Json{{"op", "resources"}, {"lists", ""}}, 1024, pages, longest);
    CHECK(pages == 1);
    REQUIRE(counts.size() == 1);
    CHECK(counts[0] == Json{{"name", "d"}, {"qps", 10}});

    std::string err;
    CHECK_FALSE(resource_lists_of("qp_list,nonsense", err));
    CHECK(err == "no resource list 'nonsense'");
    CHECK_FALSE(resource_lists_of(",", err));
    CHECK(err == "no resource list ''");
    // In kResourceLists' order, each once, whatever the request's order.
    const auto some = resource_lists_of("gids,qp_list,gids", err);
    REQUIRE(some);
    CHECK(*some == std::vector<std::string_view>{"qp_list", "gids"});
}

TEST_CASE("resources: objects made or destroyed and devices gone between pages", "[resources]") {
    World w;
    for (std::uint64_t i = 1; i <= 400; ++i) w.add("a", "mr_list", "mrn", 2 * i);  // even keys
    for (std::uint64_t i = 1; i <= 50; ++i) w.add("b", "pd_list", "pdn", i);
    for (std::uint64_t i = 1; i <= 50; ++i) w.add("c", "pd_list", "pdn", i);
    std::size_t pages = 0, longest = 0;
    const Json got = w.fetch(Json{{"op", "resources"}, {"lists", "mr_list,pd_list"}}, 4096, pages, longest,
                             [&w](std::size_t page) {
                                 if (page != 2) return;
                                 // Between the second and third page: an
                                 // entry already sent goes, one before the
                                 // cursor and one after it come, and
                                 // device b goes.
                                 auto& mrs = w.lists["a"]["mr_list"];
                                 mrs.erase(mrs.begin());  // key 2, sent
                                 w.add("a", "mr_list", "mrn", 3);    // behind the cursor: not seen
                                 w.add("a", "mr_list", "mrn", 799);  // ahead: seen
                                 w.lists.erase("b");
                             });
    CHECK(pages > 3);
    std::vector<std::uint64_t> want;
    for (std::uint64_t i = 1; i <= 400; ++i) {
        want.push_back(2 * i);
        if (2 * i == 798) want.push_back(799);
    }
    CHECK(keys(got, "a", "mr_list", "mrn") == want);  // each once, in order
    CHECK(keys(got, "b", "pd_list", "pdn").empty());
    CHECK(keys(got, "c", "pd_list", "pdn") == range(1, 50));
}

TEST_CASE("resources: a client stops on a cursor that does not move on", "[resources]") {
    Json out;
    std::string err;
    int asked = 0;
    const Json stuck{{"device", "d"}, {"list", "qp_list"}, {"key", 5}};
    const bool ok = fetch_resources(
        Json{{"op", "resources"}},
        [&](const Json&, Json& reply) {
            ++asked;
            reply = Json{{"ok", true}, {"devices", Json::array({Json{{"name", "d"}}})}, {"more", stuck}};
            return true;
        },
        out, err);
    CHECK_FALSE(ok);
    CHECK(asked == 2);
    CHECK(err == "the daemon's resource pages do not move on (a simnic daemon bug)");
}

TEST_CASE("resources: entries_that_fit counts whole entries with their commas, at least one", "[resources]") {
    Json items = Json::array();
    for (int i = 0; i < 10; ++i) items.push_back(Json{{"q", 1000 + i}});  // {"q":1000}: 10 bytes, 11 with a comma
    CHECK(entries_that_fit(items, 110) == 10);
    CHECK(entries_that_fit(items, 109) == 9);
    CHECK(entries_that_fit(items, 22) == 2);
    CHECK(entries_that_fit(items, 5) == 1);  // one even when it does not fit
    CHECK(entries_that_fit(Json::array(), 100) == 0);
    CHECK(entries_that_fit(Json::object(), 100) == 0);
}

namespace {

// A daemon's stats pages over `qpns` (sorted), `per_page` QPs a page, the
// way the daemon cuts them; `between` runs before each later page.
struct StatsPages {
    std::vector<std::uint64_t> qpns;
    std::size_t per_page = 3;
    int asked = 0;
    std::function<void()> between;

    Json page(std::uint64_t after, bool first) {
        Json qps = Json::array();
        Json more;
        for (std::uint64_t q : qpns) {
            if (!first && q <= after) continue;
            if (qps.size() == per_page) {
                more = qps.back()["qpn"];
                break;
            }
            qps.push_back(Json{{"qpn", q}, {"alpha", 1.0}});
        }
        Json cc{{"enabled", true}, {"qps", qps}};
        if (!more.is_null()) cc["more_after"] = more;
        return Json{{"ok", true}, {"congestion", cc}};
    }
    bool ask(const Json& req, Json& reply) {
        ++asked;
        CHECK(req["op"] == "stats");
        CHECK(req["device"] == "d");
        CHECK_FALSE(req.contains("reset"));  // only the first page resets
        if (between) between();
        reply = page(req["qps_after"].get<std::uint64_t>(), false);
        return true;
    }
};

std::vector<std::uint64_t> qpns_of(const Json& reply) {
    std::vector<std::uint64_t> out;
    for (const Json& q : reply["congestion"]["qps"]) out.push_back(q["qpn"].get<std::uint64_t>());
    return out;
}

}  // namespace

TEST_CASE("resources: a stats reply's congestion list is completed page by page", "[resources]") {
    StatsPages d;
    d.qpns = range(17, 26);  // 10 QPs, 3 a page
    Json reply = d.page(0, true);
    reply["stats"] = Json{{"tx_packets", 5}};
    std::string err;
    const auto ask = [&d](const Json& r, Json& p) { return d.ask(r, p); };
    REQUIRE(fetch_stats_pages("d", reply, ask, err));
    CHECK(err.empty());
    CHECK(d.asked == 3);
    CHECK(qpns_of(reply) == range(17, 26));
    CHECK_FALSE(reply["congestion"].contains("more_after"));  // one whole reply
    CHECK(reply["stats"]["tx_packets"] == 5);

    SECTION("QPs destroyed between pages: an empty last page ends it") {
        StatsPages e;
        e.qpns = range(1, 6);
        Json r = e.page(0, true);  // 1, 2, 3 and more after 3
        e.between = [&e] { e.qpns = {1, 2, 3}; };  // 4 to 6 are gone
        REQUIRE(fetch_stats_pages("d", r, [&e](const Json& q, Json& p) { return e.ask(q, p); }, err));
        CHECK(qpns_of(r) == range(1, 3));
    }
    SECTION("a page that goes back is refused") {
        StatsPages e;
        e.qpns = range(1, 6);
        Json r = e.page(0, true);
        bool ok = fetch_stats_pages(
            "d", r,
            [](const Json&, Json& p) {
                p = Json{{"ok", true}, {"congestion", {{"qps", Json::array({Json{{"qpn", 2}}})}, {"more_after", 2}}}};
                return true;
            },
            err);
        CHECK_FALSE(ok);
        CHECK(err == "the daemon's congestion pages do not move on (a simnic daemon bug)");
    }
    SECTION("a reply without a cursor is left as it is") {
        StatsPages e;
        e.qpns = range(1, 2);
        Json r = e.page(0, true);
        const Json before = r;
        REQUIRE(fetch_stats_pages("d", r, [&e](const Json& q, Json& p) { return e.ask(q, p); }, err));
        CHECK(e.asked == 0);
        CHECK(r == before);
    }
}
