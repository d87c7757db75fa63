#include "kernel/source/Dependence.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>

namespace hone::kernel::source {

namespace {

constexpr uint8_t kLt = 1, kEq = 2, kGt = 4, kAny = 7;

/// The loops enclosing loop `l` (itself included), outermost first.
std::vector<int> enclosing(const Nest &n, int l) {
  std::vector<int> out;
  for (int guard = 0; l >= 0 && guard < 1000; ++guard) {
    out.push_back(l);
    l = n.loops[static_cast<size_t>(l)].parent;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

bool inside(const Nest &n, int l, int outer) {
  for (int guard = 0; l >= 0 && guard < 1000; ++guard) {
    if (l == outer)
      return true;
    l = n.loops[static_cast<size_t>(l)].parent;
  }
  return false;
}

std::set<std::string> writtenScalars(const Nest &n) {
  std::set<std::string> out;
  for (const auto &a : n.accesses)
    if (a.write && a.subscripts.empty() && !a.indirect)
      out.insert(a.base);
  return out;
}

/// The loop of `access`'s enclosing loops whose variable is `var` (the innermost such), or -1.
int loopOf(const Nest &n, const Access &a, const std::string &var) {
  for (int l = a.loop, guard = 0; l >= 0 && guard < 1000; ++guard) {
    if (n.loops[static_cast<size_t>(l)].var == var)
      return l;
    l = n.loops[static_cast<size_t>(l)].parent;
  }
  return -1;
}

struct PairDeps {
  bool independent = false;
  std::map<int, uint8_t> dir; // per common loop: the directions a dependence can have (source a, sink b)
  uint8_t at(int l) const {
    auto it = dir.find(l);
    return it == dir.end() ? kAny : it->second;
  }
};

/// Tests every subscript pair of two accesses to one array (ZIV, strong SIV, GCD).
PairDeps testPair(const Nest &n, const Access &a, const Access &b, const std::set<std::string> &written) {
  PairDeps out;
  if (a.subscripts.size() != b.subscripts.size() || a.layout != b.layout)
    return out; // shaped differently: nothing is known
  for (const auto &dim : a.layout)
    if (written.count(dim.substr(dim.find(':') + 1)))
      return out; // a row length the nest changes
  auto common = enclosing(n, a.loop);
  auto cb = enclosing(n, b.loop);
  common.erase(std::remove_if(common.begin(), common.end(),
                              [&](int l) { return std::find(cb.begin(), cb.end(), l) == cb.end(); }),
               common.end());
  for (size_t d = 0; d < a.subscripts.size(); ++d) {
    const auto &fa = a.subscripts[d], &fb = b.subscripts[d];
    if (!fa || !fb)
      continue;
    std::map<int, int64_t> xa, xb;
    std::map<std::string, int64_t> sa, sb;
    bool known = true;
    auto split = [&](const Affine &f, const Access &acc, std::map<int, int64_t> &x, std::map<std::string, int64_t> &s) {
      for (const auto &[var, c] : f.terms) {
        int l = loopOf(n, acc, var);
        if (l >= 0)
          x[l] += c;
        else if (written.count(var))
          known = false; // a variable the nest changes: not an invariant
        else
          s[var] += c;
      }
    };
    split(*fa, a, xa, sa);
    split(*fb, b, xb, sb);
    if (!known || sa != sb)
      continue;
    int64_t delta = fb->constant - fa->constant; // sum(xa) - sum(xb) = delta
    if (xa.empty() && xb.empty()) {
      if (delta != 0) {
        out.independent = true;
        return out;
      }
      continue;
    }
    if (xa.size() == 1 && xb.size() == 1 && xa.begin()->first == xb.begin()->first &&
        xa.begin()->second == xb.begin()->second &&
        std::find(common.begin(), common.end(), xa.begin()->first) != common.end()) {
      int l = xa.begin()->first;
      int64_t c = xa.begin()->second;
      if (delta % c != 0) {
        out.independent = true;
        return out;
      }
      int64_t distance = -delta / c; // y - x: the sink's iteration minus the source's
      uint8_t d0 = distance > 0 ? kLt : distance == 0 ? kEq : kGt;
      uint8_t &slot = out.dir.emplace(l, kAny).first->second;
      slot &= d0;
      if (!slot) {
        out.independent = true;
        return out;
      }
      continue;
    }
    int64_t g = 0;
    for (const auto &[l, c] : xa)
      g = std::gcd(g, c < 0 ? -c : c);
    for (const auto &[l, c] : xb)
      g = std::gcd(g, c < 0 ? -c : c);
    if (g != 0 && delta % g != 0) {
      out.independent = true;
      return out;
    }
  }
  return out;
}

/// A linear inequality over named integer variables: sum(terms) + constant >= 0.
struct Ineq {
  std::map<std::string, int64_t> terms;
  int64_t constant = 0;
};

/// Whether the system has no rational solution, by Fourier-Motzkin elimination, each derived
/// inequality divided by the gcd of its coefficients with the constant rounded down (sound for
/// integer points: an infeasible result is a proof). false also when the system grows past a bound
/// or a coefficient past 2^40 (unknown: a dependence is assumed).
bool infeasible(std::vector<Ineq> sys) {
  constexpr size_t kMaxRows = 512;
  constexpr int64_t kMaxCoefficient = int64_t{1} << 40;
  auto normalise = [](Ineq &q) {
    for (auto it = q.terms.begin(); it != q.terms.end();)
      it = it->second == 0 ? q.terms.erase(it) : std::next(it);
    int64_t g = 0;
    for (const auto &[v, c] : q.terms)
      g = std::gcd(g, c < 0 ? -c : c);
    if (g > 1) {
      for (auto &[v, c] : q.terms)
        c /= g;
      q.constant = q.constant >= 0 ? q.constant / g : -((-q.constant + g - 1) / g); // floor
    }
  };
  for (auto &q : sys)
    normalise(q);
  for (int round = 0; round < 64; ++round) {
    for (const auto &q : sys)
      if (q.terms.empty() && q.constant < 0)
        return true;
    // The variable whose elimination makes the fewest new rows.
    std::map<std::string, std::pair<size_t, size_t>> counts;
    for (const auto &q : sys)
      for (const auto &[v, c] : q.terms)
        (c > 0 ? counts[v].first : counts[v].second)++;
    if (counts.empty())
      return false;
    auto pick = std::min_element(counts.begin(), counts.end(), [](const auto &x, const auto &y) {
      return x.second.first * x.second.second < y.second.first * y.second.second;
    });
    std::string v = pick->first;
    std::vector<Ineq> next, pos, neg;
    for (auto &q : sys) {
      int64_t c = q.terms.count(v) ? q.terms.at(v) : 0;
      (c > 0 ? pos : c < 0 ? neg : next).push_back(std::move(q));
    }
    for (const auto &p : pos)
      for (const auto &q : neg) {
        __int128 cp = p.terms.at(v), cq = -q.terms.at(v);
        Ineq r;
        std::set<std::string> vars;
        for (const auto &[x, c] : p.terms)
          vars.insert(x);
        for (const auto &[x, c] : q.terms)
          vars.insert(x);
        for (const auto &x : vars) {
          if (x == v)
            continue;
          __int128 value = cq * (p.terms.count(x) ? p.terms.at(x) : 0) + cp * (q.terms.count(x) ? q.terms.at(x) : 0);
          if (value > kMaxCoefficient || value < -kMaxCoefficient)
            return false;
          r.terms[x] = static_cast<int64_t>(value);
        }
        __int128 k = cq * p.constant + cp * q.constant;
        if (k > kMaxCoefficient || k < -kMaxCoefficient)
          return false;
        r.constant = static_cast<int64_t>(k);
        normalise(r);
        next.push_back(std::move(r));
        if (next.size() > kMaxRows)
          return false;
      }
    sys = std::move(next);
  }
  return false;
}

/// The system of boundsSeparate without its direction: both iterations' bounds, the subscript
/// equations, the loops in `outer` equal; nullopt when the accesses cannot be compared.
std::optional<std::vector<Ineq>> sameElement(const Nest &n, const Access &a, const Access &b,
                                             const std::vector<int> &outer, const std::set<std::string> &written) {
  if (a.subscripts.size() != b.subscripts.size() || a.layout != b.layout)
    return std::nullopt;
  for (const auto &dim : a.layout)
    if (written.count(dim.substr(dim.find(':') + 1)))
      return std::nullopt;
  std::vector<Ineq> sys;
  // A name as a variable of the system: one side's loop variable, or an invariant shared by both.
  auto rename = [&](const Access &acc, const std::string &side, const std::string &name, std::string *out) {
    if (loopOf(n, acc, name) >= 0) {
      *out = side + name;
      return true;
    }
    if (written.count(name))
      return false; // changed by the nest: not an invariant
    *out = name;
    return true;
  };
  auto add = [&](const Access &acc, const std::string &side, const Affine &f, int64_t sign, Ineq &q) {
    for (const auto &[name, c] : f.terms) {
      std::string v;
      if (!rename(acc, side, name, &v))
        return false;
      q.terms[v] += sign * c;
    }
    q.constant += sign * f.constant;
    return true;
  };
  for (const auto &[acc, side] : {std::pair<const Access *, std::string>{&a, "a:"}, {&b, "b:"}})
    for (int l : enclosing(n, acc->loop)) {
      const Loop &L = n.loops[static_cast<size_t>(l)];
      if (L.var.empty() || !L.canonical || L.step <= 0)
        continue; // unbounded here: fewer constraints, never a wrong proof
      if (L.lowerAffine) { // var - lower >= 0
        Ineq q;
        q.terms[side + L.var] = 1;
        if (add(*acc, side, *L.lowerAffine, -1, q))
          sys.push_back(std::move(q));
      }
      if (L.upperAffine) { // upper - 1 - var >= 0
        Ineq q;
        q.terms[side + L.var] = -1;
        q.constant = -1;
        if (add(*acc, side, *L.upperAffine, 1, q))
          sys.push_back(std::move(q));
      }
    }
  for (size_t d = 0; d < a.subscripts.size(); ++d) {
    if (!a.subscripts[d] || !b.subscripts[d])
      continue;
    Ineq q;
    if (!add(a, "a:", *a.subscripts[d], 1, q) || !add(b, "b:", *b.subscripts[d], -1, q))
      continue;
    Ineq r;
    for (const auto &[v, c] : q.terms)
      r.terms[v] = -c;
    r.constant = -q.constant;
    sys.push_back(std::move(q));
    sys.push_back(std::move(r));
  }
  for (int l : outer) {
    const std::string &var = n.loops[static_cast<size_t>(l)].var;
    if (var.empty())
      return std::nullopt;
    sys.push_back({{{"a:" + var, 1}, {"b:" + var, -1}}, 0});
    sys.push_back({{{"a:" + var, -1}, {"b:" + var, 1}}, 0});
  }
  return sys;
}

/// Whether the loop bounds prove that no iteration of loop `carrier` touches an element another
/// iteration of it touches through accesses `a` and `b` (the loops in `outer` held equal): the
/// subscript equations, both iterations' bounds and "one iteration before the other" have no
/// solution. What the strong SIV and GCD tests cannot see: triangular nests (`a[i][j]` and `a[j][i]`
/// with j > i are never the same element in two iterations of i).
bool boundsSeparate(const Nest &n, const Access &a, const Access &b, int carrier, const std::vector<int> &outer,
                    const std::set<std::string> &written) {
  auto sys = sameElement(n, a, b, outer, written);
  const std::string &var = n.loops[static_cast<size_t>(carrier)].var;
  if (!sys || var.empty())
    return false;
  for (int64_t sign : {1, -1}) { // a's iteration after b's, then before
    std::vector<Ineq> directed = *sys;
    directed.push_back({{{"a:" + var, sign}, {"b:" + var, -sign}}, -1});
    if (!infeasible(std::move(directed)))
      return false;
  }
  return true;
}

std::string where(const Access &a) {
  std::string subs;
  for (const auto &s : a.subscripts)
    subs += "[" + (s ? s->toString() : std::string("?")) + "]";
  return fmt::format("{}{} (line {})", a.base, subs, a.line);
}

/// Every direction vector over `loops` a pair's dependence can have, source before sink; loops
/// outside `loops` that enclose them are held at '='.
std::vector<std::vector<uint8_t>> vectors(const PairDeps &p, const std::vector<int> &loops, const std::vector<int> &outer) {
  std::vector<std::vector<uint8_t>> out;
  for (int l : outer)
    if (!(p.at(l) & kEq))
      return out;
  std::vector<uint8_t> v(loops.size(), kEq);
  std::function<void(size_t)> rec = [&](size_t i) {
    if (i == loops.size()) {
      auto it = std::find_if(v.begin(), v.end(), [](uint8_t x) { return x != kEq; });
      if (it == v.end())
        return; // loop-independent, or carried by loops inside the band: kept by any order
      std::vector<uint8_t> w = v;
      if (*it == kGt) // the dependence runs from b to a
        for (auto &x : w)
          x = x == kLt ? kGt : x == kGt ? kLt : x;
      out.push_back(w);
      return;
    }
    for (uint8_t d : {kLt, kEq, kGt})
      if (p.at(loops[i]) & d) {
        v[i] = d;
        rec(i + 1);
      }
  };
  rec(0);
  return out;
}

/// The first call inside `loop` that may have an effect (I/O, a write to memory, a state), or null.
const Nest::CallSite *effectInside(const Nest &n, int loop) {
  for (const auto &c : n.effects)
    if (inside(n, c.loop, loop))
      return &c;
  return nullptr;
}

std::string effectReason(const Nest::CallSite &c) {
  return c.io ? fmt::format("it does I/O ({}, line {})", c.name, c.line)
              : fmt::format("it calls {} (line {}), which may write memory or keep state", c.name, c.line);
}

/// The reason a band cannot be reordered because of its scalars or its calls, or "".
std::string bandBlockers(const Nest &n, const std::vector<int> &band) {
  if (n.jumps)
    return "the nest leaves its loops early (return, break or goto)";
  if (n.irregular)
    return "the nest holds while/do/switch statements or directives";
  int top = band.front();
  if (const auto *c = effectInside(n, top))
    return "the band " + effectReason(*c).substr(3);
  std::map<std::string, std::vector<const Access *>> scalars;
  for (const auto &a : n.accesses) {
    if (!inside(n, a.loop, top))
      continue;
    if (a.indirect && a.write)
      return fmt::format("the nest writes through a pointer hone cannot follow (line {})", a.line);
    if (a.subscripts.empty() && !a.indirect)
      scalars[a.base].push_back(&a);
  }
  for (const auto &[name, list] : scalars) {
    bool writes = std::any_of(list.begin(), list.end(), [](const Access *a) { return a->write; });
    if (!writes)
      continue;
    bool loopVar = std::any_of(n.loops.begin(), n.loops.end(), [&, &nm = name](const Loop &l) { return l.var == nm; });
    auto local = n.locals.find(name);
    if (loopVar || (local != n.locals.end() && inside(n, local->second, band.back())))
      continue;
    const Access *first = list.front();
    if (first->write && first->plainAssign && !first->inCondition)
      continue; // a temporary of each iteration
    return fmt::format("the scalar {} carries a value from one iteration to the next (line {})", name, first->line);
  }
  return "";
}

/// The array elements `loop` only accumulates into (Carr & Kennedy's scalar replacement): every
/// reference to the element in the loop is part of one kind of update (`x op= e`, `x = x op e`), none
/// conditional; its subscripts do not change in the loop; and the loop bounds prove that no other
/// reference to the array in the loop reaches it (lu's `A[i][j] -= A[i][k] * A[k][j]` over k < j).
std::vector<Parallelism::Element> accumulated(const Nest &n, int loop) {
  std::vector<Parallelism::Element> out;
  // Each candidate is paired with every reference in the loop (a bounds test each): a loop past
  // kMaxReferences keeps its elements in memory, as written.
  constexpr size_t kMaxReferences = 512;
  if (std::count_if(n.accesses.begin(), n.accesses.end(), [&](const Access &a) { return inside(n, a.loop, loop); }) >
      static_cast<std::ptrdiff_t>(kMaxReferences))
    return out;
  std::set<std::string> changing; // the variables of `loop` and the loops inside it, scalars written in it
  for (size_t l = 0; l < n.loops.size(); ++l)
    if (inside(n, static_cast<int>(l), loop))
      changing.insert(n.loops[l].var);
  for (const auto &a : n.accesses)
    if (inside(n, a.loop, loop) && a.write && a.subscripts.empty())
      changing.insert(a.base);
  auto outer = enclosing(n, loop);
  outer.pop_back();
  const auto written = writtenScalars(n);
  std::set<size_t> taken;
  auto ref = [](const Access &a) { return !a.indirect && !a.inCondition && a.begin < a.end; };
  for (size_t w = 0; w < n.accesses.size(); ++w) {
    const Access &W = n.accesses[w];
    char op = W.updateOp == '-' ? '+' : W.updateOp;
    if (taken.count(w) || !W.write || W.subscripts.empty() || !ref(W) || (op != '+' && op != '*') ||
        !inside(n, W.loop, loop))
      continue;
    bool invariant = std::all_of(W.subscripts.begin(), W.subscripts.end(), [&](const std::optional<Affine> &f) {
      return f && std::none_of(f->terms.begin(), f->terms.end(),
                               [&](const auto &t) { return changing.count(t.first) > 0; });
    });
    if (!invariant)
      continue;
    Parallelism::Element e{op, {}, ""};
    bool ok = true;
    for (size_t o = 0; o < n.accesses.size() && ok; ++o) {
      const Access &A = n.accesses[o];
      if (A.base != W.base || !inside(n, A.loop, loop))
        continue;
      if (A.subscripts == W.subscripts && A.layout == W.layout) {
        ok = ref(A) && (A.updateOp == '-' ? '+' : A.updateOp) == op;
        e.refs.push_back(o);
      } else {
        auto sys = A.indirect ? std::nullopt : sameElement(n, W, A, outer, written);
        ok = sys && infeasible(std::move(*sys));
      }
    }
    if (!ok)
      continue;
    taken.insert(e.refs.begin(), e.refs.end());
    e.local = fmt::format("hone_acc{}", out.size());
    out.push_back(std::move(e));
  }
  return out;
}

template <typename F> bool eachPair(const Nest &n, int top, F &&f) {
  auto written = writtenScalars(n);
  std::vector<const Access *> arrays;
  for (const auto &a : n.accesses)
    if (inside(n, a.loop, top) && !a.subscripts.empty() && !a.indirect)
      arrays.push_back(&a);
  for (size_t i = 0; i < arrays.size(); ++i)
    for (size_t j = i; j < arrays.size(); ++j) {
      const Access &a = *arrays[i], &b = *arrays[j];
      if (a.base != b.base || !(a.write || b.write))
        continue;
      PairDeps p = testPair(n, a, b, written);
      if (p.independent)
        continue;
      if (!f(a, b, p))
        return false;
    }
  return true;
}

} // namespace

std::string Parallelism::clauses() const {
  std::string out;
  if (!privates.empty())
    out += fmt::format(" private({})", fmt::join(privates, ", "));
  if (!lastprivates.empty())
    out += fmt::format(" lastprivate({})", fmt::join(lastprivates, ", "));
  std::map<char, std::vector<std::string>> byOp;
  for (const auto &[op, v] : reductions)
    byOp[op].push_back(v);
  for (const auto &e : elements)
    byOp[e.op].push_back(e.local);
  for (const auto &[op, vs] : byOp)
    out += fmt::format(" reduction({}:{})", op, fmt::join(vs, ", "));
  return out;
}

std::string Parallelism::forClauses() const {
  return schedule.empty() ? clauses() : clauses() + " schedule(" + schedule + ")";
}

Parallelism parallelism(const Nest &n, int loop, const std::vector<int> *outerEqual, bool elements) {
  Parallelism out;
  const Loop &L = n.loops[static_cast<size_t>(loop)];
  if (L.var.empty() || L.step <= 0 || L.inMacro) {
    out.why = "its header is not of the form `for (i = a; i < b; i += c)`";
    return out;
  }
  if (n.jumps) {
    out.why = "the nest leaves its loops early (return, break or goto)";
    return out;
  }
  if (const auto *c = effectInside(n, loop)) {
    out.why = effectReason(*c);
    return out;
  }
  std::map<std::string, std::vector<const Access *>> scalars;
  bool anyWrite = false, anyIndirect = false;
  for (const auto &a : n.accesses) {
    if (!inside(n, a.loop, loop))
      continue;
    anyWrite |= a.write;
    if (a.indirect) {
      anyIndirect = true;
      if (a.write) {
        out.why = fmt::format("it writes through a pointer or member hone cannot follow (line {})", a.line);
        return out;
      }
    }
    if (a.base == L.var && a.write) {
      out.why = fmt::format("its variable {} is changed in the body (line {})", L.var, a.line);
      return out;
    }
    if (a.subscripts.empty() && !a.indirect)
      scalars[a.base].push_back(&a);
  }
  if (anyIndirect && anyWrite) {
    out.why = "it reads through a pointer hone cannot follow while writing memory";
    return out;
  }
  // C does not make a sequential loop's variable private inside a parallel loop (Fortran does):
  // an inner loop over a variable declared outside the nest needs the clause.
  for (size_t li = 0; li < n.loops.size(); ++li) {
    const Loop &inner = n.loops[li];
    if (static_cast<int>(li) != loop && inside(n, static_cast<int>(li), loop) && !inner.declaresVar &&
        std::find(out.privates.begin(), out.privates.end(), inner.var) == out.privates.end())
      out.privates.push_back(inner.var);
  }
  for (const auto &[name, list] : scalars) {
    if (name == L.var || !std::any_of(list.begin(), list.end(), [](const Access *a) { return a->write; }))
      continue;
    auto inner = std::find_if(n.loops.begin(), n.loops.end(), [&, &nm = name](const Loop &l) { return l.var == nm; });
    if (inner != n.loops.end()) {
      int li = static_cast<int>(inner - n.loops.begin());
      if (li != loop && inside(n, li, loop))
        continue; // private above

    }
    auto local = n.locals.find(name);
    if (local != n.locals.end() && inside(n, local->second, loop))
      continue; // declared in the body: each iteration's own
    if (name.find('.') != std::string::npos) { // a field: no OpenMP clause can name it
      out.why = fmt::format("the field {} is written in the loop (line {}), and no OpenMP clause can privatise a field",
                            name, list.front()->line);
      return out;
    }
    char op = 0;
    bool reduction = std::all_of(list.begin(), list.end(), [&](const Access *a) {
      char o = a->updateOp == '-' ? '+' : a->updateOp;
      if (!o || (op && o != op) || (o != '+' && o != '*'))
        return false;
      op = o;
      return true;
    });
    if (reduction) {
      out.reductions.push_back({op, name});
      continue;
    }
    const Access *first = list.front();
    if (first->write && first->plainAssign && !first->inCondition) {
      out.lastprivates.push_back(name);
      continue;
    }
    out.why = fmt::format("the scalar {} carries a value from one iteration to the next (line {})", name, first->line);
    return out;
  }
  auto outer = enclosing(n, loop);
  outer.pop_back();
  if (outerEqual)
    outer = *outerEqual;
  std::string why;
  auto written = writtenScalars(n);
  std::set<size_t> kept; // the references of the elements kept in locals: no longer memory of the loop
  if (elements) {
    out.elements = accumulated(n, loop);
    for (const auto &e : out.elements)
      for (size_t r : e.refs)
        kept.insert(r);
  }
  auto indexOf = [&](const Access &a) { return static_cast<size_t>(&a - n.accesses.data()); };
  bool ok = eachPair(n, loop, [&](const Access &a, const Access &b, const PairDeps &p) {
    if (kept.count(indexOf(a)) || kept.count(indexOf(b)))
      return true; // no other reference reaches the element: proven with it
    for (int l : outer)
      if (!(p.at(l) & kEq))
        return true;
    if ((p.at(loop) & (kLt | kGt)) && !boundsSeparate(n, a, b, loop, outer, written)) {
      why = a.order == b.order ? fmt::format("{} is written by several iterations", where(a))
                               : fmt::format("{} and {} touch the same element in different iterations", where(a),
                                             where(b));
      return false;
    }
    return true;
  });
  if (!ok) {
    out.why = why;
    out.privates.clear();
    out.lastprivates.clear();
    out.reductions.clear();
    out.elements.clear();
    return out;
  }
  // Inner loops whose bounds use this loop's variable (a triangle) give its iterations unequal work:
  // a static block would give one thread most of it; dealt out one at a time, each gets a fair share.
  for (size_t l = 0; l < n.loops.size(); ++l)
    if (static_cast<int>(l) != loop && inside(n, static_cast<int>(l), loop) && n.loops[l].boundNames.count(L.var)) {
      out.schedule = "static, 1";
      break;
    }
  out.legal = true;
  return out;
}

bool rectangular(const Nest &n, const std::vector<int> &band, std::string *why) {
  std::set<std::string> vars;
  for (int l : band)
    vars.insert(n.loops[static_cast<size_t>(l)].var);
  auto written = writtenScalars(n);
  for (int l : band) {
    const Loop &L = n.loops[static_cast<size_t>(l)];
    if (!L.canonical || L.step != 1 || L.inMacro) {
      *why = fmt::format("the loop at line {} is not of the form `for (i = a; i < b; i++)`", L.line);
      return false;
    }
    for (const auto &name : L.boundNames)
      if (vars.count(name) || written.count(name)) {
        *why = fmt::format("the bounds of the loop at line {} use {}, which the nest changes", L.line, name);
        return false;
      }
  }
  return true;
}

/// `p` without the directions on the band's loops that the loop bounds rule out, the loops in `outer`
/// held equal (lu's `A[i][j]` written and `A[i][k]` read in `for j = i..n: for k < i`: never one element).
PairDeps withinBounds(const Nest &n, const Access &a, const Access &b, PairDeps p, const std::vector<int> &band,
                      const std::vector<int> &outer) {
  const auto written = writtenScalars(n);
  for (int l : band)
    if ((p.at(l) & (kLt | kGt)) && boundsSeparate(n, a, b, l, outer, written))
      p.dir[l] = p.at(l) & kEq;
  return p;
}

bool permutationLegal(const Nest &n, const std::vector<int> &band, const std::vector<int> &order, std::string *why) {
  if (std::string b = bandBlockers(n, band); !b.empty()) {
    *why = b;
    return false;
  }
  auto outer = enclosing(n, band.front());
  outer.pop_back();
  return eachPair(n, band.front(), [&](const Access &a, const Access &b, const PairDeps &p) {
    for (const auto &v : vectors(withinBounds(n, a, b, p, band, outer), band, outer)) {
      for (size_t i = 0; i < order.size(); ++i) {
        uint8_t d = v[static_cast<size_t>(order[i])];
        if (d == kLt)
          break;
        if (d == kGt) {
          *why = fmt::format("the dependence between {} and {} would run backwards", where(a), where(b));
          return false;
        }
      }
    }
    return true;
  });
}

bool tilingLegal(const Nest &n, const std::vector<int> &band, std::string *why) {
  if (std::string b = bandBlockers(n, band); !b.empty()) {
    *why = b;
    return false;
  }
  auto outer = enclosing(n, band.front());
  outer.pop_back();
  return eachPair(n, band.front(), [&](const Access &a, const Access &b, const PairDeps &p) {
    for (const auto &v : vectors(withinBounds(n, a, b, p, band, outer), band, outer))
      if (std::find(v.begin(), v.end(), kGt) != v.end()) {
        *why = fmt::format("the dependence between {} and {} is not fully permutable", where(a), where(b));
        return false;
      }
    return true;
  });
}

} // namespace hone::kernel::source
