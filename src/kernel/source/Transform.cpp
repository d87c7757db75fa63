#include "kernel/source/Transform.h"

#include "kernel/source/Dependence.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

namespace hone::kernel::source {

std::string_view toString(Action a) {
  switch (a) {
  case Action::Parallel: return "parallel";
  case Action::Order: return "order";
  case Action::Tile: return "tile";
  case Action::Unroll: return "unroll";
  case Action::Simd: return "simd";
  }
  return "?";
}

namespace {

struct Edit {
  size_t begin, end;
  std::string text;
};

std::string apply(std::string text, std::vector<Edit> edits, size_t base = 0) {
  std::stable_sort(edits.begin(), edits.end(), [](const Edit &a, const Edit &b) { return a.begin > b.begin; });
  for (const auto &e : edits)
    text.replace(e.begin - base, e.end - e.begin, e.text);
  return text;
}

/// The leading whitespace of the line holding `offset`, and whether only whitespace precedes it there.
std::pair<std::string, bool> indentAt(const std::string &text, size_t offset) {
  size_t start = text.rfind('\n', offset == 0 ? 0 : offset - 1);
  start = start == std::string::npos ? 0 : start + 1;
  size_t first = start;
  while (first < offset && (text[first] == ' ' || text[first] == '\t'))
    ++first;
  return {text.substr(start, first - start), first == offset};
}

std::vector<int> leaves(const Nest &n, int from) {
  std::vector<int> out;
  std::vector<int> stack{from};
  while (!stack.empty()) {
    int l = stack.back();
    stack.pop_back();
    const Loop &L = n.loops[static_cast<size_t>(l)];
    if (L.children.empty())
      out.push_back(l);
    for (auto it = L.children.rbegin(); it != L.children.rend(); ++it)
      stack.push_back(*it);
  }
  return out;
}

/// The outermost loops (from `from` down) the dependence test proves parallel; `exact`: only those
/// that need no reduction clause (a reduction reassociates: the results may move in the last bits).
void parallelTargets(const Nest &n, int from, std::vector<std::pair<int, Parallelism>> &out, bool exact = false) {
  const Loop &L = n.loops[static_cast<size_t>(from)];
  if (!L.inMacro && L.step > 0) {
    Parallelism p = parallelism(n, from);
    if (p.legal && !(exact && !p.reductions.empty())) {
      out.push_back({from, std::move(p)});
      return;
    }
  }
  for (int c : L.children)
    parallelTargets(n, c, out, exact);
}

/// Privates of a loop forced parallel without proof: the variables of the loops inside it.
Parallelism forced(const Nest &n, int loop) {
  Parallelism p;
  for (size_t i = 0; i < n.loops.size(); ++i)
    if (static_cast<int>(i) != loop && !n.loops[i].declaresVar && !n.loops[i].var.empty() &&
        std::find(p.privates.begin(), p.privates.end(), n.loops[i].var) == p.privates.end())
      p.privates.push_back(n.loops[i].var);
  return p;
}

struct Pragmas {
  std::map<int, std::vector<std::string>> at; // loop -> pragma lines, outermost first
  /// loop -> the array elements it accumulates into, kept in locals around it (scalar replacement)
  std::map<int, std::vector<Parallelism::Element>> kept;
  void erase(int loop) {
    at.erase(loop);
    kept.erase(loop);
  }
};

/// The pragmas a choice puts on the loops of a nest that keeps its structure (from `from` down).
Pragmas pragmasFor(const Nest &n, const NestChoice &c, int from, bool parallelHere) {
  Pragmas out;
  std::set<int> parallelLoops;
  if (c.parallel && parallelHere) {
    std::vector<std::pair<int, Parallelism>> targets;
    parallelTargets(n, from, targets, c.exact);
    if (targets.empty() && n.loops[static_cast<size_t>(from)].step > 0)
      targets.push_back({from, forced(n, from)});
    for (auto &[l, p] : targets) {
      out.at[l].push_back("#pragma omp parallel for" + p.forClauses());
      parallelLoops.insert(l);
    }
  }
  auto leafList = leaves(n, from);
  std::vector<std::pair<int, Parallelism>> simd;
  if (c.simd) {
    for (int l : leafList)
      if (n.loops[static_cast<size_t>(l)].step > 0) {
        Parallelism p = parallelism(n, l, nullptr, !parallelLoops.count(l));
        if (p.legal)
          simd.push_back({l, std::move(p)});
      }
    if (simd.empty())
      for (int l : leafList)
        if (n.loops[static_cast<size_t>(l)].step > 0)
          simd.push_back({l, Parallelism{}});
  }
  for (auto &[l, p] : simd) {
    auto &lines = out.at[l];
    if (parallelLoops.count(l))
      lines.back() = "#pragma omp parallel for simd" + p.forClauses();
    else
      lines.push_back("#pragma omp simd" + p.clauses());
    if (!p.elements.empty())
      out.kept[l] = p.elements;
  }
  if (c.unroll > 1)
    for (int l : leafList)
      if (!out.at.count(l)) // a loop under an OpenMP directive takes no other pragma
        out.at[l].push_back(fmt::format("#pragma GCC unroll {}", c.unroll));
  return out;
}

/// Inserts pragma lines before loops (braces where the loop is the unbraced body of another).
std::vector<Edit> pragmaEdits(const Nest &n, const std::string &text, const Pragmas &p) {
  std::vector<Edit> out;
  for (const auto &[l, lines] : p.at) {
    if (lines.empty())
      continue;
    const Loop &L = n.loops[static_cast<size_t>(l)];
    auto [indent, alone] = indentAt(text, L.begin);
    auto kept = p.kept.find(l);
    bool keeps = kept != p.kept.end() && !kept->second.empty();
    bool brace = keeps || (L.parent >= 0 && !n.loops[static_cast<size_t>(L.parent)].bodyIsCompound);
    std::string pre = alone && !brace ? "" : "\n" + indent, post;
    if (brace)
      pre += "{\n" + indent;
    if (keeps) // each element in a local for the loop, stored back after it
      for (const auto &e : kept->second) {
        const Access &first = n.accesses[e.refs.front()];
        std::string element = text.substr(first.begin, first.end - first.begin);
        pre += fmt::format("__typeof__({}) {} = {};\n{}", element, e.local, element, indent);
        post += fmt::format("\n{}{} = {};", indent, element, e.local);
        for (size_t r : e.refs)
          out.push_back({n.accesses[r].begin, n.accesses[r].end, e.local});
      }
    for (const auto &line : lines)
      pre += line + "\n" + indent;
    out.push_back({L.begin, L.begin, pre});
    if (brace)
      out.push_back({L.end, L.end, post + "\n" + indent + "}"});
  }
  return out;
}

std::string header(const std::string &text, const Loop &L) {
  std::string h = text.substr(L.begin, L.bodyBegin - L.begin);
  while (!h.empty() && (h.back() == ' ' || h.back() == '\n' || h.back() == '\t' || h.back() == '\r'))
    h.pop_back();
  return h;
}

bool isParallelPragma(const std::string &line) { return line.rfind("#pragma omp parallel for", 0) == 0; }

/// The edits that rewrite the headers of the band from loop `root` as `b` says; the innermost loop's
/// body stays where it is (the edits of the loops inside it apply there). `pragmas` are the nest's
/// pragmas as written: the caller drops the band's own, and the band takes a parallel pragma where
/// one of its loops had one (the nest's own band: where the choice parallelises) and its new
/// outermost loop is parallel.
support::Expected<std::vector<Edit>> restructure(const Nest &n, const std::string &text, const NestChoice &c, int root,
                                                 const BandChoice &b, const Pragmas &pragmas) {
  auto band = n.bandFrom(root);
  const Loop &top = n.loops[static_cast<size_t>(root)];
  std::string what = root == 0 ? fmt::format("the nest at {}", n.label())
                               : fmt::format("the band at {}:{} of the nest at {}", n.file, top.line, n.label());
  std::string why;
  if (band.size() < 2)
    return support::Error{fmt::format("{} has no perfect band of two loops to reorder or tile", what)};
  if (!rectangular(n, band, &why))
    return support::Error{fmt::format("{}: {}", what, why)};
  std::vector<int> order = b.order;
  if (order.empty()) {
    order.resize(band.size());
    std::iota(order.begin(), order.end(), 0);
  }
  if (order.size() != band.size())
    return support::Error{fmt::format("{} has {} loops in its band, not {}", what, band.size(), order.size())};
  const Loop &inner = n.loops[static_cast<size_t>(band.back())];
  const std::string indent = indentAt(text, top.begin).first;
  std::string out, pad = "";
  auto line = [&](const std::string &s) {
    out += (out.empty() ? "" : "\n" + indent + pad) + s;
  };
  // The loop that moves outermost carries no dependence: it takes the parallel pragma.
  bool parallelHere = root == 0 ? c.parallel : std::any_of(band.begin(), band.end(), [&](int l) {
    auto it = pragmas.at.find(l);
    return it != pragmas.at.end() && std::any_of(it->second.begin(), it->second.end(), isParallelPragma);
  });
  if (parallelHere) {
    const int first = band[static_cast<size_t>(order[0])];
    std::vector<int> held; // the loops around the band, each at one iteration
    for (int l = top.parent; l >= 0; l = n.loops[static_cast<size_t>(l)].parent)
      held.push_back(l);
    Parallelism p = parallelism(n, first, &held);
    if (!p.legal && root == 0)
      p = forced(n, first);
    if ((p.legal || root == 0) && !(c.exact && !p.reductions.empty())) {
      // Tiled, the parallel loop is the first tile loop, and every element loop runs inside it: the
      // outermost element loop's variable is private too.
      for (size_t i = b.tile > 0 ? 0 : 1; i < order.size(); ++i) {
        const Loop &L = n.loops[static_cast<size_t>(band[static_cast<size_t>(order[i])])];
        if (!L.declaresVar && std::find(p.privates.begin(), p.privates.end(), L.var) == p.privates.end())
          p.privates.push_back(L.var);
      }
      line("#pragma omp parallel for" + p.forClauses());
    }
  }
  auto typeOf = [](const Loop &L) { return L.declaresVar ? L.varType : "__typeof__(" + L.var + ")"; };
  if (b.tile > 0) {
    for (int o : order) {
      const Loop &L = n.loops[static_cast<size_t>(band[static_cast<size_t>(o)])];
      std::string t = "hone_" + L.var + "_t";
      line(fmt::format("for ({} {} = {}; {} < ({}); {} += {})", typeOf(L), t, L.lower, t, L.upper, t, b.tile));
      pad += "  ";
    }
  }
  for (size_t i = 0; i < order.size(); ++i) {
    const Loop &L = n.loops[static_cast<size_t>(band[static_cast<size_t>(order[i])])];
    bool last = i + 1 == order.size();
    if (last && inner.children.empty()) {
      if (c.simd) {
        Parallelism p = parallelism(n, band[static_cast<size_t>(order[i])]);
        line("#pragma omp simd" + (p.legal ? p.clauses() : std::string()));
      } else if (c.unroll > 1) {
        line(fmt::format("#pragma GCC unroll {}", c.unroll));
      }
    }
    if (b.tile > 0) {
      std::string t = "hone_" + L.var + "_t";
      line(fmt::format("for ({}{} = {}; {} < ({} + {} < ({}) ? {} + {} : ({})); {}++)",
                       L.declaresVar ? L.varType + " " : "", L.var, t, L.var, t, b.tile, L.upper, t, b.tile, L.upper,
                       L.var));
    } else {
      line(header(text, L));
    }
    pad += "  ";
  }
  out += inner.bodyIsCompound ? " " : "\n" + indent + pad;
  std::vector<Edit> edits{{top.begin, inner.bodyBegin, out}};
  if (inner.bodyEnd < top.end) // the closing braces of the band's outer loops
    edits.push_back({inner.bodyEnd, top.end, ""});
  return edits;
}

} // namespace

bool BandChoice::identity() const { return tile <= 0 && std::is_sorted(order.begin(), order.end()); }

support::Expected<std::string> rewrite(const FileModel &f, const std::map<size_t, NestChoice> &choices) {
  std::vector<Edit> edits;
  for (const auto &[index, c] : choices) {
    if (index >= f.nests.size())
      return support::Error{fmt::format("{} has no nest {}", f.name, index)};
    const Nest &n = f.nests[index];
    const Loop &root = n.loops.front();
    if (root.inMacro)
      return support::Error{fmt::format("the nest at {} is written by a macro", n.label())};
    std::map<int, const BandChoice *> changed; // bands whose headers are rewritten
    std::set<int> rewritten;                   // their loops
    const std::vector<int> inner = n.innerBands();
    for (const auto &[top, b] : c.bands) {
      if (b.identity())
        continue;
      if (top < 0 || static_cast<size_t>(top) >= n.loops.size())
        return support::Error{fmt::format("the nest at {} has no loop {}", n.label(), top)};
      if (top != 0 && std::find(inner.begin(), inner.end(), top) == inner.end())
        return support::Error{fmt::format("the loop at {}:{} does not begin a perfect band of the nest at {}",
                                          n.file, n.loops[static_cast<size_t>(top)].line, n.label())};
      changed[top] = &b;
      for (int l : n.bandFrom(top))
        rewritten.insert(l);
    }
    // With its own band rewritten, the nest's parallel loop is the band's new outermost one.
    Pragmas pragmas = pragmasFor(n, c, 0, !changed.count(0));
    for (const auto &[top, b] : changed) {
      auto e = restructure(n, f.text, c, top, *b, pragmas);
      if (!e)
        return e.error();
      edits.insert(edits.end(), e->begin(), e->end());
    }
    for (int l : rewritten)
      pragmas.erase(l);
    for (auto &e : pragmaEdits(n, f.text, pragmas))
      edits.push_back(std::move(e));
  }
  return apply(f.text, std::move(edits));
}

// ---- the plan ------------------------------------------------------------------------

namespace {

std::vector<std::vector<int>> permutations(size_t n) {
  std::vector<int> p(n);
  std::iota(p.begin(), p.end(), 0);
  std::vector<std::vector<int>> out;
  do
    out.push_back(p);
  while (std::next_permutation(p.begin(), p.end()));
  return out;
}

std::string orderText(const Nest &n, const std::vector<int> &band, const std::vector<int> &order) {
  std::vector<std::string> vars;
  for (int o : order)
    vars.push_back(n.loops[static_cast<size_t>(band[static_cast<size_t>(o)])].var);
  return fmt::format("{}", fmt::join(vars, ","));
}

/// How much a nest is worth transforming: its share of the instructions where a profile says, else
/// its depth and the memory it touches.
double weight(const Nest &n, const std::map<std::string, double> &shares) {
  double share = 0;
  for (const auto &[where, s] : shares) {
    auto colon = where.rfind(':');
    if (colon == std::string::npos || where.substr(0, colon) != n.file)
      continue;
    int line = std::atoi(where.c_str() + colon + 1);
    if (line >= n.line && line <= n.endLine)
      share += s;
  }
  if (!shares.empty())
    return share;
  size_t depth = 0;
  for (const auto &l : n.loops)
    depth = std::max<size_t>(depth, static_cast<size_t>(l.depth) + 1);
  return static_cast<double>(depth) * 1000 + static_cast<double>(n.accesses.size());
}

bool worthTransforming(const Nest &n) {
  if (n.loops.empty() || n.loops.front().inMacro)
    return false;
  return std::any_of(n.accesses.begin(), n.accesses.end(), [](const Access &a) { return a.write; });
}

} // namespace

Plan::Plan(Program program, const PlanOptions &options) : program_(std::move(program)) {
  struct Ranked {
    double weight;
    size_t file, nest;
  };
  std::vector<Ranked> ranked;
  for (size_t f = 0; f < program_.files.size(); ++f)
    for (size_t i = 0; i < program_.files[f].nests.size(); ++i)
      if (const Nest &n = program_.files[f].nests[i]; worthTransforming(n)) {
        double w = weight(n, options.lineShares);
        if (!options.lineShares.empty() && w <= 0)
          continue;
        if (n.openmp)
          leftToOpenMp_.push_back(n.label());
        else
          ranked.push_back({w, f, i});
      }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked &a, const Ranked &b) { return a.weight > b.weight; });
  if (ranked.size() > options.maxNests)
    ranked.resize(options.maxNests);
  std::sort(ranked.begin(), ranked.end(),
            [](const Ranked &a, const Ranked &b) { return a.file != b.file ? a.file < b.file : a.nest < b.nest; });
  for (const auto &r : ranked) {
    const FileModel &fm = program_.files[r.file];
    const Nest &n = fm.nests[r.nest];
    auto knob = [&](Action a, std::vector<std::string> values, std::string doc, int line = 0) {
      SourceKnob k;
      k.name = fmt::format("{}:{}.{}", n.file, line > 0 ? line : n.line, toString(a));
      k.file = n.file;
      k.nest = r.nest;
      k.line = n.line;
      k.endLine = n.endLine;
      k.action = a;
      k.values = std::move(values);
      k.doc = std::move(doc);
      knobs_.push_back(std::move(k));
      return &knobs_.back();
    };
    // parallel
    std::vector<std::pair<int, Parallelism>> targets;
    parallelTargets(n, 0, targets);
    if (n.loops.front().step > 0 || !targets.empty()) {
      std::vector<std::string> where;
      for (const auto &[l, p] : targets)
        where.push_back(fmt::format("line {}{}", n.loops[static_cast<size_t>(l)].line, p.forClauses()));
      // Where a target reduces, "exact" parallelises only the loops that need no reduction: results
      // stay bit-identical (an ill-conditioned program may tolerate no reassociation at all).
      std::vector<std::pair<int, Parallelism>> exact;
      parallelTargets(n, 0, exact, true);
      bool reduces =
          std::any_of(targets.begin(), targets.end(), [](const auto &t) { return !t.second.reductions.empty(); });
      std::vector<std::string> values{"off", "on"};
      std::string exactDoc;
      if (reduces && !exact.empty()) {
        values.push_back("exact");
        std::vector<std::string> lines;
        for (const auto &[l, p] : exact)
          lines.push_back(fmt::format("{}", n.loops[static_cast<size_t>(l)].line));
        exactDoc = fmt::format(" (exact: only line {}, no reduction)", fmt::join(lines, ", "));
      }
      auto *k = knob(Action::Parallel, values,
                     targets.empty() ? "OpenMP parallel for on the nest's outer loop (not proven legal)"
                                     : fmt::format("OpenMP parallel for on {}{}", fmt::join(where, "; "), exactDoc));
      if (targets.empty())
        k->unproven["on"] = parallelism(n, 0).why;
    }
    // order and tile of the nest's own perfect band, and of the perfect bands inside it
    std::vector<int> tops{0};
    for (int l : n.innerBands())
      tops.push_back(l);
    for (int top : tops) {
      auto band = n.bandFrom(top);
      std::string why;
      if (band.size() < 2 || band.size() > 4 || !rectangular(n, band, &why))
        continue;
      int line = n.loops[static_cast<size_t>(top)].line;
      std::string name = fmt::format("{}:{}.{}", n.file, line, toString(Action::Tile));
      if (std::any_of(knobs_.begin(), knobs_.end(), [&](const SourceKnob &k) { return k.name == name; }))
        continue; // two bands on one line: the first keeps the name
      std::string where = top == 0 ? "" : fmt::format(" (the band at line {})", line);
      std::vector<std::string> values;
      std::map<std::string, std::string> unproven;
      for (const auto &p : permutations(band.size())) {
        std::string v = orderText(n, band, p);
        values.push_back(v);
        std::string w;
        if (!permutationLegal(n, band, p, &w))
          unproven[v] = w;
      }
      if (values.size() > 1) {
        auto *k = knob(Action::Order, values, "interchange of the loops " + values.front() + where, line);
        k->band = top;
        k->unproven = unproven;
      }
      auto *t = knob(Action::Tile, {"0", "16", "32", "64", "128"},
                     fmt::format("tiling of the loops {}{} (one tile size for each)", values.front(), where), line);
      t->band = top;
      std::string w;
      if (!tilingLegal(n, band, &w))
        for (size_t i = 1; i < t->values.size(); ++i)
          t->unproven[t->values[i]] = w;
    }
    // innermost loops
    auto leafList = leaves(n, 0);
    bool canonicalLeaf = std::any_of(leafList.begin(), leafList.end(),
                                     [&](int l) { return n.loops[static_cast<size_t>(l)].step > 0; });
    if (canonicalLeaf) {
      knob(Action::Unroll, {"0", "2", "4", "8"}, "#pragma GCC unroll on the innermost loops");
      bool anySimd = false;
      std::vector<std::string> kept;
      for (int l : leafList)
        if (Parallelism p = parallelism(n, l, nullptr, true); p.legal) {
          anySimd = true;
          for (const auto &e : p.elements) {
            const Access &a = n.accesses[e.refs.front()];
            kept.push_back(fmt::format("{} (line {})", fm.text.substr(a.begin, a.end - a.begin), a.line));
          }
        }
      auto *k = knob(Action::Simd, {"off", "on"},
                     kept.empty() ? std::string("#pragma omp simd on the innermost loops")
                                  : fmt::format("#pragma omp simd on the innermost loops, {} accumulated in a local "
                                                "and reduced",
                                                fmt::join(kept, ", ")));
      if (!anySimd)
        k->unproven["on"] = parallelism(n, leafList.front(), nullptr, true).why;
    }
  }
}

support::Expected<std::map<std::string, std::string>>
Plan::render(const std::map<std::string, std::string> &values) const {
  std::map<std::string, std::map<size_t, NestChoice>> byFile;
  for (const auto &k : knobs_) {
    auto it = values.find(k.name);
    if (it == values.end() || it->second == k.values.front())
      continue;
    if (std::find(k.values.begin(), k.values.end(), it->second) == k.values.end())
      return support::Error{fmt::format("{} = '{}' is not one of its values", k.name, it->second)};
    NestChoice &c = byFile[k.file][k.nest];
    const std::string &v = it->second;
    switch (k.action) {
    case Action::Parallel:
      c.parallel = v == "on" || v == "exact";
      c.exact = v == "exact";
      break;
    case Action::Simd: c.simd = v == "on"; break;
    case Action::Tile: c.bands[k.band].tile = std::atoll(v.c_str()); break;
    case Action::Unroll: c.unroll = std::atoi(v.c_str()); break;
    case Action::Order: {
      const FileModel *fm = program_.file(k.file);
      auto band = fm->nests[k.nest].bandFrom(k.band);
      for (const auto &p : permutations(band.size()))
        if (orderText(fm->nests[k.nest], band, p) == v)
          c.bands[k.band].order = p;
      break;
    }
    }
  }
  std::map<std::string, std::string> out;
  for (const auto &[file, choices] : byFile) {
    const FileModel *fm = program_.file(file);
    if (!fm)
      return support::Error{fmt::format("no source model of {}", file)};
    auto text = rewrite(*fm, choices);
    if (!text)
      return text.error();
    out[file] = *text;
  }
  return out;
}

bool Plan::parallel(const std::map<std::string, std::string> &values) const {
  for (const auto &k : knobs_)
    if (k.action == Action::Parallel) {
      auto it = values.find(k.name);
      if (it != values.end() && (it->second == "on" || it->second == "exact"))
        return true;
    }
  return false;
}

std::vector<std::string> Plan::flags(const std::map<std::string, std::string> &values) const {
  bool simd = false;
  for (const auto &k : knobs_) {
    auto it = values.find(k.name);
    if (k.action == Action::Simd && it != values.end() && it->second == "on")
      simd = true;
  }
  if (parallel(values))
    return {"-fopenmp"};
  if (simd)
    return {"-fopenmp-simd"};
  return {};
}

std::string Plan::nestAt(const std::string &file, int line) const {
  for (const auto &k : knobs_)
    if (k.file == file && line >= k.line && line <= k.endLine)
      return fmt::format("{}:{}", k.file, k.line);
  return "";
}

std::string Plan::describe(const std::map<std::string, double> &lineShares) const {
  std::string out;
  for (const auto &nest : leftToOpenMp_)
    out += fmt::format("nest {}: the program's own OpenMP directives cover it; hone adds no pragma and no rewrite "
                       "there\n",
                       nest);
  std::string last;
  for (const auto &k : knobs_) {
    std::string nest = fmt::format("{}:{}", k.file, k.line);
    if (nest != last) {
      const Nest &n = program_.file(k.file)->nests[k.nest];
      double share = weight(n, lineShares);
      std::vector<std::string> loops;
      for (const auto &l : n.loops)
        loops.push_back(l.var.empty() ? "?" : l.var);
      out += fmt::format("nest {}-{} in {}(): loops {}{}{}\n", nest, n.endLine, n.function, fmt::join(loops, ","),
                         n.band().size() == n.loops.size() ? " (perfect)" : "",
                         lineShares.empty() ? "" : fmt::format(", {:.0f}% of the instructions", 100 * share));
      last = nest;
    }
    std::vector<std::string> legal, notLegal;
    for (size_t i = 1; i < k.values.size(); ++i) {
      auto u = k.unproven.find(k.values[i]);
      if (u == k.unproven.end())
        legal.push_back(k.values[i]);
      else
        notLegal.push_back(fmt::format("{} ({})", k.values[i], u->second));
    }
    out += fmt::format("  {} [{}]: {}; legal: {}{}\n", toString(k.action), k.name, k.doc,
                       legal.empty() ? "none" : fmt::format("{}", fmt::join(legal, " ")),
                       notLegal.empty() ? "" : fmt::format("; not proven: {}", fmt::join(notLegal, "; ")));
  }
  return out;
}

} // namespace hone::kernel::source
