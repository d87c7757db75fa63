#include "kernel/CodeAgent.h"
#include "kernel/source/Transform.h"

#include "llm/Client.h"
#include "llm/Prompt.h"
#include "support/Diff.h"
#include "support/FileUtil.h"
#include "support/JsonText.h"
#include "support/StringUtil.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace hone::kernel {

namespace fs = std::filesystem;
using nlohmann::json;
using tune::LlmReading;
using tune::LlmRejection;

namespace {

/// The names of `#include`s (and `#include_next`, `#import`, `#embed`) in `text`, a file at `path` of
/// the project, that are absolute or climb out of the project: the compiler would read a file of the
/// machine and could quote it back in its errors, which go to the model.
std::set<std::string> includesOutsideProject(const std::string &path, const std::string &text) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    size_t at = line.find_first_not_of(" \t");
    if (at == std::string::npos || line[at] != '#')
      continue;
    at = line.find_first_not_of(" \t", at + 1);
    if (at == std::string::npos)
      continue;
    size_t word = at;
    while (at < line.size() && (std::isalnum(static_cast<unsigned char>(line[at])) || line[at] == '_'))
      ++at;
    std::string directive = line.substr(word, at - word);
    if (directive != "include" && directive != "include_next" && directive != "embed" && directive != "import")
      continue;
    at = line.find_first_not_of(" \t", at);
    if (at == std::string::npos || (line[at] != '"' && line[at] != '<'))
      continue;
    char close = line[at] == '"' ? '"' : '>';
    size_t end = line.find(close, at + 1);
    std::string name = line.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
    fs::path named(name);
    // Quoted names are looked up beside the file first: the lexical path must stay in the project.
    fs::path inProject = (fs::path(path).parent_path() / named).lexically_normal();
    if (named.is_absolute() || (!inProject.empty() && *inProject.begin() == ".."))
      out.insert(name);
  }
  return out;
}

LlmReading refuse(std::string why) {
  LlmReading r;
  r.rejection = LlmRejection{why, why};
  return r;
}

/// A project file's text; empty when it cannot be read (the variant's build then says why).
std::string readText(const fs::path &p) {
  auto text = support::readFile(p.string());
  return text ? *text : std::string();
}

std::string withoutSpace(const std::string &text) {
  std::string out;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c)))
      out += c;
  return out;
}

/// "D3", "d3: cache misses", 3 -> "D3"; empty when it names no diagnostic.
std::string diagnosticId(const json &j) {
  if (j.is_number_integer())
    return fmt::format("D{}", j.get<int64_t>());
  if (!j.is_string())
    return "";
  std::string s = j.get<std::string>();
  size_t at = 0;
  while (at < s.size() && std::isspace(static_cast<unsigned char>(s[at])))
    ++at;
  if (at < s.size() && (s[at] == 'D' || s[at] == 'd'))
    ++at;
  std::string digits;
  while (at < s.size() && std::isdigit(static_cast<unsigned char>(s[at])) && digits.size() < 6)
    digits += s[at++];
  return digits.empty() ? "" : "D" + digits;
}

std::vector<std::string> stringsOf(const json &j) {
  std::vector<std::string> out;
  if (j.is_array())
    for (const auto &x : j)
      if (std::string id = diagnosticId(x); !id.empty())
        out.push_back(id);
  return out;
}

/// A path as the model wrote it, as the manifest names it: "./k.c" and "project/k.c" are "k.c" when
/// "k.c" is editable; a path that climbs ("..") is left as it is (and refused).
std::string normalizedPath(std::string path, const std::vector<std::string> &editable) {
  while (path.rfind("./", 0) == 0)
    path = path.substr(2);
  if (path.find("..") != std::string::npos || std::find(editable.begin(), editable.end(), path) != editable.end())
    return path;
  for (const auto &e : editable)
    if (path.size() > e.size() && path.compare(path.size() - e.size() - 1, std::string::npos, "/" + e) == 0)
      return e;
  return path;
}

} // namespace

std::vector<ShownDiagnostic> shownDiagnostics(const support::Feedback &feedback) {
  std::vector<ShownDiagnostic> out;
  for (const support::Finding &f : feedback.findings) {
    if (f.explanation.empty())
      continue; // the "exec" level shows no analysis
    ShownDiagnostic d;
    d.id = fmt::format("D{}", out.size() + 1);
    d.rule = f.rule;
    d.text = f.explanation;
    if (!f.suggestion.empty())
      d.text += " Suggestion: " + f.suggestion;
    if (f.subject) {
      d.file = f.subject->file;
      d.line = f.subject->line;
    }
    d.transformations = f.transformations;
    out.push_back(std::move(d));
  }
  return out;
}

std::pair<int, int> enclosingBlock(const std::string &source, int line) {
  // Brace depth at the start and end of every line, outside comments, strings and characters.
  std::vector<int> startDepth{0}, endDepth;
  int depth = 0;
  enum { Code, LineComment, BlockComment, String, Char } state = Code;
  for (size_t i = 0; i < source.size(); ++i) {
    char c = source[i], next = i + 1 < source.size() ? source[i + 1] : '\0';
    if (c == '\n') {
      endDepth.push_back(depth);
      startDepth.push_back(depth);
      if (state == LineComment)
        state = Code;
      continue;
    }
    switch (state) {
    case Code:
      if (c == '/' && next == '/')
        state = LineComment;
      else if (c == '/' && next == '*')
        state = BlockComment, ++i;
      else if (c == '"')
        state = String;
      else if (c == '\'')
        state = Char;
      else if (c == '{')
        ++depth;
      else if (c == '}')
        depth = std::max(0, depth - 1);
      break;
    case BlockComment:
      if (c == '*' && next == '/')
        state = Code, ++i;
      break;
    case String:
    case Char:
      if (c == '\\')
        ++i;
      else if ((state == String && c == '"') || (state == Char && c == '\''))
        state = Code;
      break;
    case LineComment: break;
    }
  }
  endDepth.push_back(depth);
  int lines = static_cast<int>(endDepth.size());
  if (line < 1 || line > lines)
    return {line, line};
  auto at = [](const std::vector<int> &v, int l) { return v[static_cast<size_t>(l - 1)]; };
  if (at(startDepth, line) == 0 && at(endDepth, line) == 0)
    return {line, line};
  int first = line, last = line;
  while (first > 1 && at(startDepth, first) > 0)
    --first;
  while (last < lines && at(endDepth, last) > 0)
    ++last;
  return {first, last};
}

KernelCodec::KernelCodec(const Manifest &manifest, std::vector<Transformation> catalogue, std::string checkDir,
                         std::vector<std::string> promptDirs, std::string machine)
    : manifest_(manifest), catalogue_(std::move(catalogue)), checkDir_(std::move(checkDir)),
      promptDirs_(std::move(promptDirs)), machine_(std::move(machine)) {}

std::string KernelCodec::fence() const { return manifest_.language == "c" ? "c" : manifest_.language; }

std::vector<Transformation> KernelCodec::relevant() const {
  std::string target = manifest_.language == "cuda" ? "gpu" : "cpu";
  std::vector<Transformation> out;
  for (const auto &t : catalogue_)
    if (t.target == target)
      out.push_back(t);
  return out;
}

const Transformation *KernelCodec::transformation(const std::string &id) const {
  for (const auto &t : catalogue_)
    if (t.id == id)
      return &t;
  return nullptr;
}

std::map<std::string, std::string> KernelCodec::editableFiles(const Variant &v) const {
  std::map<std::string, std::string> out;
  for (const auto &name : manifest_.editable) {
    auto it = v.files.find(name);
    out[name] = it != v.files.end() ? it->second : readText(fs::path(manifest_.dir) / name);
  }
  return out;
}

support::Expected<std::map<std::string, std::string>> KernelCodec::promptValues() const {
  for (const char *name : {"choose", "chosen"}) // the {{insight}} texts: checked before the first request
    if (auto t = llm::loadTemplate("kernel", name, promptDirs_); !t)
      return t.error();
  std::string catalogue = catalogueText({});
  std::string knobs;
  for (const auto &k : manifest_.knobs) {
    if (k.kind == KnobKind::Source)
      continue; // shown with the nests they transform
    std::vector<std::string> values;
    for (const auto &v : k.values)
      values.push_back(v.empty() ? "\"\" (unset)" : v);
    knobs += fmt::format("- {} ({}{}): {}\n", k.name, toString(k.kind), k.doc.empty() ? "" : "; " + k.doc,
                         fmt::join(values, ", "));
  }
  static const std::map<std::string, std::string> languages = {{"c", "C"}, {"cpp", "C++"}, {"cuda", "CUDA"}};
  auto lang = languages.find(manifest_.language);
  return std::map<std::string, std::string>{
      {"project", manifest_.name},
      {"language", lang != languages.end() ? lang->second : manifest_.language},
      {"fence", fence()},
      {"machine", machine_},
      {"editable", fmt::format("{}", fmt::join(manifest_.editable, ", "))},
      {"flags", manifest_.flags.empty() ? "(none)" : manifest_.flags},
      {"knob_list", knobs.empty() ? "(the project has no knobs)\n" : knobs},
      {"catalogue", catalogue},
      {"source_model", sourceModel()},
  };
}

std::string KernelCodec::catalogueText(const std::set<std::string> &named) const {
  std::string full, others;
  for (const auto &t : relevant()) {
    if (named.empty() || named.count(t.id)) // (the references stay in `hone kernel profile`: a model needs none)
      full += fmt::format("- {}: {}. {} Expected effect: {} Risk: {}\n", t.id, t.name, t.changes, t.effect, t.risk);
    else
      others += fmt::format("{}{}", others.empty() ? "" : ", ", t.id);
  }
  if (!others.empty())
    full += fmt::format("- Not named by a diagnostic, also yours to apply (by id): {}.\n", others);
  return full;
}

std::vector<std::pair<std::string, std::string>>
KernelCodec::trimmings(const std::map<std::string, std::string> &values) const {
  std::vector<std::pair<std::string, std::string>> out;
  auto value = [&](const char *name) {
    auto it = values.find(name);
    return it != values.end() ? it->second : std::string();
  };
  // First the nests' analysis, to their knobs and values; then the catalogue, to ids; then the
  // execution output, to its start; then the diagnostics, to the first six.
  if (manifest_.plan) {
    std::string knobs = "(the analysis is left out to keep this prompt within its size budget; `hone kernel profile` "
                        "prints it) The nests' knobs and their values:\n";
    for (const auto &k : manifest_.knobs)
      if (k.kind == KnobKind::Source)
        knobs += fmt::format("- {}: {}\n", k.name, fmt::join(k.values, ", "));
    out.push_back({"source_model", knobs});
  }
  std::string ids;
  for (const auto &t : relevant())
    ids += fmt::format("{}{}", ids.empty() ? "" : ", ", t.id);
  out.push_back({"catalogue", "(entries left out to keep this prompt within its size budget) Ids: " + ids + "\n"});
  constexpr size_t kShortExecution = 600;
  if (std::string e = value("execution"); e.size() > kShortExecution)
    out.push_back({"execution", e.substr(0, kShortExecution) + " ... (cut to keep this prompt within its size budget)"});
  std::string diagnostics = value("diagnostics"), kept;
  size_t lines = 0, at = 0;
  for (; at < diagnostics.size() && lines < 6; ++lines) {
    size_t end = diagnostics.find('\n', at);
    end = end == std::string::npos ? diagnostics.size() : end + 1;
    kept += diagnostics.substr(at, end - at);
    at = end;
  }
  if (at < diagnostics.size())
    out.push_back({"diagnostics", kept + "- (more diagnostics left out to keep this prompt within its size budget)\n"});
  return out;
}

std::string KernelCodec::sourceModel(const json *breakdown) const {
  if (!manifest_.plan)
    return "(none: hone reads the loops of C and C++ projects only)\n";
  std::string text = manifest_.plan->describe();
  if (text.empty())
    return "(no loop nest hone can transform)\n";
  if (breakdown && breakdown->is_object() && breakdown->contains("nests") && (*breakdown)["nests"].is_array()) {
    // The nests the profile counts as cold are left out: their knobs stay, unexplained.
    std::map<std::string, double> shares; // "file:line" of a nest -> its share
    for (const auto &n : (*breakdown)["nests"])
      if (n.is_object() && n.contains("share") && n["share"].is_number() && n.contains("line") &&
          n["line"].is_number_integer())
        shares[fmt::format("{}:{}", support::textOf(n, "file"), n["line"].get<int>())] = n["share"].get<double>();
    std::string kept, left;
    bool keep = true;
    for (const auto &line : support::splitLines(text)) {
      if (line.rfind("nest ", 0) == 0) {
        std::string label = line.substr(5, line.find(" in ", 5) - 5); // "gemm.c:37-39"
        if (size_t dash = label.rfind('-'); dash != std::string::npos && dash > label.rfind(':'))
          label.resize(dash); // "gemm.c:37"
        auto it = shares.find(label);
        keep = it == shares.end() || it->second >= kColdNest;
        if (!keep)
          left += (left.empty() ? "" : ", ") + label;
      }
      if (keep)
        kept += line + "\n";
    }
    if (!left.empty())
      text = kept + fmt::format("(nests left out as cold, under {:.0f}% of the instructions each: {})\n",
                                100 * kColdNest, left);
  }
  return "Set a nest's knob (FILE:LINE.ACTION) in \"knobs\" instead of rewriting the nest (in a file you do not "
         "edit). A value \"not proven\" may be right, but then your code must make it so.\n" +
         text;
}

std::string KernelCodec::show(const std::string &artifact) const {
  auto v = parseVariant(manifest_, artifact);
  if (!v)
    return artifact;
  auto files = editableFiles(*v);
  if (files.size() == 1)
    return files.begin()->second;
  std::string out;
  for (const auto &[name, text] : files)
    out += fmt::format("// ==== file: {} ====\n{}{}", name, text, !text.empty() && text.back() != '\n' ? "\n" : "");
  return out;
}

std::map<std::string, std::string> KernelCodec::baseValues(const std::string &base,
                                                           const support::Feedback &feedback) const {
  std::string knobs = manifest_.knobs.empty() ? "(the project has no knobs)" : "all at their defaults";
  if (auto v = parseVariant(manifest_, base); v && !v->knobs.empty()) {
    // Only the knobs set away from the reference's value: a nest's twenty defaults say nothing.
    std::vector<std::string> parts;
    for (const auto &[k, value] : v->knobs) {
      const std::string &name = k; // (clang 14 cannot capture structured bindings)
      auto knob = std::find_if(manifest_.knobs.begin(), manifest_.knobs.end(), [&](const Knob &m) { return m.name == name; });
      if (knob != manifest_.knobs.end() && knob->defaultIndex < knob->values.size() &&
          knob->values[knob->defaultIndex] == value)
        continue;
      parts.push_back(fmt::format("{}={}", k, value.empty() ? "(unset)" : value));
    }
    if (!parts.empty())
      knobs = fmt::format("{}; the others at their defaults", fmt::join(parts, ", "));
  }
  std::string diagnostics;
  std::set<std::string> named; // the catalogue shows in full the first two entries each diagnostic names
  std::vector<std::string> elsewhere;
  for (const auto &d : shownDiagnostics(feedback)) {
    if (!d.file.empty() && std::find(manifest_.editable.begin(), manifest_.editable.end(), d.file) ==
                               manifest_.editable.end()) {
      elsewhere.push_back(d.line > 0 ? fmt::format("{}:{}", d.file, d.line) : d.file);
      continue; // in the harness or a library source: not the model's to change
    }
    for (size_t i = 0; i < d.transformations.size() && i < 2; ++i)
      named.insert(d.transformations[i]);
    std::string where = d.file.empty() ? "" : d.line > 0 ? fmt::format(" at {}:{}", d.file, d.line) : " in " + d.file;
    diagnostics += fmt::format("- {} [{}]{}: {}{}\n", d.id, d.rule, where, d.text,
                               d.transformations.empty()
                                   ? ""
                                   : fmt::format(" Catalogue: {}.", fmt::join(d.transformations, ", ")));
  }
  if (diagnostics.empty())
    diagnostics = !feedback.findings.empty()
                      ? "(not shown at this feedback level)\n"
                      : "(none: the profile shows nothing above hone's thresholds, or it has not run yet)\n";
  if (!elsewhere.empty())
    diagnostics += fmt::format("({} finding{} in files you may not change left out: {})\n", elsewhere.size(),
                               elsewhere.size() == 1 ? "" : "s", fmt::join(elsewhere, ", "));
  if (!feedback.breakdown.is_null()) // where the time goes comes first
    if (std::string b = breakdownText(feedback.breakdown, feedback.cold.is_null() ? json::array() : feedback.cold);
        !b.empty())
      diagnostics = b + "\n" + diagnostics;
  const std::string &execution = feedback.execution;
  std::map<std::string, std::string> out{{"knobs", knobs},
          {"diagnostics", diagnostics},
          {"execution", execution.empty() ? "(not run yet)" : execution},
          {"catalogue", catalogueText(named)}};
  if (!feedback.breakdown.is_null())
    out["source_model"] = sourceModel(&feedback.breakdown);
  return out;
}

json KernelCodec::replySchema() const {
  json str{{"type", "string"}};
  return {{"type", "object"},
          {"properties",
           {{"transformation", str},
            {"addresses", {{"type", "array"}, {"items", str}}},
            {"files",
             {{"type", "array"},
              {"items",
               {{"type", "object"},
                {"properties", {{"path", str}, {"content", str}}},
                {"required", {"path", "content"}},
                {"additionalProperties", false}}}}},
            {"diff", str},
            {"knobs",
             {{"type", "array"},
              {"items",
               {{"type", "object"},
                {"properties", {{"name", str}, {"value", str}}},
                {"required", {"name", "value"}},
                {"additionalProperties", false}}}}},
            {"rationale", str}}},
          {"required", {"transformation", "addresses", "files", "diff", "knobs", "rationale"}},
          {"additionalProperties", false}};
}

json KernelCodec::alignment(const std::vector<std::string> &addresses, const support::Feedback &baseFeedback,
                            const std::map<std::string, std::string> &before,
                            const std::map<std::string, std::string> &after, const KnobValues &knobsBefore,
                            const KnobValues &knobsAfter) const {
  std::vector<ShownDiagnostic> shown = shownDiagnostics(baseFeedback);
  json checked = json::array();
  bool any = false, aligned = false;
  std::vector<const Knob *> moved; // the knobs the change sets to another value
  for (const auto &k : manifest_.knobs) {
    auto value = [&](const KnobValues &v) {
      auto it = v.find(k.name);
      return it != v.end() ? it->second : k.values[k.defaultIndex];
    };
    if (value(knobsBefore) != value(knobsAfter))
      moved.push_back(&k);
  }
  bool changedCode = before != after || !moved.empty();
  // The knob that acts on `file`:[first, last] (the block of a located diagnostic), if any.
  auto knobOn = [&](const std::string &file, const std::string &text, int first, int last) -> const Knob * {
    for (const Knob *k : moved) {
      if (k->kind == KnobKind::Flags || k->kind == KnobKind::Env)
        return k;
      if (k->kind == KnobKind::Source && k->nestFile == file && k->nestLine <= last && k->nestEndLine >= first)
        return k;
      if (k->kind == KnobKind::Define) {
        auto lines = support::splitLines(text);
        for (int l = std::max(1, first); l <= last && l <= static_cast<int>(lines.size()); ++l)
          if (lines[static_cast<size_t>(l - 1)].find(k->name) != std::string::npos)
            return k;
      }
    }
    return nullptr;
  };
  for (const std::string &id : addresses) {
    auto d = std::find_if(shown.begin(), shown.end(), [&](const ShownDiagnostic &s) { return s.id == id; });
    if (d == shown.end()) {
      checked.push_back({{"diagnostic", id}, {"shown", false}});
      continue;
    }
    any = true;
    json c{{"diagnostic", id}, {"rule", d->rule}};
    bool touched;
    if (d->file.empty()) { // a whole-program finding (one core busy): any change answers it
      touched = changedCode;
      c["located"] = false;
    } else if (auto b = before.find(d->file); b == before.end()) {
      touched = false;
      c["file"] = d->file;
      c["why"] = "the diagnostic points at a file the variant may not change";
    } else {
      c["file"] = d->file;
      std::vector<int> lines = support::changedLines(b->second, after.at(d->file));
      int first = 1, last = std::numeric_limits<int>::max();
      if (d->line > 0) {
        std::pair<int, int> block = enclosingBlock(b->second, d->line);
        first = block.first, last = block.second; // (clang 14 cannot capture structured bindings)
        c["line"] = d->line;
        c["block"] = {first, last};
      }
      touched = std::any_of(lines.begin(), lines.end(), [&](int l) { return l >= first && l <= last; });
      if (!touched)
        if (const Knob *k = knobOn(d->file, b->second, first, last)) {
          touched = true;
          c["knob"] = k->name; // the build the knob changes acts on the code the diagnostic points at
        }
    }
    c["touched"] = touched;
    aligned = aligned || touched;
    checked.push_back(std::move(c));
  }
  json out{{"checked", checked}};
  if (!any) {
    out["aligned"] = nullptr;
    out["why"] = addresses.empty() ? "the reply names no diagnostic" : "the reply names no diagnostic it was shown";
  } else {
    out["aligned"] = aligned;
    out["why"] = aligned ? "the change touches code a named diagnostic points at"
                         : "the change touches none of the code the named diagnostics point at";
  }
  return out;
}

LlmReading KernelCodec::read(const std::string &content, const std::string &base,
                              const support::Feedback &baseFeedback) const {
  auto baseVariant = parseVariant(manifest_, base);
  if (!baseVariant)
    return refuse("the candidate to change does not parse: " + baseVariant.error().message);
  std::map<std::string, std::string> before = editableFiles(*baseVariant), after = before;
  KnobValues knobs = baseVariant->knobs;
  std::string editable = fmt::format("{}", fmt::join(manifest_.editable, ", "));

  json reply = json::object();
  if (auto j = llm::extractJson(content); j && j->is_object()) {
    reply = *j;
  } else if (auto diff = llm::extractCodeBlock(content, "diff");
             diff && (diff->rfind("@@ ", 0) == 0 || diff->rfind("--- ", 0) == 0 || diff->find("\n@@ ") != std::string::npos)) {
    reply["diff"] = *diff;
  } else if (auto code = llm::extractCodeBlock(content, fence()); code && manifest_.editable.size() == 1) {
    reply["files"] = json::array({{{"path", manifest_.editable.front()}, {"content", *code}}});
  } else {
    return refuse("The reply holds no JSON object (and no fenced diff or code block): reply with one JSON object "
                  "with the fields transformation, addresses, files, diff, knobs and rationale.");
  }
  auto field = [&](const char *key) {
    return reply.contains(key) && reply[key].is_string() ? reply[key].get<std::string>() : std::string();
  };
  auto nonEmpty = [&](const char *key) {
    return reply.contains(key) && ((reply[key].is_string() && !withoutSpace(reply[key].get<std::string>()).empty()) ||
                                   ((reply[key].is_array() || reply[key].is_object()) && !reply[key].empty()));
  };
  if (!nonEmpty("files") && !nonEmpty("diff") && !nonEmpty("knobs"))
    return refuse("The reply has no change: give complete new files in \"files\", a unified diff in \"diff\", or "
                  "knob values in \"knobs\".");

  // Complete files: only those the manifest lets a variant change.
  std::vector<std::pair<std::string, std::string>> files;
  if (reply.contains("files")) {
    const json &f = reply["files"];
    if (f.is_array()) {
      for (const auto &e : f)
        if (e.is_object() && e.contains("path") && e["path"].is_string() && e.contains("content") &&
            e["content"].is_string())
          files.emplace_back(e["path"].get<std::string>(), e["content"].get<std::string>());
        else
          return refuse("Each entry of \"files\" must be an object {\"path\": ..., \"content\": ...}.");
    } else if (f.is_object()) {
      for (const auto &[path, e] : f.items())
        if (e.is_string())
          files.emplace_back(path, e.get<std::string>());
    }
  }
  for (auto &[path, text] : files) {
    path = normalizedPath(path, manifest_.editable);
    if (!after.count(path))
      return refuse(fmt::format("The reply changes '{}', which is not a file you may change: only {} may be edited "
                                "(the build, the run and every other file are hone's). Change only those files.",
                                path, editable));
    after[path] = text;
  }
  // A unified diff, applied strictly to the current files.
  if (std::string diff = field("diff"); !withoutSpace(diff).empty()) {
    auto patches = support::splitPatch(diff);
    if (!patches)
      return refuse(fmt::format("The diff does not apply: {}. Give complete files in \"files\" instead, or a "
                                "unified diff of the current files.",
                                patches.error().message));
    for (const auto &p : *patches) {
      std::string path = normalizedPath(p.path, manifest_.editable);
      if (path.empty() && manifest_.editable.size() == 1)
        path = manifest_.editable.front();
      if (!after.count(path))
        return refuse(path.empty() ? fmt::format("The diff names no file; say which of {} it changes (--- a/FILE, "
                                                 "+++ b/FILE).",
                                                 editable)
                                   : fmt::format("The diff changes '{}', which is not a file you may change: only {} "
                                                 "may be edited.",
                                                 path, editable));
      auto applied = support::applyPatch(after[path], p.hunks);
      if (!applied)
        return refuse(fmt::format("The diff does not apply to {}: {}. Diff against the current code shown above, "
                                  "or give the complete file in \"files\".",
                                  path, applied.error().message));
      after[path] = *applied;
    }
  }
  // Knob values (the manifest's values only; the build and run commands stay hone's).
  if (reply.contains("knobs")) {
    auto set = [&](const std::string &name, const json &value) {
      knobs[name] = value.is_string() ? value.get<std::string>() : value.dump();
    };
    if (reply["knobs"].is_array()) {
      for (const auto &e : reply["knobs"])
        if (e.is_object() && e.contains("name") && e["name"].is_string() && e.contains("value"))
          set(e["name"].get<std::string>(), e["value"]);
    } else if (reply["knobs"].is_object()) {
      for (const auto &[name, value] : reply["knobs"].items())
        set(name, value);
    }
  }

  // New includes of files outside the project are refused (those the program had stay).
  for (const auto &[path, text] : after) {
    auto had = includesOutsideProject(path, before[path]);
    for (const auto &name : includesOutsideProject(path, text))
      if (!had.count(name))
        return refuse(fmt::format("{} includes '{}', a file outside the project: include the project's own "
                                  "headers by a path inside it, and system headers as <name>.",
                                  path, name));
  }

  bool sameCode = true;
  for (const auto &[path, text] : after)
    sameCode = sameCode && withoutSpace(text) == withoutSpace(before[path]);
  if (sameCode && knobs == baseVariant->knobs)
    return refuse("The reply changes nothing but whitespace: the code and the knobs are those of the current kernel. "
                  "Write a change that implements the transformation.");

  Variant v;
  v.knobs = knobs;
  for (const auto &[path, text] : after)
    if (text != readText(fs::path(manifest_.dir) / path)) // unchanged files stay the project's own
      v.files[path] = text;
  std::string artifact = renderVariant(v);
  if (auto checked = parseVariant(manifest_, artifact); !checked)
    return refuse(fmt::format("The variant is not valid: {}. Knob values must be among those listed.",
                              checked.error().message));

  LlmReading r;
  r.artifact = std::move(artifact);
  r.rationale = field("rationale");
  std::string claimed = field("transformation");
  std::vector<std::string> addresses = reply.contains("addresses") ? stringsOf(reply["addresses"]) : std::vector<std::string>{};
  std::vector<std::string> changed;
  for (const auto &[path, text] : after)
    if (text != before[path])
      changed.push_back(path);
  r.notes["claims"] = {{"transformation", claimed},
                       {"in_catalogue", transformation(claimed) != nullptr},
                       {"addresses", addresses}};
  r.notes["changed_files"] = changed;
  r.notes["alignment"] = alignment(addresses, baseFeedback, before, after, baseVariant->knobs, knobs);
  return r;
}

json KernelCodec::insightSchema() const {
  json str{{"type", "string"}};
  return {{"type", "object"},
          {"properties",
           {{"choices",
             {{"type", "array"},
              {"items",
               {{"type", "object"},
                {"properties", {{"transformation", str}, {"addresses", {{"type", "array"}, {"items", str}}}, {"why", str}}},
                {"required", {"transformation", "addresses", "why"}},
                {"additionalProperties", false}}}}}}},
          {"required", {"choices"}},
          {"additionalProperties", false}};
}

support::Expected<std::pair<std::string, json>> KernelCodec::readInsight(const std::string &content) const {
  auto j = llm::extractJson(content);
  if (!j || !j->is_object())
    return support::Error{"the reply holds no JSON object {\"choices\": [...]}"};
  json choices = j->contains("choices") ? (*j)["choices"] : json::array({*j});
  if (!choices.is_array() || choices.empty())
    return support::Error{"\"choices\" is empty: rank at least one transformation of the catalogue"};
  json notes = json::array();
  std::vector<std::string> ids;
  for (const auto &t : relevant())
    ids.push_back(t.id);
  for (const auto &c : choices) {
    std::string id = c.is_object() ? support::textOf(c, "transformation") : std::string();
    if (!transformation(id)) {
      auto close = support::closestMatch(id, ids);
      return support::Error{fmt::format("'{}' is not a transformation of the catalogue{}; its entries are: {}", id,
                                        close ? fmt::format(" (did you mean '{}'?)", *close) : "",
                                        fmt::join(ids, ", "))};
    }
    notes.push_back({{"transformation", id},
                     {"addresses", c.contains("addresses") ? stringsOf(c["addresses"]) : std::vector<std::string>{}},
                     {"why", support::textOf(c, "why")}});
  }
  const json &first = notes.front();
  const Transformation &t = *transformation(first["transformation"].get<std::string>());
  std::string ranking;
  for (size_t i = 0; i < notes.size(); ++i)
    ranking += fmt::format("{}. {} (answers {}): {}\n", i + 1, notes[i]["transformation"].get<std::string>(),
                           notes[i]["addresses"].empty() ? "no diagnostic named"
                                                         : fmt::format("{}", fmt::join(notes[i]["addresses"], ", ")),
                           notes[i]["why"].get<std::string>());
  auto chosen = llm::loadTemplate("kernel", "chosen", promptDirs_);
  if (!chosen)
    return chosen.error();
  auto text = llm::render(*chosen, {{"transformation", t.id},
                                    {"name", t.name},
                                    {"changes", t.changes},
                                    {"risk", t.risk},
                                    {"reference", t.reference},
                                    {"addresses", first["addresses"].empty()
                                                      ? std::string("no diagnostic named")
                                                      : fmt::format("{}", fmt::join(first["addresses"], ", "))},
                                    {"why", first["why"].get<std::string>()},
                                    {"ranking", ranking}});
  if (!text)
    return text.error();
  return std::make_pair(*text, json{{"choices", notes}});
}

std::string KernelCodec::singleCallInsight() const {
  auto t = llm::loadTemplate("kernel", "choose", promptDirs_);
  if (!t)
    return {};
  auto text = llm::render(*t, {});
  return text ? *text : std::string();
}

std::optional<LlmRejection> KernelCodec::check(const std::string &artifact) const {
  auto v = parseVariant(manifest_, artifact);
  if (!v)
    return LlmRejection{v.error().message, v.error().message};
  std::string dir = (fs::path(checkDir_) / engine::contentHash(artifact)).string();
  BuildResult b = build(manifest_, *v, dir);
  std::error_code ec;
  fs::remove_all(dir, ec); // the evaluator builds it again where it runs it
  if (b.ok)
    return std::nullopt;
  // Paths as the model knows them: the file names, not hone's folders.
  std::string errors = support::replaceAll(firstCompilerErrors(b.log), dir + "/", "");
  errors = support::replaceAll(errors, manifest_.dir + "/", "");
  std::string why = fmt::format("The kernel does not compile ({}). The compiler's first errors:\n{}", b.error, errors);
  return LlmRejection{why, why};
}

} // namespace hone::kernel
