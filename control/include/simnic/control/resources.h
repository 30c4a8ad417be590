// The `resources` op's pages: what `simnic resource show` and `simnic
// doctor` list (a device's QPs, CQs, MRs, MWs, PDs, SRQs, GIDs and CM IDs).
//
// A device may hold tens of thousands of objects, and one reply carries no
// more than its connection does (message_capacity: 416 KiB for an
// unprivileged daemon on a default Linux, some 3,000 MRs). So the daemon
// answers in pages, as a netlink dump does for `rdma resource show`: each
// reply holds the device records it has room for, whole or in part, and a
// cursor ("more") when there is more; the client asks again with that
// cursor as "after" and appends what comes (merge_resource_page).
//
//   {"op":"resources"[,"device":N][,"lists":"qp_list,gids"][,"after":C]}
//     -> {"ok":true,"devices":[{"name":..,"qps":..,..,LIST:[..],..}][,"more":C]}
//
// "lists" names the lists wanted (kResourceLists' names, comma-separated;
// empty: none, only the counts); without it, all of them. A cursor C is
// {"device":D,"list":L,"key":K}: the page ended after the entry of list L
// of device D whose key field is K. Devices come in name order, lists in
// kResourceLists' order, entries in key order; the next page starts after
// the cursor, so an object made or destroyed between pages is seen once or
// not at all, never twice, and a device deleted between pages is skipped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "simnic/control/protocol.h"

namespace simnic::control {

struct ResourceList {
    std::string_view name;  // the list's field in a device record
    std::string_view key;   // the field that numbers its entries (unique on the device)
};
inline constexpr ResourceList kResourceLists[] = {
    {"qp_list", "qpn"}, {"cq_list", "cqn"},     {"mr_list", "mrn"}, {"mw_list", "mwn"},
    {"pd_list", "pdn"}, {"srq_list", "srqn"}, {"gids", "index"},  {"cm_id_list", "cm-idn"},
};

// The lists a request's "lists" names (all when it has none), in
// kResourceLists' order; nullopt with `err` set when it names one that does
// not exist.
std::optional<std::vector<std::string_view>> resource_lists_of(std::optional<std::string_view> lists,
                                                              std::string& err);

// One device as the pager sees it: its record without lists (name and
// counts), and its lists, each made when a page reaches it.
// list(L, after, limit) gives list L's entries whose keys are above `after`
// (all of them without one), in any order: at most `limit` of them, those
// with the smallest keys; fewer than `limit` when there are no more. A page
// deep into a long list then costs the maker that page's entries, not the
// list's. A maker may also ignore both and give the whole list each time:
// the pager drops what it is given at or below `after`, and stops asking
// when a batch brings nothing new.
struct ResourceDevice {
    std::string name;
    Json header;
    std::function<Json(std::string_view list, std::optional<std::uint64_t> after, std::size_t limit)> list;
};

// One page: the devices (in name order) from `after` on (null: from the
// start), their `lists`, as many entries as fit in `budget` bytes of JSON
// (at least one, so that every page moves on). Returns {"devices":[..]} and
// "more" when the page was cut.
Json resource_page(std::vector<ResourceDevice> devices, const std::vector<std::string_view>& lists,
                   const Json& after, std::size_t budget);

// How many of `items`' first entries fit in `budget` bytes of JSON, each
// with its comma; at least one, so that a list in pages moves on (`stats`
// pages its per-QP congestion list with it).
std::size_t entries_that_fit(const Json& items, std::size_t budget);

// Completes a `stats` reply whose per-QP congestion list was cut
// ("congestion.more_after"): asks for the later pages ({"op":"stats",
// "device":D,"qps_after":QPN}) with `ask` and appends their QPs, leaving
// the reply as one whole. A later page may be empty (the QPs after the
// cursor were destroyed meanwhile). False if a reply failed, or a page went
// back or stood still (`err` says so).
bool fetch_stats_pages(const std::string& device, Json& reply,
                       const std::function<bool(const Json& req, Json& reply)>& ask, std::string& err);

// Appends one page's device records to `into` (an array): a device already
// there gets the page's entries after its own. The page's entries are moved,
// not copied (pass a copy to keep it).
void merge_resource_page(Json& into, Json page_devices);

// Asks for every page of `req` with `ask` (one request, one reply; false:
// stop, the error told), and returns the merged device records in `out`.
// False if a reply failed, or did not move the cursor on (`err` says so).
bool fetch_resources(Json req, const std::function<bool(const Json& req, Json& reply)>& ask, Json& out,
                     std::string& err);

}  // namespace simnic::control
