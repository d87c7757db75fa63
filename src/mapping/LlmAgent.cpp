#include "mapping/LlmAgent.h"

#include "llm/Prompt.h"
#include "mapping/Evaluators.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <thread>

namespace hone::mapping {

using nlohmann::json;

LlmAgent::LlmAgent(const model::AppModel &app, const model::MachineModel &machine, std::string start,
                   std::string startLabel, llm::Client &client, LlmAgentOptions options)
    : app_(app), machine_(machine), start_(std::move(start)), startLabel_(std::move(startLabel)), client_(client),
      options_(std::move(options)) {
  if (auto k = parseOptimizer(options_.optimizer))
    shots_ = *k;
}

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
  if (!options_.program)
    return out;
  // Sizes at the problem size being tuned: what each region holds, how many points each task runs.
  const model::Program &p = *options_.program;
  out += fmt::format("Problem size: {} = {:g}{}\n", app_.sizeName.empty() ? "size" : app_.sizeName, p.size,
                     app_.sizeDoc.empty() ? "" : " (" + app_.sizeDoc + ")");
  std::vector<double> regionBytes(app_.regions.size(), 0);
  for (const auto &d : p.data)
    if (d.region >= 0 && static_cast<size_t>(d.region) < regionBytes.size())
      regionBytes[static_cast<size_t>(d.region)] += d.bytes;
  out += "Regions (total size; fields):\n";
  for (size_t r = 0; r < app_.regions.size(); ++r) {
    std::vector<std::string> fields;
    for (const auto &f : app_.regions[r].fields)
      fields.push_back(f.name);
    out += fmt::format("- {} ({:.4g} MB; {})\n", app_.regions[r].name, regionBytes[r] / 1e6, fmt::join(fields, ","));
  }
  if (!app_.partitions.empty()) {
    out += "Partitions (of region):\n";
    for (const auto &part : app_.partitions)
      out += fmt::format("- {} (of {})\n", part.name, part.region);
  }
  std::vector<size_t> points(app_.tasks.size(), 0);
  std::vector<double> bytes(app_.tasks.size(), 0);
  for (const auto &t : p.tasks) {
    if (t.task < 0 || static_cast<size_t>(t.task) >= points.size())
      continue;
    ++points[static_cast<size_t>(t.task)];
    for (const auto &a : t.accesses)
      bytes[static_cast<size_t>(t.task)] += a.instanceBytes;
  }
  out += "Point tasks per run (average data per point):\n";
  for (size_t t = 0; t < app_.tasks.size(); ++t)
    if (points[t] > 0)
      out += fmt::format("- {}: {} ({:.4g} MB)\n", app_.tasks[t].name, points[t],
                         bytes[t] / static_cast<double>(points[t]) / 1e6);
  return out;
}

std::string LlmAgent::machineDescription() const {
  std::string out = machine_.describe() + "\nMemories:\n";
  for (const auto &m : machine_.memories) {
    std::vector<std::string> from;
    for (const auto &a : m.access)
      if (std::string k(support::toString(a.proc)); std::find(from.begin(), from.end(), k) == from.end())
        from.push_back(k);
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

std::string scoreText(bool ok, double score) { return ok ? fmt::format("{:.3f}", score) : "0 (failed)"; }

} // namespace

support::Expected<int> parseOptimizer(const std::string &name) {
  if (name == "trace" || name == "opro")
    return -1;
  constexpr std::string_view suffix = "-shot";
  if (name.size() > suffix.size() && name.ends_with(suffix)) {
    std::string k = name.substr(0, name.size() - suffix.size());
    if (k.size() <= 2 && std::all_of(k.begin(), k.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
        std::stoi(k) <= 20)
      return std::stoi(k);
  }
  return support::Error{fmt::format("'{}' is not one of trace, opro, K-shot (0-shot, 5-shot, ... up to 20-shot)",
                                    name)};
}

std::string feedbackText(const json &feedback) {
  if (!feedback.is_object())
    return "(no feedback)";
  std::string out = "Execution output:\n" + feedback.value("execution", std::string("(none)")) + "\n";
  std::string findings;
  if (feedback.contains("findings") && feedback["findings"].is_array())
    for (const auto &f : feedback["findings"]) {
      // The evidence alone is what the profile measured; it is shown as part of an
      // explanation, so that the exec level shows the execution output only.
      if (!f.contains("explanation") && !f.contains("suggestion"))
        continue;
      findings += fmt::format("- [{}] {}\n", f.value("severity", "note"),
                              f.value("explanation", f.value("evidence", std::string())));
      if (f.contains("suggestion"))
        findings += fmt::format("  Suggestion: {}\n", f["suggestion"].get<std::string>());
    }
  if (!findings.empty())
    out += "\nAnalysis (AutoGuide):\n" + findings;
  return out;
}

json LlmExchange::toJson(const std::string &optimizer) const {
  json msgs = json::array();
  for (const auto &m : messages)
    msgs.push_back({{"role", m.role}, {"content", m.content}});
  json j{{"agent", "llm"},
         {"optimizer", optimizer},
         {"messages", msgs},
         {"usage", {{"prompt_tokens", usage.promptTokens}, {"completion_tokens", usage.completionTokens}}},
         {"cost", cost},
         {"calls", calls},
         {"repairs", repairs},
         {"cached", cached && calls > 0},
         {"finish_reasons", finishReasons}};
  if (seed)
    j["seed"] = *seed;
  if (!error.empty())
    j["error"] = error;
  return j;
}

std::map<std::string, std::string> LlmAgent::promptValues(const std::string &dsl) const {
  const Seen *best = best_ ? &seen_[*best_] : (seen_.empty() ? nullptr : &seen_.front());
  std::map<std::string, std::string> values = {
      {"app", app_.name},
      {"machine", machine_.name},
      {"dsl", dsl},
      {"machine_description", machineDescription()},
      {"app_description", appDescription()},
      {"mapper", best ? best->text : start_},
      {"score", best ? scoreText(best->ok, best->score) : "not run yet"},
      {"feedback", best ? feedbackText(best->feedback) : "(not run yet)"},
      {"last", ""},
      {"history", ""},
      {"examples", ""},
  };
  if (!seen_.empty() && best && &seen_.back() != best) {
    const Seen &last = seen_.back();
    values["last"] = fmt::format("## Your last attempt (score {}), not better than the current mapper\n```dsl\n{}\n```\n"
                                 "What happened when it ran:\n{}\n",
                                 scoreText(last.ok, last.score), last.text, feedbackText(last.feedback));
  }
  if (options_.optimizer == "opro") {
    std::vector<const Seen *> ranked;
    for (const auto &s : seen_)
      ranked.push_back(&s);
    std::stable_sort(ranked.begin(), ranked.end(), [](const Seen *a, const Seen *b) { return a->score > b->score; });
    if (ranked.size() > options_.history)
      ranked.resize(options_.history);
    std::reverse(ranked.begin(), ranked.end()); // ascending, the best last
    std::string history;
    for (const Seen *s : ranked)
      history += fmt::format("score: {}\n```dsl\n{}\n```\n\n", scoreText(s->ok, s->score), s->text);
    values["history"] = history;
  }
  if (shots_ > 0) {
    std::string examples;
    for (size_t i = 0; i < options_.examples.size() && i < static_cast<size_t>(shots_); ++i)
      examples += fmt::format("### Example {}: {}\n```dsl\n{}\n```\n\n", i + 1, options_.examples[i].label,
                              options_.examples[i].text);
    values["examples"] = examples;
  }
  return values;
}

support::Expected<LlmAgent::Prepared> LlmAgent::prepare() const {
  const char *bodyName = shots_ >= 0 ? "shots" : options_.optimizer == "opro" ? "opro" : "trace";
  auto system = llm::loadTemplate("mapping", "system", options_.promptDirs);
  auto body = llm::loadTemplate("mapping", bodyName, options_.promptDirs);
  auto repair = llm::loadTemplate("mapping", "repair", options_.promptDirs);
  auto duplicate = llm::loadTemplate("mapping", "duplicate", options_.promptDirs);
  for (const auto *t : {&system, &body, &repair, &duplicate})
    if (!*t)
      return t->error();
  std::string dsl = options_.dslReference;
  if (dsl.empty())
    if (auto ref = llm::loadTemplate("mapping", "dsl", options_.promptDirs))
      dsl = ref->text;
  auto prompt = llm::render(*body, promptValues(dsl));
  if (!prompt)
    return prompt.error();
  return Prepared{*repair, *duplicate, {{"system", system->text}, {"user", *prompt}}};
}

std::optional<engine::Candidate> LlmAgent::converse(const Prepared &prepared, int64_t index, LlmExchange &ex) const {
  ex.messages = prepared.messages;
  llm::ChatRequest request;
  request.temperature = options_.temperature;
  request.maxTokens = options_.maxTokens;
  if (options_.seed)
    ex.seed = request.seed = *options_.seed + index;
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
      return std::nullopt;
    }
    ++ex.calls;
    ex.cached = ex.cached && reply->cached;
    ex.usage.promptTokens += reply->usage.promptTokens;
    ex.usage.completionTokens += reply->usage.completionTokens;
    ex.cost += reply->cost;
    ex.messages.push_back({"assistant", reply->content});
    ex.finishReasons.push_back(reply->finishReason);
    std::tie(text, rationale) = readReply(reply->content);
    std::optional<std::string> followUp;
    if (auto rejected = rejectIfInvalid(text, &app_)) {
      auto fix = llm::render(prepared.repair, {{"diagnostics", rejected->profile.dump(2)}});
      followUp = fix ? *fix : rejected->rawOutput;
      if (reply->finishReason == "length")
        *followUp = "Your reply was cut off at the token limit before the mapper was complete; reply with a "
                    "shorter complete mapper (no explanations inside it).\n\n" +
                    *followUp;
    } else if (std::string hash = engine::contentHash(text); seenByHash_.count(hash) || pending_.count(hash)) {
      std::string earlier = "is being evaluated";
      if (auto it = seenByHash_.find(hash); it != seenByHash_.end())
        earlier = "scored " + scoreText(seen_[it->second].ok, seen_[it->second].score);
      auto again = llm::render(prepared.duplicate, {{"earlier", earlier}});
      followUp = again ? *again : "This mapper was already evaluated; write a different one.";
    }
    if (!followUp || round >= options_.repairs)
      break;
    ++ex.repairs;
    ex.messages.push_back({"user", *followUp});
  }
  std::string why = rationale.empty() ? "no rationale given" : rationale;
  const Seen *best = best_ ? &seen_[*best_] : nullptr;
  engine::Candidate c = engine::Candidate::make(text, shots_ < 0 && best ? best->hash : std::string(),
                                                fmt::format("llm ({}): {}", options_.optimizer, why));
  c.notes = ex.toJson(options_.optimizer);
  return c;
}

std::vector<engine::Candidate> LlmAgent::propose(size_t count) {
  std::vector<engine::Candidate> out;
  if (!started_) {
    started_ = true;
    // K-shot samples start from nothing (the ablation's point); trace and opro improve a start.
    if (shots_ < 0) {
      out.push_back(engine::Candidate::make(start_, {}, "the starting point: " + startLabel_));
      pending_.insert(out.back().hash);
    }
  }
  if (out.size() >= count)
    return out;
  if (repeats_ >= kMaxRepeats) {
    stopReason_ =
        fmt::format("the LLM agent stopped: the model proposed mappers already tried {} times in a row", repeats_);
    return out;
  }
  auto prepared = prepare();
  if (!prepared) {
    stopReason_ = "the LLM agent stopped: " + prepared.error().message;
    return out;
  }
  // The batch's requests share one prompt and differ in their seed; they go out together (the
  // client bounds how many are in flight) and come back in order, so a replay sees the same batch.
  size_t want = count - out.size();
  std::vector<LlmExchange> exchanges(want);
  std::vector<std::optional<engine::Candidate>> got(want);
  auto one = [&](size_t i) { got[i] = converse(*prepared, requests_ + static_cast<int64_t>(i), exchanges[i]); };
  if (want == 1) {
    one(0);
  } else {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < want; ++i)
      threads.emplace_back(one, i);
    for (auto &t : threads)
      t.join();
  }
  requests_ += static_cast<int64_t>(want);
  for (size_t i = 0; i < want; ++i) {
    if (!got[i]) {
      // The model cannot be asked (budget, network): the run ends when no request of a batch gets through.
      stopReason_ = "the LLM agent stopped: " + exchanges[i].error;
    } else {
      repeats_ = seenByHash_.count(got[i]->hash) || pending_.count(got[i]->hash) ? repeats_ + 1 : 0;
      pending_.insert(got[i]->hash);
      out.push_back(std::move(*got[i]));
    }
    exchanges_.push_back(std::move(exchanges[i]));
  }
  return out;
}

void LlmAgent::notify(const std::vector<engine::Step> &steps) {
  for (const auto &s : steps) {
    pending_.erase(s.candidate.hash);
    if (seenByHash_.count(s.candidate.hash))
      continue; // a repeat: its result is the earlier one's
    seenByHash_[s.candidate.hash] = seen_.size();
    seen_.push_back({s.candidate.artifact, s.candidate.hash, s.result.ok() ? s.result.score : 0.0, s.result.ok(),
                     s.feedback});
    if (s.result.ok() && (!best_ || s.result.score > seen_[*best_].score))
      best_ = seen_.size() - 1;
  }
}

} // namespace hone::mapping
