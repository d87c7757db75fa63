// The guided mapping agent's repair of failures (GuidedGenerators.h): edits read from a failed
// evaluation's error, its detail and AutoGuide's findings -- a layout the variant needs, memories to
// fall back to, collections and instance limits when memory runs out, variants and placements.
#include "mapping/GuidedGenerators.h"

#include "support/JsonText.h"

#include <fmt/format.h>

#include <algorithm>

namespace hone::mapping::guided {

using model::ProcKind;
using nlohmann::json;

std::vector<Edit> fixesFor(const Context &ctx, const std::string &evidence, const json &profile,
                           const support::Feedback &feedback) {
  std::vector<Edit> fixes;
  std::string kind = profile.is_object() ? support::textOf(profile, "error_kind") : "";
  std::string text = evidence + "\n" + (profile.is_object() ? support::textOf(profile, "error_detail") : "");
  for (const support::Finding &f : feedback.findings)
    text += "\n" + f.evidence;
  std::vector<std::string> named;
  for (const auto &t : ctx.app.tasks)
    if (mentions(text, t.name))
      named.push_back(t.name);
  // A layout the variant needs: the app model says which.
  for (const auto &t : ctx.app.tasks)
    for (const auto &need : t.layoutNeeds)
      if (!need.message.empty() && text.find(need.message) != std::string::npos && ctx.param(t.name + ".layout")) {
        std::string layout = fmt::format("SOA {}", need.order.value_or("C_order"));
        fixes.push_back(
            layoutEdit(t.name, layout, fmt::format("{} needs {} instances: \"{}\"", t.name, layout, need.message)));
      }
  for (const auto &task : named) {
    ProcKind k = ctx.kindOf(task);
    if (kind == "layout" && ctx.param(task + ".layout"))
      for (const char *layout : {"SOA C_order", "SOA F_order"})
        fixes.push_back(
            layoutEdit(task, layout, fmt::format("the runtime rejected {}'s layout; try {}", task, layout)));
    if (kind == "memory") {
      // The region that did not fit keeps its memory first and falls back to another.
      for (const auto &t : ctx.app.tasks)
        if (t.name == task)
          for (const auto &region : regionsOf(t)) {
            if (!mentions(text, region))
              continue;
            for (const auto &full : ctx.space.memoryKinds(k))
              if (mentions(text, full))
                for (const auto &other : ctx.space.memoryKinds(k))
                  if (other != full)
                    fixes.push_back(regionEdit(
                        task, region, k, full + "," + other,
                        fmt::format("let {} of {} fall back to {} when {} is full", region, task, other, full)));
          }
      if (const Param *p = ctx.param(task + ".collect"))
        fixes.push_back({"CollectMemory " + task,
                         fmt::format("CollectMemory {} *;", p->task),
                         fmt::format("out of memory: free {}'s read-only instances after it runs", task),
                         {}});
      if (ctx.param(task + ".instance_limit"))
        fixes.push_back({"InstanceLimit " + task,
                         fmt::format("InstanceLimit {} 1;", task),
                         fmt::format("out of memory: bound {}'s instances in flight to 1 per processor", task),
                         {}});
      for (const auto &t : ctx.app.tasks)
        if (t.name == task)
          for (const auto &region : regionsOf(t)) {
            auto lists = ctx.memoryLists(task, region);
            auto fallback = std::find_if(lists.begin(), lists.end(),
                                         [](const std::string &l) { return l.find(',') != std::string::npos; });
            if (fallback != lists.end())
              fixes.push_back(regionEdit(task, region, k, *fallback,
                                         fmt::format("out of memory: let {} of {} fall back to {}", region, task,
                                                     fallback->substr(fallback->find(',') + 1))));
          }
    }
    if (kind == "variant")
      if (const Param *p = ctx.param(task + ".processor"))
        for (const auto &v : p->values)
          fixes.push_back({"Task " + task,
                           fmt::format("Task {} {};", task, v),
                           fmt::format("no valid variant: list {}'s own kinds ({})", task, v),
                           {}});
    if (kind == "placement" || kind == "variant")
      for (const char *suffix : {".placement", ".single_placement"})
        if (const Param *p = ctx.param(task + suffix))
          fixes.push_back(placementEdit(*p, p->kind == ParamKind::SinglePlacement ? "parent" : "hblock", k,
                                        fmt::format("the placement of {} failed; use a library function", task)));
    if (kind == "memory" || kind == "policy")
      for (const auto &t : ctx.app.tasks)
        if (t.name == task)
          for (const auto &region : regionsOf(t))
            for (const auto &list : ctx.memoryLists(task, region))
              fixes.push_back(regionEdit(task, region, k, list,
                                         fmt::format("{} failed for {}'s {}; try {}", kind, task, region, list)));
  }
  return fixes;
}

} // namespace hone::mapping::guided
