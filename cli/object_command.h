// The `add` / `show` / `delete` shape that `simnic link` and `simnic fabric` share, as iproute2's
// objects do: positional words for each verb, `show -j` for JSON, `del` as an alias of `delete`.
// Written once so that the two read and behave alike; each command keeps its own word parsing.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "commands.h"

namespace simnic::cli {

struct ObjectArgs {
    std::vector<std::string> words;  // NAME and what follows it
    bool json = false;               // show -j
};

struct ObjectCommandText {
    const char* name;        // "link"
    const char* help;        // the command's one line
    const char* add_help;    // add's one line
    const char* add_footer;  // add's usage, shown under its --help
    const char* add_words;   // what add's words are
    const char* show_help;
    const char* show_words;
    const char* del_help;
    const char* del_words;
};

// A verb of one object's own (`simnic fabric hold NAME`): its words are
// positional, as delete's.
struct ObjectVerb {
    const char* name;
    const char* help;
    const char* words;
    std::function<int(const ObjectArgs&)> run;
};

struct ObjectVerbs {
    std::function<int(const ObjectArgs&)> add, show, del;
    std::vector<ObjectVerb> more;
};

Runner add_object_command(CLI::App& app, const ObjectCommandText& text, ObjectVerbs verbs);

}  // namespace simnic::cli
