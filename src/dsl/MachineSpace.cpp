// Machine spaces and the factor-choosing algorithms behind auto_split,
// greedy_split and balance_split.
#include "dsl/MachineSpace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace hone::dsl {

// ---- MachineShape -----------------------------------------------------------

Expected<MachineShape> MachineShape::parse(std::string_view spec) {
  MachineShape shape;
  shape.nodes = 0;
  static const std::map<std::string, ProcKind, std::less<>> kKeys = {
      {"cpus", ProcKind::CPU}, {"gpus", ProcKind::GPU}, {"omps", ProcKind::OMP},
      {"ios", ProcKind::IO},   {"pys", ProcKind::PY},   {"procs", ProcKind::PROC}};
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    std::string_view item = spec.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return Error{fmt::format("machine spec item '{}' is not key=value (e.g. nodes=2,gpus=4,cpus=8)", item)};
    std::string_view key = item.substr(0, eq), val = item.substr(eq + 1);
    int64_t n = 0;
    if (val.empty() || val.size() > 9 || !std::all_of(val.begin(), val.end(), ::isdigit))
      return Error{fmt::format("machine spec value '{}' for '{}' is not a non-negative integer", val, key)};
    n = std::stoll(std::string(val));
    if (key == "nodes") {
      if (n < 1)
        return Error{"machine spec: nodes must be at least 1"};
      shape.nodes = n;
    } else if (auto it = kKeys.find(key); it != kKeys.end()) {
      shape.procsPerNode[it->second] = n;
    } else {
      return Error{fmt::format("unknown machine spec key '{}'; keys: nodes, cpus, gpus, omps, ios, pys, procs", key)};
    }
    if (comma == std::string_view::npos)
      break;
    pos = comma + 1;
  }
  if (shape.nodes == 0)
    shape.nodes = 1;
  shape.memories[ProcKind::GPU] = {MemKind::FBMEM, MemKind::ZCMEM};
  shape.memories[ProcKind::CPU] = {MemKind::SYSMEM, MemKind::ZCMEM, MemKind::RDMEM, MemKind::SOCKMEM};
  for (ProcKind k : {ProcKind::OMP, ProcKind::IO, ProcKind::PY, ProcKind::PROC})
    shape.memories[k] = {MemKind::SYSMEM, MemKind::SOCKMEM};
  return shape;
}

int64_t MachineShape::count(ProcKind kind) const {
  auto it = procsPerNode.find(kind);
  return it == procsPerNode.end() ? 0 : it->second;
}

bool MachineShape::hasMemory(ProcKind proc, MemKind mem) const {
  if (mem == MemKind::VIRTUAL)
    return true;
  auto it = memories.find(proc);
  return it != memories.end() && it->second.count(mem) > 0;
}

std::string MachineShape::describe() const {
  std::string kinds;
  for (const auto &[k, n] : procsPerNode)
    if (n > 0)
      kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n, toString(k));
  return fmt::format("{} node{} x ({})", nodes, nodes == 1 ? "" : "s", kinds);
}

// ---- factor algorithms ------------------------------------------------------

std::vector<int64_t> primeFactors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t p = 2; p * p <= n; ++p)
    while (n % p == 0) {
      out.push_back(p);
      n /= p;
    }
  if (n > 1)
    out.push_back(n);
  return out;
}

std::vector<int64_t> greedySplitFactors(int64_t extent, const std::vector<int64_t> &workload) {
  std::vector<int64_t> result(workload.size(), 1);
  if (extent <= 1 || workload.empty())
    return result;
  std::vector<double> remaining(workload.begin(), workload.end());
  auto primes = primeFactors(extent);
  for (auto it = primes.rbegin(); it != primes.rend(); ++it) {
    size_t d = static_cast<size_t>(std::max_element(remaining.begin(), remaining.end()) - remaining.begin());
    result[d] *= *it;
    remaining[d] /= static_cast<double>(*it);
  }
  return result;
}

namespace {

// All ways to spread p^power over `places` slots, in the runtime's order: the
// first slot's exponent ascending, recursively.
void placements(int64_t prime, int power, size_t places, std::vector<int64_t> &partial,
                std::vector<std::vector<int64_t>> &out) {
  if (places == 1) {
    int64_t last = 1;
    for (int i = 0; i < power; ++i)
      last *= prime;
    partial.push_back(last);
    out.push_back(partial);
    partial.pop_back();
    return;
  }
  int64_t value = 1;
  for (int i = 0; i <= power; ++i) {
    partial.push_back(value);
    placements(prime, power - i, places - 1, partial, out);
    partial.pop_back();
    value *= prime;
  }
}

} // namespace

std::vector<int64_t> autoSplitFactors(int64_t extent, const std::vector<int64_t> &workload) {
  const size_t k = workload.size();
  std::vector<int64_t> ones(k, 1);
  if (extent <= 1 || k == 0)
    return ones;
  // Distinct primes ascending with their powers.
  std::vector<std::pair<int64_t, int>> primes;
  for (int64_t p : primeFactors(extent)) {
    if (!primes.empty() && primes.back().first == p)
      ++primes.back().second;
    else
      primes.push_back({p, 1});
  }
  // Candidates: the cartesian product with the largest prime outermost, as
  // the runtime enumerates them (its tie-breaking depends on this order).
  std::vector<std::vector<int64_t>> candidates{ones};
  for (auto it = primes.rbegin(); it != primes.rend(); ++it) {
    std::vector<std::vector<int64_t>> ways;
    std::vector<int64_t> partial;
    placements(it->first, it->second, k, partial, ways);
    std::vector<std::vector<int64_t>> next;
    for (const auto &c : candidates)
      for (const auto &w : ways) {
        std::vector<int64_t> v(k);
        for (size_t i = 0; i < k; ++i)
          v[i] = c[i] * w[i];
        next.push_back(std::move(v));
      }
    candidates = std::move(next);
  }
  // The runtime builds the product depth-first (outer loop = largest prime);
  // the breadth-first build above yields the same order.
  std::vector<std::vector<int64_t>> best;
  double minimal = static_cast<double>(INT32_MAX);
  for (const auto &o : candidates) {
    double cost = 0.0;
    for (size_t i = 0; i < k; ++i)
      cost += static_cast<double>(static_cast<float>(o[i]) / static_cast<float>(workload[i]));
    if (std::fabs(cost - minimal) < 1e-6) {
      best.push_back(o);
    } else if (cost < minimal) {
      minimal = cost;
      best.clear();
      best.push_back(o);
    }
  }
  auto greedy = greedySplitFactors(extent, workload);
  if (std::find(best.begin(), best.end(), greedy) != best.end())
    return greedy;
  return best.front();
}

std::vector<int64_t> balanceSplitFactors(int64_t extent, int64_t parts) {
  std::vector<int64_t> dims(static_cast<size_t>(parts), 1);
  for (int64_t p : primeFactors(extent))
    *std::min_element(dims.begin(), dims.end()) *= p;
  std::sort(dims.begin(), dims.end(), std::greater<int64_t>());
  return dims;
}

// ---- MachineSpace -----------------------------------------------------------

MachineSpace::Ptr MachineSpace::root(ProcKind kind, int64_t nodes, int64_t procsPerNode) {
  auto s = std::shared_ptr<MachineSpace>(new MachineSpace());
  s->kind_ = kind;
  s->dims_ = {nodes, procsPerNode};
  return s;
}

int64_t MachineSpace::volume() const {
  int64_t v = 1;
  for (auto d : dims_)
    v *= d;
  return v;
}

std::string MachineSpace::describe() const {
  std::string dims;
  for (size_t i = 0; i < dims_.size(); ++i)
    dims += fmt::format("{}{}", i ? ", " : "", dims_[i]);
  return fmt::format("MSpace({}; {})", toString(kind_), dims);
}

Expected<int64_t> MachineSpace::checkDim(int64_t d, std::string_view what) const {
  if (d < 0 || d >= static_cast<int64_t>(dims_.size()))
    return Error{fmt::format("{}: dimension {} is out of range for a {}-dimensional machine space (0..{})", what, d,
                             dims_.size(), dims_.size() - 1)};
  return d;
}

Expected<MachineSpace::Ptr> MachineSpace::derive(Op op, std::vector<int64_t> dims, int64_t a, int64_t b,
                                                 std::vector<int64_t> factors) const {
  auto s = std::shared_ptr<MachineSpace>(new MachineSpace());
  s->kind_ = kind_;
  s->dims_ = std::move(dims);
  s->parent_ = shared_from_this();
  s->op_ = op;
  s->a_ = a;
  s->b_ = b;
  s->factors_ = std::move(factors);
  return Ptr(s);
}

Expected<MachineSpace::Ptr> MachineSpace::merge(int64_t d1, int64_t d2) const {
  if (auto e = checkDim(d1, "merge"); !e)
    return e.error();
  if (auto e = checkDim(d2, "merge"); !e)
    return e.error();
  if (d1 == d2)
    return Error{"merge: the two dimensions must differ"};
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < static_cast<int64_t>(dims_.size()); ++i) {
    if (i == d1)
      dims.push_back(dims_[d1] * dims_[d2]);
    else if (i != d2)
      dims.push_back(dims_[i]);
  }
  return derive(Op::Merge, std::move(dims), d1, d2, {});
}

Expected<MachineSpace::Ptr> MachineSpace::split(int64_t d, int64_t factor) const {
  if (auto e = checkDim(d, "split"); !e)
    return e.error();
  if (factor < 1 || dims_[d] % factor != 0)
    return Error{fmt::format("split: factor {} does not divide dimension {} of extent {}", factor, d, dims_[d])};
  std::vector<int64_t> dims(dims_.begin(), dims_.begin() + d);
  dims.push_back(factor);
  dims.push_back(dims_[d] / factor);
  dims.insert(dims.end(), dims_.begin() + d + 1, dims_.end());
  return derive(Op::Split, std::move(dims), d, factor, {});
}

Expected<MachineSpace::Ptr> MachineSpace::swap(int64_t d1, int64_t d2) const {
  if (auto e = checkDim(d1, "swap"); !e)
    return e.error();
  if (auto e = checkDim(d2, "swap"); !e)
    return e.error();
  if (d1 == d2)
    return Error{"swap: the two dimensions must differ"};
  auto dims = dims_;
  std::swap(dims[d1], dims[d2]);
  return derive(Op::Swap, std::move(dims), d1, d2, {});
}

Expected<MachineSpace::Ptr> MachineSpace::slice(int64_t d, int64_t low, int64_t high) const {
  if (auto e = checkDim(d, "slice"); !e)
    return e.error();
  if (low < 0 || high < low || high >= dims_[d])
    return Error{fmt::format("slice: range {}..{} is not within dimension {} of extent {}", low, high, d, dims_[d])};
  auto dims = dims_;
  dims[d] = high - low + 1;
  return derive(Op::Slice, std::move(dims), d, low, {});
}

Expected<MachineSpace::Ptr> MachineSpace::reverse(int64_t d) const {
  if (auto e = checkDim(d, "reverse"); !e)
    return e.error();
  return derive(Op::Reverse, dims_, d, 0, {});
}

namespace {
std::vector<int64_t> replaceDim(const std::vector<int64_t> &dims, int64_t d, const std::vector<int64_t> &with) {
  std::vector<int64_t> out(dims.begin(), dims.begin() + d);
  out.insert(out.end(), with.begin(), with.end());
  out.insert(out.end(), dims.begin() + d + 1, dims.end());
  return out;
}
} // namespace

Expected<MachineSpace::Ptr> MachineSpace::balanceSplit(int64_t d, int64_t parts) const {
  if (auto e = checkDim(d, "balance_split"); !e)
    return e.error();
  if (parts != 2 && parts != 3)
    return Error{fmt::format("balance_split: the number of parts must be 2 or 3, not {}", parts)};
  auto f = balanceSplitFactors(dims_[d], parts);
  return derive(Op::Factor, replaceDim(dims_, d, f), d, 0, f);
}

Expected<MachineSpace::Ptr> MachineSpace::workloadSplit(int64_t d, const std::vector<int64_t> &workload,
                                                        std::string_view what, bool greedy) const {
  if (auto e = checkDim(d, what); !e)
    return e.error();
  if (workload.empty())
    return Error{fmt::format("{}: the workload tuple is empty", what)};
  for (auto w : workload)
    if (w <= 0)
      return Error{fmt::format("{}: workload extents must be positive, got {}", what, w)};
  auto f = greedy ? greedySplitFactors(dims_[d], workload) : autoSplitFactors(dims_[d], workload);
  return derive(Op::Factor, replaceDim(dims_, d, f), d, 0, f);
}

Expected<MachineSpace::Ptr> MachineSpace::autoSplit(int64_t d, const std::vector<int64_t> &workload) const {
  return workloadSplit(d, workload, "auto_split", false);
}

Expected<MachineSpace::Ptr> MachineSpace::greedySplit(int64_t d, const std::vector<int64_t> &workload) const {
  return workloadSplit(d, workload, "greedy_split", true);
}

std::vector<int64_t> MachineSpace::toParent(const std::vector<int64_t> &p) const {
  const auto &pd = parent_->dims_;
  switch (op_) {
  case Op::Root: return p;
  case Op::Merge: {
    int64_t mergeDim = a_ < b_ ? a_ : a_ - 1;
    std::vector<int64_t> r = p;
    if (pd[b_] == 0) { // a merge with an empty dimension is empty: any point is out of bound at the root
      r.insert(r.begin() + b_, p[mergeDim]);
      return r;
    }
    r[mergeDim] = p[mergeDim] / pd[b_];
    r.insert(r.begin() + b_, p[mergeDim] % pd[b_]);
    return r;
  }
  case Op::Split: {
    std::vector<int64_t> r(p.begin(), p.begin() + a_);
    r.push_back(p[a_] + p[a_ + 1] * b_);
    r.insert(r.end(), p.begin() + a_ + 2, p.end());
    return r;
  }
  case Op::Swap: {
    auto r = p;
    std::swap(r[a_], r[b_]);
    return r;
  }
  case Op::Slice: {
    auto r = p;
    r[a_] += b_;
    return r;
  }
  case Op::Reverse: {
    auto r = p;
    r[a_] = pd[a_] - 1 - p[a_];
    return r;
  }
  case Op::Factor: {
    std::vector<int64_t> r(p.begin(), p.begin() + a_);
    int64_t value = 0, stride = 1;
    for (size_t i = 0; i < factors_.size(); ++i) {
      value += p[a_ + i] * stride;
      stride *= factors_[i];
    }
    r.push_back(value);
    r.insert(r.end(), p.begin() + a_ + static_cast<int64_t>(factors_.size()), p.end());
    return r;
  }
  }
  return p;
}

std::vector<int64_t> MachineSpace::fromParent(const std::vector<int64_t> &p) const {
  switch (op_) {
  case Op::Root: return p;
  case Op::Merge: {
    const auto &pd = parent_->dims_;
    std::vector<int64_t> r;
    for (int64_t i = 0; i < static_cast<int64_t>(p.size()); ++i) {
      if (i == a_)
        r.push_back(p[a_] * pd[b_] + p[b_]);
      else if (i != b_)
        r.push_back(p[i]);
    }
    return r;
  }
  case Op::Split: {
    std::vector<int64_t> r(p.begin(), p.begin() + a_);
    r.push_back(p[a_] % b_);
    r.push_back(p[a_] / b_);
    r.insert(r.end(), p.begin() + a_ + 1, p.end());
    return r;
  }
  case Op::Swap: {
    auto r = p;
    std::swap(r[a_], r[b_]);
    return r;
  }
  case Op::Slice: {
    auto r = p;
    r[a_] -= b_;
    return r;
  }
  case Op::Reverse: {
    auto r = p;
    r[a_] = parent_->dims_[a_] - 1 - p[a_];
    return r;
  }
  case Op::Factor: {
    std::vector<int64_t> r(p.begin(), p.begin() + a_);
    int64_t value = p[a_];
    for (auto f : factors_) {
      r.push_back(value % f);
      value /= f;
    }
    r.insert(r.end(), p.begin() + a_ + 1, p.end());
    return r;
  }
  }
  return p;
}

Expected<Point2> MachineSpace::toRoot(const std::vector<int64_t> &point) const {
  if (point.size() != dims_.size())
    return Error{fmt::format("a {}-dimensional machine space was indexed with {} coordinate{}", dims_.size(),
                             point.size(), point.size() == 1 ? "" : "s")};
  std::vector<int64_t> p = point;
  const MachineSpace *s = this;
  while (s->parent_) {
    p = s->toParent(p);
    s = s->parent_.get();
  }
  if (p[0] < 0 || p[0] >= s->dims_[0])
    return Error{fmt::format("Sharding node index out of bound: node {} is outside 0..{} ({} node{})", p[0],
                             s->dims_[0] - 1, s->dims_[0], s->dims_[0] == 1 ? "" : "s")};
  if (p[1] < 0 || p[1] >= s->dims_[1])
    return Error{fmt::format("Slice processor index out of bound: processor {} is outside 0..{} ({} {} per node)",
                             p[1], s->dims_[1] - 1, s->dims_[1], toString(s->kind_))};
  return Point2{p[0], p[1]};
}

Expected<std::vector<int64_t>> MachineSpace::fromRoot(const Point2 &rootPoint) const {
  std::vector<const MachineSpace *> chain;
  for (const MachineSpace *s = this; s; s = s->parent_.get())
    chain.push_back(s);
  std::vector<int64_t> p{rootPoint[0], rootPoint[1]};
  for (auto it = chain.rbegin(); it != chain.rend(); ++it)
    if ((*it)->parent_)
      p = (*it)->fromParent(p);
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] < 0 || p[i] >= dims_[i])
      return Error{fmt::format("processor ({}, {}) is not in {}: coordinate {} is {}", rootPoint[0], rootPoint[1],
                               describe(), i, p[i])};
  return p;
}

} // namespace hone::dsl
