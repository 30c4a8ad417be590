// Devices that come back (`simnic link add ... persist`): the link_add
// requests of the devices a user asked to keep, one JSON object per line, in
// $SIMNIC_CONFIG_DIR/devices.jsonl, else
// ${XDG_CONFIG_HOME:-$HOME/.config}/simnic/devices.jsonl. The CLI writes an
// entry once the daemon has created the device (with absolute paths and a
// model device's config text, so that it means the same from any directory)
// and removes it at `simnic link delete`; a daemon re-creates every entry
// when it starts, as the tutorial's system unit re-creates rxe0 at boot.
// The file is rewritten whole (a new file renamed over the old), so a crash
// leaves the old list or the new one.
#pragma once

#include <string>
#include <vector>

#include "simnic/control/protocol.h"

namespace simnic::control {

std::string persisted_devices_path();

// The kept requests, in the order they were kept. A missing file is an empty
// list; a line that is not a JSON object with a "name" is skipped and named
// in `err` (the rest still load).
std::vector<Json> load_persisted(std::string& err);

// Keeps `link_add` (a link_add request) under its name, in place of an
// older entry of that name. Empty, or why not.
std::string persist_device(const Json& link_add);

// Forgets the entry named `name` (`found` says whether there was one).
// Empty, or why not.
std::string forget_device(const std::string& name, bool& found);

}  // namespace simnic::control
