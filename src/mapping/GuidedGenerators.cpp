// The guided mapping agent's edit generators (GuidedGenerators.h): per bottleneck kind, from the task
// statistics, and exploration. Each reads the best mapper through a Context and appends edits with
// the time each could save as its gain, the order the agent tries them in.
#include "mapping/GuidedGenerators.h"

#include "mapping/GuidedRender.h"
#include "sim/Resources.h"
#include "support/JsonText.h"
#include "model/Kinds.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

namespace hone::mapping::guided {

using model::ProcKind;
using nlohmann::json;

namespace {

/// Processors wait while data moves to them: place the busiest leaf launch and the (untimed)
/// launches that write the data it reads with one placement pattern, so that each block starts
/// where it is used. One such change alone moves the data elsewhere and loses; they pay off
/// together, so they are one candidate.
void colocate(const Context &ctx, const std::string &detail, std::vector<Edit> &edits) {
  for (const auto &task : ctx.busiestTasks()) {
    const model::Task *t = ctx.app.task(task);
    const Param *p = ctx.param(task + ".placement");
    if (!t || t->inner() || !p || !ctx.statOf(task))
      continue;
    ProcKind k = ctx.kindOf(task);
    std::vector<const Param *> producers;
    std::vector<std::string> names;
    for (const auto &producer : ctx.app.tasks) {
      const Param *pp = ctx.param(producer.name + ".placement");
      if (producer.name == task || producer.inner() || ctx.statOf(producer.name) || !pp ||
          ctx.kindOf(producer.name) != k)
        continue;
      bool feeds = false;
      for (const auto &parg : producer.args)
        for (const auto &arg : t->args)
          feeds = feeds || (rootOf(ctx.app, parg.region) == rootOf(ctx.app, arg.region) &&
                            parg.privilege != model::Privilege::Read);
      if (feeds) {
        producers.push_back(pp);
        names.push_back(producer.name);
      }
    }
    if (producers.empty())
      continue;
    for (const auto &pattern : p->values) {
      if (pattern == "default" || ctx.placedWith(*p, pattern))
        continue; // the library's block stands in for Legion's default below
      Edit e = placementEdit(*p, pattern, k,
                             fmt::format("place {} and the launches that write its inputs ({}) with the {} "
                                         "placement, so each block starts where it is read -- {}",
                                         task, fmt::join(names, ", "), pattern, detail));
      for (const Param *pp : producers)
        if (std::find(pp->values.begin(), pp->values.end(), pattern) != pp->values.end())
          e.with.push_back(placementEdit(*pp, pattern, k, "(placed together with " + task + ")"));
      if (e.with.empty())
        continue;
      e.gain = 2e-9 * ctx.stat(task, "busy_s"); // before the single spreads, after what the evidence prices
      e.settles = false;                        // the other patterns stay worth a try
      edits.push_back(std::move(e));
    }
    return; // the busiest such launch only
  }
}

/// Processors wait while the busiest leaf's inputs move between them: let the (untimed) launch
/// that writes one of those inputs run on another processor kind, in a memory of that kind the
/// leaf's kind cannot reach, so that its copies to the leaf take that memory's links instead of
/// the links between the leaf's processors, which carry the other inputs. One change alone fails
/// or does nothing -- the processor kind, a memory that kind reaches for each region the launch
/// writes, and a placement in that kind's machine space (where the start places the launch with a
/// function of its own) -- so they are one candidate, derived from the space's constraints: which
/// kinds the launch has variants for and which memories each kind reaches.
void stageThroughHost(const Context &ctx, const std::string &detail, std::vector<Edit> &edits) {
  if (support::numberOf(ctx.best.profile, "bytes_copied") <= 0)
    return; // nothing moves: the wait is not for data
  for (const auto &task : ctx.busiestTasks()) {
    const model::Task *t = ctx.app.task(task);
    if (!t || t->inner() || !ctx.statOf(task))
      continue;
    ProcKind k = ctx.kindOf(task);
    std::vector<std::string> own = ctx.space.memoryKinds(k);
    std::vector<Edit> staged;
    for (const auto &producer : ctx.app.tasks) {
      const Param *proc = ctx.param(producer.name + ".processor");
      if (producer.name == task || producer.inner() || ctx.statOf(producer.name) || !proc ||
          ctx.kindOf(producer.name) != k)
        continue;
      std::set<std::string> fed; // roots of the leaf's inputs this launch writes
      for (const auto &parg : producer.args)
        for (const auto &arg : t->args)
          if (sameData(ctx.app, parg.region, arg.region) && parg.privilege != model::Privilege::Read)
            fed.insert(rootOf(ctx.app, arg.region));
      if (fed.empty())
        continue;
      for (const auto &order : proc->values) {
        auto other = model::parseProcKind(order.substr(0, order.find(',')));
        if (!other || *other == k)
          continue;
        std::vector<std::string> reach = ctx.space.memoryKinds(*other);
        auto reachable = [&](const std::string &list) { // every kind of a "FBMEM,ZCMEM" priority list
          for (size_t at = 0; at <= list.size();) {
            size_t end = std::min(list.find(',', at), list.size());
            if (std::find(reach.begin(), reach.end(), list.substr(at, end - at)) == reach.end())
              return false;
            at = end + 1;
          }
          return true;
        };
        Edit e{"Task " + producer.name, fmt::format("Task {} {};", producer.name, order), "", {}};
        bool complete = true;
        std::vector<std::string> where;
        for (const auto &region : regionsOf(producer)) {
          // A memory the leaf's kind cannot reach first (its data must travel the host's links).
          std::string pick;
          for (const auto &list : ctx.memoryLists(producer.name, region))
            if (reachable(list) && pick.empty() &&
                std::find(own.begin(), own.end(), list.substr(0, list.find(','))) == own.end())
              pick = list;
          if (pick.empty()) {
            complete = false;
            break;
          }
          e.with.push_back(regionEdit(producer.name, region, *other, pick, "(with the processor change above)"));
          where.push_back(fmt::format("{} in {}", region, pick));
        }
        if (!complete)
          continue;
        if (const Param *p = ctx.param(producer.name + ".placement"); p && ctx.start.maps(producer.name, *other, false))
          e.with.push_back(placementEdit(*p, "default", *other, "(the start places it on another kind)"));
        e.rationale =
            fmt::format("run {} (which writes {}, read by {}) on {} with {}, so that {}'s copies of it "
                        "take the links of {} instead of those between the {}s, which carry its other "
                        "inputs -- {}",
                        producer.name, fmt::join(fed, ", "), task, model::toString(*other), fmt::join(where, ", "),
                        task, where.size() == 1 ? "that memory" : "those memories", model::toString(k), detail);
        staged.push_back(std::move(e));
        break; // the first other kind in the space's order
      }
    }
    // What it saves is not priced by the profile (which copies wait on which link): after what the
    // evidence prices and after placing the leaf with its producers (which removes copies rather
    // than moving them), before spreading launches at random.
    for (auto &e : staged) {
      e.gain = 1.5e-9 * ctx.stat(task, "busy_s");
      edits.push_back(std::move(e));
    }
    return; // the busiest leaf only
  }
}

/// A timed task reads an argument in place from a memory every processor of the node reaches
/// (zero-copy) while the (untimed) launch that writes the data leaves it in another memory its
/// processor reaches: every instance the task reads is copied over first. Writing the data where
/// it is read saves those copies (and the runtime's work to issue them).
void writeWhereRead(const Context &ctx, double cost, const std::string &detail, std::vector<Edit> &edits) {
  std::set<std::string> seen;
  for (const auto &task : ctx.busiestTasks()) {
    const model::Task *t = ctx.app.task(task);
    if (!t || t->inner() || !ctx.statOf(task))
      continue;
    std::vector<std::string> sharedMems = ctx.sharedKinds(task);
    for (const auto &arg : t->args) {
      std::string now = ctx.memoryOf(task, arg.region);
      if (arg.privilege != model::Privilege::Read && arg.privilege != model::Privilege::ReadWrite)
        continue;
      if (now.empty() || std::find(sharedMems.begin(), sharedMems.end(), now) == sharedMems.end())
        continue;
      for (const auto &producer : ctx.app.tasks) {
        if (producer.name == task || producer.inner() || ctx.statOf(producer.name))
          continue;
        ProcKind pk = ctx.kindOf(producer.name);
        for (const auto &parg : producer.args) {
          if (!sameData(ctx.app, parg.region, arg.region) || parg.privilege == model::Privilege::Read ||
              !seen.insert(producer.name + "|" + parg.region).second)
            continue;
          for (const auto &list : ctx.memoryLists(producer.name, parg.region)) {
            if (list.substr(0, list.find(',')) != now)
              continue;
            std::string as = arg.region == parg.region ? "" : fmt::format(" (as {})", arg.region);
            Edit e = regionEdit(producer.name, parg.region, pk, list,
                                fmt::format("write {} of {} in {}, where {} reads it{} in place, instead of "
                                            "copying it there first -- {}",
                                            parg.region, producer.name, list, task, as, detail));
            e.gain = 1e-3 * cost;
            edits.push_back(std::move(e));
            break; // the first list that starts with it (its fallback: the space's order)
          }
        }
      }
    }
  }
}

} // namespace

const std::map<sim::BottleneckKind, std::vector<Generator>> &generators() {
  using K = sim::BottleneckKind;
  static const std::map<K, std::vector<Generator>> table = {
      {K::Variant, {&fasterVariant}},     {K::Channel, {&keepDataLocal, &writeWhereReadFor}},
      {K::Idle, {&spreadWork}},           {K::Processor, {&spreadWork, &stageThroughHostFor, &moreInstancesInFlight}},
      {K::Runtime, {&writeWhereReadFor}}, {K::Memory, {&releaseMemory}}};
  return table;
}

void addressBottleneck(const Context &ctx, const support::Bottleneck &b, std::vector<Edit> &edits) {
  auto kind = sim::parseBottleneckKind(b.kind);
  if (!kind)
    return; // not the simulator's: nothing this agent knows how to address
  auto it = generators().find(*kind);
  if (it == generators().end())
    return;
  Hit h{b.subject, b.detail, b.share, support::numberOf(ctx.best.profile, "time_s")};
  for (Generator g : it->second)
    g(ctx, h, edits);
}

void fasterVariant(const Context &ctx, const Hit &h, std::vector<Edit> &edits) {
  if (!ctx.app.task(h.resource))
    return;
  const std::string &resource = h.resource;
  const std::string &detail = h.detail;
  if (const Param *p = ctx.param(resource + ".processor"))
    for (const auto &v : p->values)
      if (v.rfind(std::string(model::toString(ctx.kindOf(resource))), 0) != 0) {
        Edit e{"Task " + resource,
               fmt::format("Task {} {};", resource, v),
               fmt::format("run {} on {} first -- {}", resource, v.substr(0, v.find(',')), detail),
               {}};
        e.gain = std::max(0.0, ctx.stat(resource, "busy_s") - ctx.stat(resource, "best_variant_s"));
        edits.push_back(std::move(e));
      }
}

void keepDataLocal(const Context &ctx, const Hit &h, std::vector<Edit> &edits) {
  const std::string &detail = h.detail;
  double share = h.share, elapsed = h.elapsed;
  double gain = share * elapsed;
  for (const auto &task : ctx.busiestTasks()) {
    const model::Task *t = ctx.app.task(task);
    if (!t || (!ctx.statOf(task) && !t->inner()))
      continue; // untimed (setup) work does not copy in the measured part
    ProcKind k = ctx.kindOf(task);
    for (const char *suffix : {".single_placement", ".placement"})
      if (const Param *p = ctx.param(task + suffix);
          p && std::find(p->values.begin(), p->values.end(), "parent") != p->values.end() &&
          !ctx.placedWith(*p, "parent")) {
        if (ctx.start.maps(task, k, p->kind == ParamKind::SinglePlacement))
          continue; // the start places it already, deliberately
        Edit e = placementEdit(*p, "parent", k,
                               fmt::format("run {} on its parent's processor, so the data it shares with its "
                                           "parent and siblings stays local -- {}",
                                           task, detail));
        e.gain = 0.9 * gain;
        edits.push_back(std::move(e));
      }
    if (t->inner())
      continue;
    // Where the data comes from decides what moves: place the setup tasks that write
    // this task's inputs with Legion's default block (then the other patterns).
    std::set<std::string> producedSeen; // (producer, consumer) pairs handled for this task
    for (const auto &arg : t->args)
      for (const auto &producer : ctx.app.tasks) {
        // Setup work (untimed) on the consumer's kind: where it runs decides which
        // processor's memory the data starts in.
        if (producer.name == task || producer.inner() || ctx.statOf(producer.name) || ctx.kindOf(producer.name) != k)
          continue;
        bool writes = false;
        for (const auto &parg : producer.args)
          writes = writes || (rootOf(ctx.app, parg.region) == rootOf(ctx.app, arg.region) &&
                              parg.privilege != model::Privilege::Read);
        const Param *p = ctx.param(producer.name + ".placement");
        if (!writes || !p || producedSeen.count(producer.name + "|" + task))
          continue;
        producedSeen.insert(producer.name + "|" + task);
        for (const auto &pattern : p->values) {
          if (ctx.placedWith(*p, pattern == "default" ? "block" : pattern))
            continue;
          Edit e = placementEdit(*p, pattern, ctx.kindOf(producer.name),
                                 fmt::format("place {} (which writes {}, read by {}) with the {} placement, so "
                                             "the data starts where it is used -- {}",
                                             producer.name, rootOf(ctx.app, arg.region), task, pattern, detail));
          // Legion's default block first; the other patterns only after every other idea.
          e.gain = (pattern == "default" ? 0.3 : 1e-3) * gain;
          edits.push_back(std::move(e));
        }
      }
    for (const auto &arg : t->args) {
      std::string now = ctx.memoryOf(task, arg.region);
      bool readOnly = arg.privilege == model::Privilege::Read;
      if (!shared(ctx.app, arg.region) && (!readOnly || privateTo(ctx.app, *t, arg)))
        continue;
      for (const auto &m : ctx.sharedKinds(task))
        if (m != now && m != ctx.memoryLists(task, arg.region).front()) {
          Edit e = regionEdit(task, arg.region, k, m,
                              fmt::format("keep the {} region {} of {} in {}, which every processor of the node "
                                          "reads, instead of copying it -- {}",
                                          shared(ctx.app, arg.region) ? "shared" : "read-only", arg.region, task, m,
                                          detail));
          e.gain = (shared(ctx.app, arg.region) ? 1.0 : 0.5) * gain;
          edits.push_back(std::move(e));
        }
    }
  }
}

void spreadWork(const Context &ctx, const Hit &h, std::vector<Edit> &edits) {
  if (ctx.busiestKindShare() >= 0.95)
    return;
  const std::string &detail = h.detail;
  colocate(ctx, detail, edits);
  for (const auto &task : ctx.busiestTasks())
    for (const char *suffix : {".placement", ".single_placement"})
      if (const Param *p = ctx.param(task + suffix))
        for (const auto &pattern : p->values)
          if (pattern != "default" && !ctx.placedWith(*p, pattern)) {
            Edit e = placementEdit(*p, pattern, ctx.kindOf(task),
                                   fmt::format("spread {} with the {} placement -- {}", task, pattern, detail));
            e.gain = 1e-9 * ctx.stat(task, "busy_s");
            edits.push_back(std::move(e));
          }
}

void stageThroughHostFor(const Context &ctx, const Hit &h, std::vector<Edit> &edits) {
  if (h.share < 0.95)
    stageThroughHost(ctx, h.detail, edits);
}

void writeWhereReadFor(const Context &ctx, const Hit &h, std::vector<Edit> &edits) {
  writeWhereRead(ctx, h.share * h.elapsed, h.detail, edits);
}

void moreInstancesInFlight(const Context &ctx, const Hit &h, std::vector<Edit> &edits) {
  if (h.share >= 0.95)
    return;
  const std::string &detail = h.detail;
  double share = h.share, elapsed = h.elapsed;
  for (const auto &t : ctx.app.tasks) {
    if (!ctx.param(t.name + ".instance_limit"))
      continue;
    auto limit = ctx.start.instanceLimit(t.name, ctx.kindOf(t.name));
    const Edit *have = ctx.best.version.find("InstanceLimit " + t.name);
    if (!limit || have)
      continue;
    for (int64_t factor : {2, 4}) {
      Edit e{"InstanceLimit " + t.name,
             fmt::format("InstanceLimit {} {};", t.name, *limit * factor),
             fmt::format("allow {} instances of {} in flight per processor (was {}) to overlap copies with "
                         "work -- {}",
                         *limit * factor, t.name, *limit, detail),
             {}};
      e.gain = (1 - share) * elapsed * 0.5 / static_cast<double>(factor);
      edits.push_back(std::move(e));
    }
  }
}

void releaseMemory(const Context &ctx, const Hit &h, std::vector<Edit> &edits) {
  const std::string &detail = h.detail;
  double share = h.share;
  for (const auto &t : ctx.app.tasks) {
    if (const Param *p = ctx.param(t.name + ".collect")) {
      Edit e{"CollectMemory " + t.name,
             fmt::format("CollectMemory {} *;", p->task),
             fmt::format("collect {}'s read-only instances after use -- {}", t.name, detail),
             {}};
      e.gain = 1e-6 * share;
      edits.push_back(std::move(e));
    }
    if (ctx.param(t.name + ".instance_limit")) {
      Edit e{"InstanceLimit " + t.name,
             fmt::format("InstanceLimit {} 1;", t.name),
             fmt::format("bound {}'s instances in flight -- {}", t.name, detail),
             {}};
      e.gain = 1e-6 * share;
      edits.push_back(std::move(e));
    }
  }
}

void slowArguments(const Context &ctx, std::vector<Edit> &edits) {
  for (const auto &task : ctx.busiestTasks()) {
    const model::Task *t = ctx.app.task(task);
    const json *have = ctx.statOf(task);
    if (!have || !have->contains("best_variant_s"))
      continue; // the profile does not know (a real run's): no evidence to act on
    double excess = ctx.stat(task, "busy_s") - ctx.stat(task, "best_variant_s");
    if (!t || t->inner() || excess <= 0)
      continue;
    ProcKind k = ctx.kindOf(task);
    std::vector<std::string> slow;
    for (const auto &region : regionsOf(*t)) {
      auto lists = ctx.memoryLists(task, region);
      if (!lists.empty() && ctx.memoryOf(task, region) != lists.front().substr(0, lists.front().find(',')))
        slow.push_back(region);
    }
    for (const auto &region : slow) {
      std::string fast = ctx.memoryLists(task, region).front();
      Edit e = regionEdit(task, region, k, fast,
                          fmt::format("place {} of {} in {} -- {} is busy {}, about {} more than at its fastest "
                                      "memories; {} is in {}",
                                      region, task, fast, task, ms(ctx.stat(task, "busy_s")), ms(excess), region,
                                      ctx.memoryOf(task, region)));
      e.gain = excess / static_cast<double>(slow.size());
      edits.push_back(std::move(e));
    }
  }
}

void recopies(const Context &ctx, std::vector<Edit> &edits) {
  if (!ctx.best.profile.contains("task_stats"))
    return;
  for (const auto &b : ctx.best.evidence.bottlenecks)
    if (sim::parseBottleneckKind(b.kind) == sim::BottleneckKind::Memory)
      return; // collection is what keeps the memory from filling
  double copied = support::numberOf(ctx.best.profile, "bytes_copied");
  double elapsed = support::numberOf(ctx.best.profile, "time_s");
  for (const auto &t : ctx.best.profile["task_stats"]) {
    std::string task = support::textOf(t, "name");
    double again = t.value("recopied_bytes", 0.0);
    if (again <= 0 || copied <= 0 || !ctx.start.collects(task))
      continue;
    Edit e{"CollectMemory " + task,
           "",
           fmt::format("stop collecting {}'s read-only instances after use -- {} of the {} copied are copied again "
                       "into memories that held them until CollectMemory released them",
                       task, sim::bytesText(again), sim::bytesText(copied)),
           {}};
    // The share of the copies that need not happen, of the time the processors wait.
    e.gain = (again / copied) * (1 - ctx.busiestKindShare()) * elapsed;
    edits.push_back(std::move(e));
  }
}

void explore(const Context &ctx, std::vector<Edit> &edits) {
  for (const auto &task : ctx.busiestTasks()) {
    const model::Task *t = ctx.app.task(task);
    if (!t)
      continue;
    double busy = 0;
    if (const json *s = ctx.statOf(task))
      busy = s->value("busy_s", 0.0);
    std::string why =
        busy > 0 ? fmt::format("explore: {} is busy {} in total", task, ms(busy)) : fmt::format("explore: {}", task);
    ProcKind k = ctx.kindOf(task);
    // Arguments shared between points first: a private piece is best where the task runs.
    std::vector<std::string> regions, privates;
    for (const auto &region : regionsOf(*t)) {
      bool priv = std::all_of(t->args.begin(), t->args.end(),
                              [&](const model::Arg &a) { return a.region != region || privateTo(ctx.app, *t, a); });
      (priv ? privates : regions).push_back(region);
    }
    regions.insert(regions.end(), privates.begin(), privates.end());
    for (const auto &region : regions) {
      std::string now = ctx.memoryOf(task, region);
      std::vector<std::string> reach = ctx.space.memoryKinds(k);
      const std::vector<std::string> lists = ctx.memoryLists(task, region);
      if (lists.size() < 2)
        continue; // one memory to choose from (a machine with one memory): nothing to try
      for (const auto &list : lists) {
        std::string first = list.substr(0, list.find(','));
        std::string second = list.find(',') == std::string::npos ? first : list.substr(list.find(',') + 1);
        bool reachable = std::find(reach.begin(), reach.end(), first) != reach.end() &&
                         std::find(reach.begin(), reach.end(), second) != reach.end();
        if (first != now && reachable) // a kind the processor cannot reach would only fail
          edits.push_back(regionEdit(task, region, k, list, fmt::format("{}; try {} in {}", why, region, list)));
      }
    }
    for (const char *suffix : {".placement", ".single_placement"})
      if (const Param *p = ctx.param(task + suffix))
        for (const auto &pattern : p->values)
          edits.push_back(placementEdit(*p, pattern, k, fmt::format("{}; try the {} placement", why, pattern)));
    if (const Param *p = ctx.param(task + ".layout"))
      for (const auto &layout : p->values)
        edits.push_back(layoutEdit(task, layout, fmt::format("{}; try the {} layout", why, layout)));
  }
}

std::vector<Edit> rankedEdits(const Context &ctx) {
  std::vector<Edit> edits;
  if (ctx.best.found) {
    slowArguments(ctx, edits);
    recopies(ctx, edits);
    for (const auto &b : ctx.best.evidence.bottlenecks)
      addressBottleneck(ctx, b, edits);
  }
  std::stable_sort(edits.begin(), edits.end(), [](const Edit &a, const Edit &b) { return a.gain > b.gain; });
  explore(ctx, edits);
  return edits;
}

} // namespace hone::mapping::guided
