#include "mapping/LlmAgent.h"

#include "llm/Prompt.h"
#include "mapping/Evaluators.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace hone::mapping {

using nlohmann::json;

LlmAgent::LlmAgent(const model::AppModel &app, const model::MachineModel &machine, std::string start,
                   std::string startLabel, llm::Client &client, LlmAgentOptions options)
    : app_(app), machine_(machine), start_(std::move(start)), startLabel_(std::move(startLabel)), client_(client),
      options_(std::move(options)) {}

std::string LlmAgent::appDescription() const {
  std::string out = app_.description.empty() ? app_.name : app_.name + ": " + app_.description;
  out += "\nTasks (variants; region arguments with privileges):\n";
  for (const auto &t : app_.tasks) {
    std::vector<std::string> kinds, args;
    for (auto k : t.variants)
      kinds.emplace_back(support::toString(k));
    for (const auto &a : t.args)
      args.push_back(fmt::format("{} ({})", a.region, model::toString(a.privilege)));
    out += fmt::format("- {} [{}]{}{}\n", t.name, fmt::join(kinds, ","), args.empty() ? "" : ": ",
                       fmt::join(args, ", "));
  }
  return out;
}

std::string LlmAgent::machineDescription() const {
  std::string out = machine_.describe() + "\nMemories:\n";
  for (const auto &m : machine_.memories) {
    std::vector<std::string> from;
    for (const auto &a : m.access)
      from.emplace_back(support::toString(a.proc));
    out += fmt::format("- {} ({:.3g} GB{}), reachable from {}\n", support::toString(m.kind), m.capacity / 1e9,
                       m.per ? fmt::format(" per {}", support::toString(*m.per)) : " per node", fmt::join(from, ","));
  }
  return out;
}

namespace {

/// The mapper and the rationale in a reply: a JSON object, a fenced block, or the text itself.
std::pair<std::string, std::string> readReply(const std::string &content) {
  if (auto j = llm::extractJson(content); j && j->contains("mapper") && (*j)["mapper"].is_string())
    return {(*j)["mapper"].get<std::string>(), j->value("rationale", "")};
  if (auto block = llm::extractCodeBlock(content, "dsl"))
    return {*block, ""};
  return {content, ""};
}

} // namespace

std::optional<engine::Candidate> LlmAgent::ask() {
  LlmExchange ex;
  bool opro = options_.optimizer == "opro";
  auto system = llm::loadTemplate("mapping", "system", options_.promptDirs);
  auto body = llm::loadTemplate("mapping", opro ? "opro" : "trace", options_.promptDirs);
  auto repair = llm::loadTemplate("mapping", "repair", options_.promptDirs);
  for (const auto *t : {&system, &body, &repair})
    if (!*t) {
      ex.error = t->error().message;
      exchanges_.push_back(std::move(ex));
      return std::nullopt;
    }
  std::string dsl = options_.dslReference;
  if (dsl.empty())
    if (auto ref = llm::loadTemplate("mapping", "dsl", options_.promptDirs))
      dsl = ref->text;
  const Seen *best = best_ ? &seen_[*best_] : (seen_.empty() ? nullptr : &seen_.front());
  std::map<std::string, std::string> values = {
      {"app", app_.name},
      {"machine", machine_.name},
      {"dsl", dsl},
      {"machine_description", machineDescription()},
      {"app_description", appDescription()},
      {"mapper", best ? best->text : start_},
      {"score", best && best->ok ? fmt::format("{:.3f}", best->score) : "failed"},
      {"feedback", best ? best->feedback.dump(2) : "(not run yet)"},
  };
  if (opro) {
    std::vector<const Seen *> ranked;
    for (const auto &s : seen_)
      ranked.push_back(&s);
    std::stable_sort(ranked.begin(), ranked.end(), [](const Seen *a, const Seen *b) { return a->score > b->score; });
    if (ranked.size() > options_.history)
      ranked.resize(options_.history);
    std::reverse(ranked.begin(), ranked.end()); // ascending, the best last
    std::string history;
    for (const Seen *s : ranked)
      history += fmt::format("score: {}\n```dsl\n{}\n```\n\n", s->ok ? fmt::format("{:.3f}", s->score) : "0 (failed)",
                             s->text);
    values["history"] = history;
  }
  auto prompt = llm::render(*body, values);
  if (!prompt) {
    ex.error = prompt.error().message;
    exchanges_.push_back(std::move(ex));
    return std::nullopt;
  }
  ex.messages = {{"system", system->text}, {"user", *prompt}};
  llm::ChatRequest request;
  request.format = llm::Format::JsonSchema;
  request.schema = {{"type", "object"},
                    {"properties", {{"mapper", {{"type", "string"}}}, {"rationale", {{"type", "string"}}}}},
                    {"required", {"mapper", "rationale"}},
                    {"additionalProperties", false}};
  std::string text, rationale;
  for (int round = 0;; ++round) {
    request.messages = ex.messages;
    auto reply = client_.chat(request);
    if (!reply) {
      ex.error = reply.error().message;
      exchanges_.push_back(std::move(ex));
      return std::nullopt;
    }
    ex.usage.promptTokens += reply->usage.promptTokens;
    ex.usage.completionTokens += reply->usage.completionTokens;
    ex.messages.push_back({"assistant", reply->content});
    std::tie(text, rationale) = readReply(reply->content);
    auto rejected = rejectIfInvalid(text, &app_);
    if (!rejected || round >= options_.repairs)
      break;
    ++ex.repairs;
    auto fix = llm::render(*repair, {{"diagnostics", rejected->profile.dump(2)}});
    ex.messages.push_back({"user", fix ? *fix : rejected->rawOutput});
  }
  std::string why = rationale.empty() ? "no rationale given" : rationale;
  exchanges_.push_back(std::move(ex));
  return engine::Candidate::make(text, best ? best->hash : std::string(),
                                 fmt::format("llm ({}): {}", options_.optimizer, why));
}

std::vector<engine::Candidate> LlmAgent::propose(size_t count) {
  std::vector<engine::Candidate> out;
  if (!started_) {
    started_ = true;
    out.push_back(engine::Candidate::make(start_, {}, "the starting point: " + startLabel_));
  }
  while (out.size() < count) {
    auto c = ask();
    if (!c)
      break; // the model cannot be asked (budget, network): the run ends here, with what it has
    out.push_back(std::move(*c));
  }
  return out;
}

void LlmAgent::notify(const std::vector<engine::Step> &steps) {
  for (const auto &s : steps) {
    seen_.push_back({s.candidate.artifact, s.candidate.hash, s.result.ok() ? s.result.score : 0.0, s.result.ok(),
                     s.feedback});
    if (s.result.ok() && (!best_ || s.result.score > seen_[*best_].score))
      best_ = seen_.size() - 1;
  }
}

} // namespace hone::mapping
