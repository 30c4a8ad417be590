// Devices and fabrics that come back (`simnic link add ... persist`,
// `simnic fabric add ... persist`): the link_add and fabric_add requests of
// the devices and fabrics a user asked to keep, one JSON object per line, in
// $SIMNIC_CONFIG_DIR/devices.jsonl, else
// ${XDG_CONFIG_HOME:-$HOME/.config}/simnic/devices.jsonl. The CLI writes an
// entry once the daemon has created the device or fabric (with absolute paths
// and the text of a model device's config and of a fabric's topology and
// config, so that it means the same from any directory and whatever happens
// to those files later) and removes it at `simnic link delete` / `simnic
// fabric delete`; a daemon re-creates every entry, in the order kept, when
// it starts, as the tutorial's system unit re-creates rxe0 at boot. An entry
// is known by its op and name: a device and a fabric may share a name.
// The file is rewritten whole (a new file renamed over the old), so a crash
// leaves the old list or the new one.
#pragma once

#include <string>
#include <vector>

#include "simnic/control/protocol.h"

namespace simnic::control {

std::string persisted_devices_path();

// The kept requests, in the order they were kept. A missing file is an empty
// list; a line that is not a JSON object with an "op" and a "name" is
// skipped and named in `err` (the rest still load).
std::vector<Json> load_persisted(std::string& err);

// True if exactly `req` is kept (a daemon starting now creates it).
bool is_persisted(const Json& req);

// Keeps `req` (a link_add or fabric_add request) under its op and name, in
// place of an older entry of both. Empty, or why not.
std::string persist_request(const Json& req);

// Forgets the entry of op `op` (link_add, fabric_add) named `name` (`found`
// says whether there was one). Empty, or why not.
std::string forget_request(const std::string& op, const std::string& name, bool& found);

}  // namespace simnic::control
