#include "object_command.h"

#include <memory>

namespace simnic::cli {

Runner add_object_command(CLI::App& app, const ObjectCommandText& text, ObjectVerbs verbs) {
    auto args = std::make_shared<ObjectArgs>();
    // Which verb CLI11 selected: the runner is called after parsing, once.
    auto chosen = std::make_shared<std::function<int(const ObjectArgs&)>>();
    CLI::App* sub = app.add_subcommand(text.name, text.help);
    sub->require_subcommand(1);
    CLI::App* add = sub->add_subcommand("add", text.add_help);
    add->footer(text.add_footer);
    add->add_option("words", args->words, text.add_words)->required();
    add->callback([chosen, f = verbs.add] { *chosen = f; });
    CLI::App* show = sub->add_subcommand("show", text.show_help);
    show->add_option("words", args->words, text.show_words);
    show->add_flag("-j,--json", args->json, "JSON output");
    show->callback([chosen, f = verbs.show] { *chosen = f; });
    CLI::App* del = sub->add_subcommand("delete", text.del_help);
    del->alias("del");
    del->add_option("words", args->words, text.del_words)->required();
    del->callback([chosen, f = verbs.del] { *chosen = f; });
    for (const ObjectVerb& v : verbs.more) {
        CLI::App* sv = sub->add_subcommand(v.name, v.help);
        sv->add_option("words", args->words, v.words)->required();
        sv->callback([chosen, f = v.run] { *chosen = f; });
    }
    return [args, chosen] { return *chosen ? (*chosen)(*args) : 2; };
}

}  // namespace simnic::cli
