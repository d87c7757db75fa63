#include "support/Feedback.h"

#include <fmt/format.h>

namespace hone::support {

using nlohmann::json;

json toJson(const Feedback &f) {
  if (!f.given)
    return json();
  json j{{"execution", f.execution}, {"findings", json::array()}};
  if (!f.breakdown.is_null())
    j["breakdown"] = f.breakdown;
  if (!f.cold.is_null())
    j["cold"] = f.cold;
  for (const Finding &x : f.findings)
    j["findings"].push_back(toJson(x));
  return j;
}

json toJson(const Finding &x) {
  json item{{"rule", x.rule}, {"severity", x.severity}, {"evidence", x.evidence}};
  if (!x.explanation.empty())
    item["explanation"] = x.explanation;
  if (!x.suggestion.empty())
    item["suggestion"] = x.suggestion;
  if (!x.transformations.empty())
    item["transformations"] = x.transformations;
  if (x.subject)
    item["subject"] = toJson(*x.subject);
  return item;
}

namespace {

Expected<Finding> readFinding(const json &j, const std::string &at) {
  if (!j.is_object())
    return Error{fmt::format("{}: a finding is an object, not {}", at, j.type_name())};
  Finding f;
  if (auto e = readTextFields(j, at,
                              {{"rule", &f.rule, true},
                               {"severity", &f.severity},
                               {"evidence", &f.evidence},
                               {"explanation", &f.explanation},
                               {"suggestion", &f.suggestion}}))
    return *e;
  if (auto it = j.find("transformations"); it != j.end()) {
    if (!it->is_array())
      return Error{fmt::format("{}.transformations: a list, not {}", at, it->type_name())};
    for (const auto &t : *it) {
      if (!t.is_string())
        return Error{fmt::format("{}.transformations: a list of strings", at)};
      f.transformations.push_back(t.get<std::string>());
    }
  }
  if (auto it = j.find("subject"); it != j.end() && !it->is_null()) {
    // Stored before the kind was kept in it: read without (the finding says what it is).
    auto b = readBottleneck(*it, at + ".subject", /*kindRequired=*/false);
    if (!b)
      return b.error();
    if (b->detail.empty())
      b->detail = f.evidence;
    f.subject = std::move(*b);
  }
  return f;
}

} // namespace

Expected<Feedback> readFeedback(const json &j, std::vector<std::string> *leftOut) {
  Feedback out;
  if (j.is_null())
    return out;
  if (!j.is_object())
    return Error{fmt::format("feedback: an object, not {}", j.type_name())};
  out.given = true;
  if (auto e = readTextFields(j, "feedback", {{"execution", &out.execution}}))
    return *e;
  if (auto it = j.find("findings"); it != j.end()) {
    if (!it->is_array())
      return Error{fmt::format("findings: a list, not {}", it->type_name())};
    for (size_t i = 0; i < it->size(); ++i) {
      auto f = readFinding((*it)[i], fmt::format("findings[{}]", i));
      if (f)
        out.findings.push_back(std::move(*f));
      else if (leftOut)
        leftOut->push_back(f.error().message);
    }
  }
  if (auto it = j.find("breakdown"); it != j.end())
    out.breakdown = *it;
  if (auto it = j.find("cold"); it != j.end())
    out.cold = *it;
  return out;
}

} // namespace hone::support
