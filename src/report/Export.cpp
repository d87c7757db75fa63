// The export formats of a stored run: one step as `hone export --jsonl` writes it, and one line of
// the optimization corpus (docs/corpus.schema.json).
#include "report/Export.h"

#include "support/Diff.h"
#include "support/JsonText.h"

namespace hone::report {

using nlohmann::json;

/// One step as `hone export` writes it (and `hone show --step --json` prints it).
json stepJson(const store::RunInfo &run, const std::vector<store::StepRecord> &steps, size_t i) {
  const store::StepRecord &s = steps[i];
  const store::StepRecord *parent = nullptr;
  if (!s.parent.empty())
    for (const auto &p : steps)
      if (p.hash == s.parent) {
        parent = &p;
        break;
      }
  json j{
      {"run", run.id},
      {"app", run.app},
      {"machine", run.machine},
      {"agent", run.agent},
      {"step", s.sequence},
      {"hash", s.hash},
      {"parent", s.parent.empty() ? json() : json(s.parent)},
      // what the agent saw before proposing this step: its parent's feedback
      {"diagnostics", parent ? support::toJson(parent->feedback) : json()},
      {"change", parent ? json(support::unifiedDiff(parent->artifact, s.artifact)) : json()},
      {"rationale", s.rationale},
      {run.artifactName(), s.artifact},
      {"result",
       {{"status", s.status}, {"score", s.score}, {"metrics", s.metrics}, {"error", s.error}, {"seconds", s.seconds}}},
      {"feedback", support::toJson(s.feedback)},
      {"agent_notes", s.notes}};  // the LLM's prompts and replies, tokens, cost; null otherwise
  if (!s.evidenceProblem.empty()) // the stored evidence this hone cannot read (a newer hone's, a damaged row)
    j["evidence_problem"] = s.evidenceProblem;
  return j;
}

/// One evaluated candidate as a line of the optimization corpus (docs/corpus.schema.json): what the
/// agent saw (its parent's profile summary and diagnostics), what it claimed and changed, and what
/// came of it.
json corpusJson(const store::RunInfo &run, const std::vector<store::StepRecord> &steps, size_t i) {
  const store::StepRecord &s = steps[i];
  const store::StepRecord *parent = nullptr;
  for (const auto &p : steps)
    if (!s.parent.empty() && p.hash == s.parent) {
      parent = &p;
      break;
    }
  json summary = json::array(), diagnostics = json::array();
  if (parent)
    for (size_t k = 0; k < parent->evidence.bottlenecks.size() && k < 5; ++k) {
      const support::Bottleneck &b = parent->evidence.bottlenecks[k];
      summary.push_back({{"kind", b.kind}, {"resource", b.subject}, {"share", b.share}});
    }
  if (parent)
    for (const support::Finding &f : parent->feedback.findings) {
      json d = support::toJson(f); // with the subject's place, not the whole subject
      d.erase("subject");
      if (f.subject && !f.subject->file.empty())
        d["file"] = f.subject->file;
      if (f.subject && f.subject->line)
        d["line"] = f.subject->line;
      diagnostics.push_back(std::move(d));
    }
  const json &notes = s.notes.is_object() ? s.notes : json::object();
  json transformations = json::array(), addresses = json::array(), aligned = nullptr;
  if (notes.contains("claims") && notes["claims"].is_object()) {
    const json &c = notes["claims"];
    if (c.contains("transformation") && c["transformation"].is_string() && !c["transformation"].get<std::string>().empty())
      transformations.push_back(c["transformation"]);
    if (c.contains("addresses") && c["addresses"].is_array())
      addresses = c["addresses"];
  }
  if (notes.contains("alignment") && notes["alignment"].is_object() && notes["alignment"].contains("aligned"))
    aligned = notes["alignment"]["aligned"];
  const std::string &st = s.status;
  std::string build = st == "rejected" ? "not built" : st == "build_failed" ? "failed" : "ok";
  std::string validation = st == "ok"                                   ? "passed"
                           : st == "rejected" || st == "build_failed" ? "not run"
                                                                        : "failed";
  bool relative = support::numberOf(run.config, "baseline") > 0;
  return json{{"schema", "hone.corpus/1"},
              {"run", run.id},
              {"domain", run.domain},
              {"subject", run.app},
              {"machine", run.machine},
              {"agent", run.agent},
              {"step", s.sequence},
              {"hash", s.hash},
              {"parent", s.parent.empty() ? json() : json(s.parent)},
              {"profile_summary", summary},
              {"diagnostics", diagnostics},
              {"transformations", transformations},
              {"addresses", addresses},
              {"aligned", aligned},
              {"diff", parent ? json(support::unifiedDiff(parent->artifact, s.artifact)) : json()},
              {"rationale", s.rationale},
              {"status", st},
              {"error", s.error},
              {"build", build},
              {"validation", validation},
              {"score", s.score},
              {"speedup", relative && st == "ok" ? json(s.score) : json()},
              {"tokens", {{"prompt", s.promptTokens}, {"completion", s.completionTokens}}},
              {"cost", s.cost},
              {"seconds", s.seconds}};
}

} // namespace hone::report
