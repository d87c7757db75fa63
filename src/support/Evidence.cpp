#include "support/Evidence.h"

#include <fmt/format.h>

#include <cmath>

namespace hone::support {

using nlohmann::json;

json toJson(const Bottleneck &b) {
  json j{{"kind", b.kind}, {"resource", b.subject}, {"share", b.share}, {"detail", b.detail}};
  if (!b.numbers.empty()) {
    json units = json::object();
    j["numbers"] = json::object();
    for (const auto &[name, q] : b.numbers) {
      // A count stays an integer, as the profilers wrote it (registers, threads, chunk).
      if (std::trunc(q.value) == q.value && std::fabs(q.value) < 9007199254740992.0)
        j["numbers"][name] = static_cast<int64_t>(q.value);
      else
        j["numbers"][name] = q.value;
      if (!q.unit.empty())
        units[name] = q.unit;
    }
    if (!units.empty())
      j["units"] = std::move(units);
  }
  if (!b.file.empty())
    j["file"] = b.file;
  if (b.line)
    j["line"] = b.line;
  if (!b.prefer.empty())
    j["prefer"] = b.prefer;
  if (!b.tool.empty())
    j["tool"] = b.tool;
  return j;
}

json toJson(const std::vector<Bottleneck> &bottlenecks) {
  json out = json::array();
  for (const auto &b : bottlenecks)
    out.push_back(toJson(b));
  return out;
}

json withEvidence(json profile, const Evidence &e) {
  if (!e.profiled())
    return profile;
  if (!profile.is_object())
    profile = json::object();
  profile["bottlenecks"] = toJson(e.bottlenecks);
  profile["evidence_version"] = Evidence::kVersion;
  if (!e.tool.empty())
    profile["evidence_tool"] = e.tool;
  return profile;
}

namespace {

std::string typeName(const json &j) { return j.type_name(); }

} // namespace

std::optional<Error> readTextFields(const json &j, const std::string &at, std::initializer_list<TextField> fields) {
  for (const TextField &f : fields) {
    auto it = j.find(f.key);
    if (it == j.end()) {
      if (f.required)
        return Error{fmt::format("{}: no \"{}\"", at, f.key)};
      continue;
    }
    if (!it->is_string())
      return Error{fmt::format("{}.{}: a string, not {}", at, f.key, typeName(*it))};
    *f.out = it->get<std::string>();
  }
  return std::nullopt;
}

Expected<Bottleneck> readBottleneck(const json &j, const std::string &at, bool kindRequired) {
  if (!j.is_object())
    return Error{fmt::format("{}: a bottleneck is an object, not {}", at, typeName(j))};
  Bottleneck b;
  auto finite = [&](const json &v, const std::string &where) -> Expected<double> {
    if (!v.is_number())
      return Error{fmt::format("{}: not a number ({})", where, typeName(v))};
    double d = v.get<double>();
    if (!std::isfinite(d))
      return Error{fmt::format("{}: not a finite number", where)};
    return d;
  };
  if (auto e = readTextFields(j, at,
                              {{"kind", &b.kind, kindRequired},
                               {"resource", &b.subject},
                               {"detail", &b.detail},
                               {"file", &b.file},
                               {"tool", &b.tool}}))
    return *e;
  if (b.kind.empty() && kindRequired)
    return Error{fmt::format("{}.kind: empty", at)};
  if (auto it = j.find("share"); it != j.end()) {
    auto share = finite(*it, at + ".share");
    if (!share)
      return share.error();
    b.share = *share;
  }
  if (auto it = j.find("line"); it != j.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 1 << 30)
      return Error{fmt::format("{}.line: a line number, not {}", at, it->dump())};
    b.line = it->get<int>();
  }
  const json *units = nullptr;
  if (auto it = j.find("units"); it != j.end()) {
    if (!it->is_object())
      return Error{fmt::format("{}.units: an object, not {}", at, typeName(*it))};
    units = &*it;
  }
  if (auto it = j.find("numbers"); it != j.end()) {
    if (!it->is_object())
      return Error{fmt::format("{}.numbers: an object, not {}", at, typeName(*it))};
    for (const auto &[name, v] : it->items()) {
      auto value = finite(v, fmt::format("{}.numbers.{}", at, name));
      if (!value)
        return value.error();
      Quantity q{*value, {}};
      if (units && units->contains(name)) {
        if (!(*units)[name].is_string())
          return Error{fmt::format("{}.units.{}: a string, not {}", at, name, typeName((*units)[name]))};
        q.unit = (*units)[name].get<std::string>();
      }
      b.numbers[name] = std::move(q);
    }
  }
  if (auto it = j.find("prefer"); it != j.end()) {
    if (!it->is_object())
      return Error{fmt::format("{}.prefer: an object, not {}", at, typeName(*it))};
    for (const auto &[knob, values] : it->items()) {
      if (!values.is_array())
        return Error{fmt::format("{}.prefer.{}: a list, not {}", at, knob, typeName(values))};
      for (const auto &v : values) {
        if (!v.is_string())
          return Error{fmt::format("{}.prefer.{}: a list of strings", at, knob)};
        b.prefer[knob].push_back(v.get<std::string>());
      }
    }
  }
  return b;
}

Expected<SplitProfile> readEvidence(json profile) {
  SplitProfile out;
  if (!profile.is_object()) {
    out.profile = std::move(profile);
    return out;
  }
  int version = 1;
  if (auto it = profile.find("evidence_version"); it != profile.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 1)
      return Error{fmt::format("evidence_version: a version number, not {}", it->dump())};
    if (it->get<int64_t>() > Evidence::kVersion)
      return Error{fmt::format("evidence_version {}: written by a newer hone (this one reads up to {})",
                               it->get<int64_t>(), Evidence::kVersion)};
    version = it->get<int>();
  }
  if (auto it = profile.find("evidence_tool"); it != profile.end()) {
    if (!it->is_string())
      return Error{fmt::format("evidence_tool: a string, not {}", typeName(*it))};
    out.evidence.tool = it->get<std::string>();
  }
  if (auto it = profile.find("bottlenecks"); it != profile.end()) {
    if (!it->is_array())
      return Error{fmt::format("bottlenecks: a list, not {}", typeName(*it))};
    for (size_t i = 0; i < it->size(); ++i) {
      auto b = readBottleneck((*it)[i], fmt::format("bottlenecks[{}]", i), true);
      if (!b)
        return b.error();
      out.evidence.bottlenecks.push_back(std::move(*b));
    }
    // Version 1 named no tool: it was profiled all the same (its list, even empty, says so).
    if (version == 1 && out.evidence.tool.empty())
      out.evidence.tool = "unknown";
  }
  profile.erase("bottlenecks");
  profile.erase("evidence_version");
  profile.erase("evidence_tool");
  out.profile = std::move(profile);
  return out;
}

} // namespace hone::support
