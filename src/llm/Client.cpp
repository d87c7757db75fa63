#include "llm/Client.h"

#include "store/Store.h"
#include "support/Interrupt.h"
#include "support/JsonText.h"
#include "support/Sqlite.h"

#include "support/StringUtil.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

namespace hone::llm {

using nlohmann::json;

std::string_view toString(Format f) {
  switch (f) {
  case Format::Text: return "text";
  case Format::JsonObject: return "json_object";
  case Format::JsonSchema: return "json_schema";
  }
  return "?";
}

const std::vector<Preset> &presets() {
  static const std::vector<Preset> all = {
      {"openai", "https://api.openai.com/v1", true, "needs HONE_LLM_API_KEY"},
      {"vllm", "http://localhost:8000/v1", false, "vllm serve MODEL; the key is ignored unless --api-key was given"},
      {"llamacpp", "http://localhost:8080/v1", false,
       "llama-server -m MODEL.gguf; GET /health answers once the model is loaded; extra requests wait for a slot"},
      {"ollama", "http://localhost:11434/v1", false, "ollama serve; clients must send a key, the server ignores it"},
  };
  return all;
}

const Preset *findPreset(const std::string &name) {
  for (const auto &p : presets())
    if (p.name == name)
      return &p;
  return nullptr;
}

// ---- the curl transport ---------------------------------------------------------

namespace {

struct BodySink {
  std::string *body;
  size_t max; // 0: no limit
  bool tooLarge = false;
};

size_t onBody(char *data, size_t size, size_t count, void *out) {
  auto *sink = static_cast<BodySink *>(out);
  if (sink->max > 0 && sink->body->size() + size * count > sink->max) {
    sink->tooLarge = true;
    return 0; // libcurl stops the transfer with CURLE_WRITE_ERROR
  }
  sink->body->append(data, size * count);
  return size * count;
}

int onProgress(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t) { return support::interrupted() ? 1 : 0; }

size_t onHeader(char *data, size_t size, size_t count, void *out) {
  std::string line(data, size * count);
  auto colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    std::string value = line.substr(colon + 1);
    auto b = value.find_first_not_of(" \t"), e = value.find_last_not_of(" \t\r\n");
    (*static_cast<std::map<std::string, std::string> *>(out))[name] =
        b == std::string::npos ? "" : value.substr(b, e - b + 1);
  }
  return size * count;
}

class CurlTransport final : public Transport {
public:
  CurlTransport() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  }
  HttpResult post(const std::string &url, const std::vector<std::string> &headers, const std::string &body,
                  double timeoutS, size_t maxBodyBytes) override {
    HttpResult r;
    BodySink sink{&r.body, maxBodyBytes};
    CURL *curl = curl_easy_init();
    if (!curl) {
      r.error = "cannot initialise libcurl";
      return r;
    }
    curl_slist *list = nullptr;
    for (const auto &h : headers)
      list = curl_slist_append(list, h.c_str());
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeoutS * 1000));
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::min(timeoutS, 30.0) * 1000));
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, onBody);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L); // the progress callback abandons a request on Ctrl-C
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, onProgress);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, onHeader);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &r.headers);
    CURLcode code = curl_easy_perform(curl);
    if (code == CURLE_OK) {
      long status = 0;
      curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
      r.connected = true;
      r.status = static_cast<int>(status);
    } else {
      r.timedOut = code == CURLE_OPERATION_TIMEDOUT;
      r.interrupted = code == CURLE_ABORTED_BY_CALLBACK;
      r.tooLarge = sink.tooLarge;
      r.error = sink.tooLarge ? fmt::format("the reply is larger than {} bytes", maxBodyBytes) : curl_easy_strerror(code);
    }
    curl_slist_free_all(list);
    curl_easy_cleanup(curl);
    return r;
  }
};

} // namespace

std::unique_ptr<Transport> makeCurlTransport() { return std::make_unique<CurlTransport>(); }

// ---- the client ---------------------------------------------------------------------

namespace {

bool transient(int status) { return status == 408 || status == 409 || status == 429 || status >= 500; }

/// A token count as a server reports it: a negative, fractional-garbage, non-finite or absurd value
/// (a server's bug, or a hostile one) must not reach the budget arithmetic as undefined behaviour.
/// Negative and non-numbers count 0; anything past 10^12 counts 10^12, which exhausts any budget.
int64_t tokenCount(const json &usage, const char *key) {
  constexpr double kMax = 1e12;
  auto it = usage.find(key);
  if (it == usage.end() || !it->is_number())
    return 0;
  double v = it->get<double>();
  if (std::isnan(v) || v <= 0)
    return 0;
  return static_cast<int64_t>(std::min(v, kMax));
}

/// Retry-After (seconds) or retry-after-ms, when between 0 and 60 s.
std::optional<double> retryAfter(const std::map<std::string, std::string> &headers) {
  auto number = [](const std::string &s) -> std::optional<double> {
    char *end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str())
      return std::nullopt;
    return v;
  };
  if (auto it = headers.find("retry-after-ms"); it != headers.end())
    if (auto v = number(it->second); v && *v >= 0 && *v <= 60000)
      return *v / 1000;
  if (auto it = headers.find("retry-after"); it != headers.end())
    if (auto v = number(it->second); v && *v >= 0 && *v <= 60)
      return *v;
  return std::nullopt;
}

/// The server's error message: {"error": {"message": ...}} or {"error": "..."}, else the body's start.
/// Whether a 400's body names `param` as the parameter at fault (OpenAI's error.param, or the message).
bool refusesParameter(const std::string &body, const std::string &param) {
  auto j = support::parseJsonBounded(body);
  if (!j.is_discarded() && j.is_object() && j.contains("error") && j["error"].is_object()) {
    const json &e = j["error"];
    if (e.value("param", json()).is_string() && e["param"].get<std::string>() == param)
      return true;
    std::string message = support::textOf(e, "message");
    return message.find("'" + param + "'") != std::string::npos || message.find("`" + param + "`") != std::string::npos ||
           message.find("\"" + param + "\"") != std::string::npos;
  }
  return false;
}

std::string serverMessage(const std::string &body) {
  try {
    json j = support::parseJsonBounded(body);
    if (j.is_object() && j.contains("error")) {
      const json &e = j["error"];
      if (e.is_string())
        return e.get<std::string>();
      if (e.is_object() && e.contains("message") && e["message"].is_string())
        return e["message"].get<std::string>();
    }
  } catch (const json::exception &) {
  }
  return body.substr(0, 300);
}

} // namespace

Client::Client(ClientConfig config, std::unique_ptr<Transport> transport, Sleep sleep)
    : config_(std::move(config)), transport_(std::move(transport)), sleep_(std::move(sleep)),
      jitterState_(config_.seed * 0x9E3779B97F4A7C15ull + 1) {}

Client::~Client() = default;

support::Expected<std::unique_ptr<Client>> Client::make(ClientConfig config, std::unique_ptr<Transport> transport,
                                                         Sleep sleep) {
  if (config.model.empty())
    return support::Error{"the LLM needs a model name (--llm-model)"};
  if (config.baseUrl.empty() && !config.replay)
    return support::Error{"the LLM needs an endpoint (--llm-url, e.g. http://localhost:8000/v1)"};
  while (!config.baseUrl.empty() && config.baseUrl.back() == '/')
    config.baseUrl.pop_back();
  if (config.replay && config.cachePath.empty())
    return support::Error{"replay needs a response cache (--llm-cache PATH)"};
  if (!transport)
    transport = makeCurlTransport();
  if (!sleep)
    sleep = [](double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); };
  std::unique_ptr<Client> c(new Client(std::move(config), std::move(transport), std::move(sleep)));
  const std::string &path = c->config_.cachePath;
  if (!path.empty()) {
    if (!c->config_.replay) {
      // The cache is a hone store: its migrations own the llm_cache table (created, or upgraded).
      auto st = store::Store::open(path);
      if (!st)
        return support::Error{fmt::format("--llm-cache {}: {}", path, st.error().message)};
    }
    auto db = support::Database::open(path, c->config_.replay ? support::Database::Mode::ReadOnly
                                                              : support::Database::Mode::ReadWriteCreate);
    if (!db)
      return support::Error{fmt::format("--llm-cache {}", db.error().message)};
    auto has = (*db)->hasTable("llm_cache");
    if (!has)
      return support::Error{fmt::format("--llm-cache {}: {}", path, has.error().message)};
    if (!*has)
      return support::Error{fmt::format("--llm-cache {}: no responses were ever cached there (no llm_cache table); "
                                        "replay needs the store or cache of an earlier run",
                                        path)};
    c->cache_ = std::move(*db);
  }
  return c;
}

void Client::setWarningHandler(std::function<void(const std::string &)> warn) {
  std::lock_guard lock(mutex_);
  warn_ = std::move(warn);
}

std::vector<std::string> Client::warnings() const {
  std::lock_guard lock(mutex_);
  return warnings_;
}

void Client::warn(const std::string &message) { // called with mutex_ held
  warnings_.push_back(message);
  if (warn_)
    warn_(message);
}

std::string Client::redact(std::string text) const {
  if (config_.apiKey.size() >= 4)
    for (size_t at = text.find(config_.apiKey); at != std::string::npos; at = text.find(config_.apiKey, at))
      text.replace(at, config_.apiKey.size(), "[key]");
  return text;
}

json Client::body(const ChatRequest &request, Format format, bool lean) const {
  json messages = json::array();
  for (const auto &m : request.messages)
    messages.push_back({{"role", m.role}, {"content", m.content}});
  json j{{"model", config_.model}, {"messages", messages}};
  if (!(lean && noTemperature_))
    j["temperature"] = request.temperature;
  if (request.maxTokens > 0)
    j[lean && completionTokensName_ ? "max_completion_tokens" : "max_tokens"] = request.maxTokens;
  if (request.seed && !(lean && noSeed_))
    j["seed"] = *request.seed;
  if (format == Format::JsonObject)
    j["response_format"] = {{"type", "json_object"}};
  if (format == Format::JsonSchema)
    j["response_format"] = {
        {"type", "json_schema"},
        {"json_schema", {{"name", request.schemaName}, {"strict", true}, {"schema", request.schema}}}};
  return j;
}

std::string Client::cacheKey(const ChatRequest &request) const {
  std::string text;
  if (request.keyMessages) {
    ChatRequest keyed = request;
    keyed.messages = *request.keyMessages;
    text = body(keyed, keyed.format).dump();
  } else {
    text = body(request, request.format).dump();
  }
  return fmt::format("{:016x}{:016x}", support::fnv1a64(text), support::fnv1a64(text, 0x84222325cbf29ce4ull));
}

support::Expected<std::optional<ChatResponse>> Client::cached(const std::string &key) {
  if (!cache_)
    return std::optional<ChatResponse>();
  support::Statement st(*cache_, "SELECT response FROM llm_cache WHERE key = ?");
  st.bind(1, key);
  auto row = st.step();
  if (!row)
    return support::Error{fmt::format("reading the response cache {}: {}", config_.cachePath, row.error().message)};
  if (!*row)
    return std::optional<ChatResponse>();
  try {
    json j = json::parse(st.text(0));
    ChatResponse r;
    r.content = support::textOf(j, "content");
    r.finishReason = support::textOf(j, "finish_reason");
    r.usage.promptTokens = j.value("prompt_tokens", int64_t{0});
    r.usage.completionTokens = j.value("completion_tokens", int64_t{0});
    std::string f = j.value("format", "text");
    r.format = f == "json_schema" ? Format::JsonSchema : f == "json_object" ? Format::JsonObject : Format::Text;
    r.cached = true;
    r.attempts = 0;
    return std::optional<ChatResponse>(r);
  } catch (const json::exception &e) {
    return support::Error{fmt::format("the response cache {} holds an unreadable entry for this request (key {}): "
                                      "{}; delete that row or use another cache",
                                      config_.cachePath, key, e.what())};
  }
}

support::Expected<bool> Client::store(const std::string &key, const json &request, const ChatResponse &response) {
  if (!cache_ || config_.replay)
    return true;
  json j{{"content", response.content},
         {"finish_reason", response.finishReason},
         {"prompt_tokens", response.usage.promptTokens},
         {"completion_tokens", response.usage.completionTokens},
         {"format", toString(response.format)}};
  support::Statement st(*cache_, "INSERT OR REPLACE INTO llm_cache (key, request, response) VALUES (?, ?, ?)");
  st.bind(1, key).bind(2, request.dump()).bind(3, j.dump());
  return st.run();
}

namespace {

/// A chat completion's reply (throws json::exception on one that is not).
ChatResponse readReply(const json &reply, Format format, int attempts) {
  const json &choice = reply.at("choices").at(0);
  ChatResponse out;
  const json &content = choice.at("message").at("content");
  out.content = content.is_string() ? content.get<std::string>() : content.dump();
  out.finishReason = support::textOf(choice, "finish_reason");
  if (reply.contains("usage") && reply["usage"].is_object()) {
    out.usage.promptTokens = tokenCount(reply["usage"], "prompt_tokens");
    out.usage.completionTokens = tokenCount(reply["usage"], "completion_tokens");
  }
  out.format = format;
  out.attempts = attempts;
  return out;
}

} // namespace

double Client::costOf(const Usage &usage) const {
  return (static_cast<double>(usage.promptTokens) * config_.pricePromptPerMTok +
          static_cast<double>(usage.completionTokens) * config_.priceCompletionPerMTok) /
         1e6;
}

support::Expected<ChatResponse> Client::chat(const ChatRequest &request) {
  std::string key = cacheKey(request);
  if (auto answered = withoutAsking(key))
    return std::move(*answered);
  // Bounded concurrency: wait for a slot.
  {
    std::unique_lock lock(mutex_);
    slots_.wait(lock, [&] { return inFlight_ < std::max(1, config_.concurrency); });
    ++inFlight_;
  }
  struct Release {
    Client *c;
    ~Release() {
      std::lock_guard lock(c->mutex_);
      --c->inFlight_;
      c->slots_.notify_one();
    }
  } release{this};

  std::vector<std::string> headers = {"Content-Type: application/json", "Accept: application/json"};
  if (!config_.apiKey.empty())
    headers.push_back("Authorization: Bearer " + config_.apiKey);
  Format format;
  {
    std::lock_guard lock(mutex_);
    format = std::min(request.format, maxFormat_);
  }
  std::string url = config_.baseUrl + "/chat/completions";
  int attempts = 0, retries = 0;
  std::string lastError;
  for (;;) {
    ++attempts;
    json sent;
    {
      std::lock_guard lock(mutex_);
      sent = body(request, format, true);
    }
    HttpResult r = transport_->post(url, headers, sent.dump(), config_.timeoutS, config_.maxReplyBytes);
    bool retry = false;
    if (r.interrupted)
      return support::Error{"the request was abandoned: hone was interrupted"};
    if (r.tooLarge) {
      // Not retried: the same request would most likely bring the same flood back.
      return support::Error{redact(fmt::format("{} sent a reply larger than {} bytes (max_reply_mb in the LLM config "
                                               "file); it was not read",
                                               url, config_.maxReplyBytes))};
    } else if (!r.connected) {
      lastError = r.timedOut ? fmt::format("no reply from {} within {} s", url, config_.timeoutS)
                             : fmt::format("cannot reach {}: {}", url, r.error);
      retry = true;
    } else if (r.status == 400 && format != Format::Text &&
               (r.body.find("response_format") != std::string::npos || r.body.find("json_schema") != std::string::npos ||
                r.body.find("json_object") != std::string::npos)) {
      // The server refuses structured output: ask again with the next weaker format (not a retry).
      format = format == Format::JsonSchema ? Format::JsonObject : Format::Text;
      std::lock_guard lock(mutex_);
      maxFormat_ = std::min(maxFormat_, format);
      continue;
    } else if (r.status == 400 && refusesParameter(r.body, "temperature") && sent.contains("temperature")) {
      // Reasoning models accept only their default temperature: ask again without one (not a retry).
      std::lock_guard lock(mutex_);
      noTemperature_ = true;
      continue;
    } else if (r.status == 400 && refusesParameter(r.body, "seed") && sent.contains("seed")) {
      std::lock_guard lock(mutex_);
      noSeed_ = true;
      continue;
    } else if (r.status == 400 && refusesParameter(r.body, "max_tokens") && sent.contains("max_tokens")) {
      // Reasoning models take max_completion_tokens instead.
      std::lock_guard lock(mutex_);
      completionTokensName_ = true;
      continue;
    } else if (r.status != 200) {
      lastError = fmt::format("{} answered HTTP {}: {}", url, r.status, serverMessage(r.body));
      if (!transient(r.status))
        return support::Error{redact(lastError)};
      retry = true;
    } else if (size_t depth = support::jsonDepth(r.body); depth > support::kMaxJsonDepth) {
      // Not retried: the same request would most likely bring the same reply back.
      lastError = fmt::format("{} sent a reply nested {} levels deep; hone reads JSON at most {} deep", url, depth,
                              support::kMaxJsonDepth);
    } else {
      try {
        ChatResponse out = readReply(json::parse(r.body), format, attempts);
        out.cost = costOf(out.usage);
        std::lock_guard lock(mutex_);
        totals_.promptTokens += out.usage.promptTokens;
        totals_.completionTokens += out.usage.completionTokens;
        cost_ += out.cost;
        ++calls_;
        if (auto stored = store(key, body(request, request.format), out); !stored)
          warn(fmt::format("a reply was not cached, so a replay of this run would miss it: {}",
                           stored.error().message));
        return out;
      } catch (const json::exception &e) {
        // A cut or garbled body: the connection, not the request, is at fault.
        lastError = fmt::format("{} sent an unreadable reply ({} bytes): {}", url, r.body.size(), e.what());
        retry = true;
      }
    }
    if (!retry || retries >= config_.maxRetries)
      return support::Error{redact(fmt::format("{} (after {} attempt{})", lastError, attempts, attempts == 1 ? "" : "s"))};
    double delay = retryDelay(r, retries);
    ++retries;
    sleep_(delay);
  }
}

std::optional<support::Expected<ChatResponse>> Client::withoutAsking(const std::string &key) {
  std::lock_guard lock(mutex_);
  auto hit = cached(key);
  if (!hit)
    return support::Expected<ChatResponse>(hit.error());
  if (*hit) {
    ChatResponse &reply = **hit;
    totals_.promptTokens += reply.usage.promptTokens;
    totals_.completionTokens += reply.usage.completionTokens;
    reply.cost = costOf(reply.usage);
    cost_ += reply.cost;
    ++calls_;
    return support::Expected<ChatResponse>(reply);
  }
  if (config_.replay)
    return support::Expected<ChatResponse>(support::Error{
        fmt::format("replay: the cache {} has no response for this request (key {}); the run diverged from the "
                    "recorded one",
                    config_.cachePath, key)});
  if (config_.tokenBudget > 0 && totals_.promptTokens + totals_.completionTokens >= config_.tokenBudget)
    return support::Expected<ChatResponse>(
        support::Error{fmt::format("the token budget of {} is used up ({} tokens)", config_.tokenBudget,
                                   totals_.promptTokens + totals_.completionTokens)});
  if (config_.moneyBudget > 0 && cost_ >= config_.moneyBudget)
    return support::Expected<ChatResponse>(
        support::Error{fmt::format("the money budget of {:.4f} is used up ({:.4f})", config_.moneyBudget, cost_)});
  return std::nullopt;
}

double Client::retryDelay(const HttpResult &r, int retries) {
  std::lock_guard lock(mutex_);
  jitterState_ = jitterState_ * 6364136223846793005ull + 1442695040888963407ull;
  double u = static_cast<double>(jitterState_ >> 11) * 0x1.0p-53;
  double backoff = std::min(config_.backoffMaxS, config_.backoffS * std::pow(2.0, retries));
  double delay = r.connected ? retryAfter(r.headers).value_or(backoff * (1 - config_.jitter * u))
                             : backoff * (1 - config_.jitter * u);
  delays_.push_back(delay);
  return delay;
}

Usage Client::totals() const {
  std::lock_guard lock(mutex_);
  return totals_;
}

double Client::cost() const {
  std::lock_guard lock(mutex_);
  return cost_;
}

int64_t Client::calls() const {
  std::lock_guard lock(mutex_);
  return calls_;
}

std::vector<double> Client::delays() const {
  std::lock_guard lock(mutex_);
  return delays_;
}

// ---- reading replies ------------------------------------------------------------------

std::optional<std::string> extractCodeBlock(const std::string &text, const std::string &lang) {
  std::optional<std::string> first;
  for (size_t open = text.find("```"); open != std::string::npos;) {
    size_t lineEnd = text.find('\n', open);
    if (lineEnd == std::string::npos)
      break;
    std::string tag = text.substr(open + 3, lineEnd - open - 3);
    tag.erase(std::remove_if(tag.begin(), tag.end(), [](unsigned char c) { return std::isspace(c); }), tag.end());
    size_t close = text.find("```", lineEnd + 1);
    std::string block = text.substr(lineEnd + 1, (close == std::string::npos ? text.size() : close) - lineEnd - 1);
    if (!lang.empty() && tag == lang)
      return block;
    if (!first)
      first = block;
    if (close == std::string::npos)
      break;
    open = text.find("```", close + 3);
  }
  return first;
}

std::optional<json> extractJson(const std::string &text) {
  auto tryParse = [](const std::string &s) -> std::optional<json> {
    json j = support::parseJsonBounded(s); // a value nested too deep is no object here
    if (j.is_object())
      return j;
    return std::nullopt;
  };
  if (auto j = tryParse(text))
    return j;
  if (auto block = extractCodeBlock(text, "json"))
    if (auto j = tryParse(*block))
      return j;
  auto b = text.find('{'), e = text.rfind('}');
  if (b != std::string::npos && e != std::string::npos && e > b)
    return tryParse(text.substr(b, e - b + 1));
  return std::nullopt;
}

} // namespace hone::llm
