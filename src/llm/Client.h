// A client for OpenAI-compatible chat completions (OpenAI, vLLM, llama.cpp's
// server, Ollama): POST {base}/chat/completions over libcurl. It retries only
// transient failures (connection errors, timeouts, 408, 409, 429, 5xx) with
// exponential backoff and jitter, honouring Retry-After; bounds concurrency;
// asks for structured output and falls back (json_schema -> json_object ->
// text) when a server refuses it; counts tokens and money against budgets;
// and caches responses in SQLite so a run can be replayed without the
// network. The API key never appears in messages, logs or the cache.
// Knows nothing of mappers or search.
#pragma once

#include "support/Expected.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <vector>


namespace hone::support {
class Database;
}

namespace hone::llm {

struct Message {
  std::string role; // "system", "user", "assistant"
  std::string content;
};

enum class Format { Text, JsonObject, JsonSchema };
std::string_view toString(Format f);

struct ChatRequest {
  std::vector<Message> messages;
  double temperature = 0.2;
  int maxTokens = 0; // 0: the server's default
  std::optional<int64_t> seed; // sampling seed, sent as "seed" (OpenAI, vLLM, llama.cpp, Ollama); part of the cache key
  Format format = Format::Text;
  nlohmann::json schema; // for JsonSchema
  std::string schemaName = "reply";
  /// What the cache key hashes instead of `messages`, when set: a conversation whose prompts carry
  /// measurements (a kernel's times) is keyed with those parts left out, so that a replay of the run,
  /// which measures again, finds its replies.
  std::optional<std::vector<Message>> keyMessages;
};

struct Usage {
  int64_t promptTokens = 0;
  int64_t completionTokens = 0;
};

struct ChatResponse {
  std::string content;
  Usage usage;
  std::string finishReason;
  Format format = Format::Text; // the format the server accepted
  bool cached = false;          // answered from the cache
  int attempts = 1;             // HTTP requests made (retries included)
  double cost = 0;              // money, from the price table
};

/// What a transport returns for one POST.
struct HttpResult {
  bool connected = false; // false: connection error or timeout (see error)
  bool timedOut = false;
  int status = 0;
  std::map<std::string, std::string> headers; // lower-case names
  std::string body;
  std::string error;
  bool tooLarge = false; // the body passed maxBodyBytes: the transfer was stopped there
  bool interrupted = false; // abandoned because hone was interrupted (support/Interrupt.h)
};

class Transport {
public:
  virtual ~Transport() = default;
  /// `maxBodyBytes`: stop reading a reply body past this size (0: no limit) and say so.
  virtual HttpResult post(const std::string &url, const std::vector<std::string> &headers, const std::string &body,
                          double timeoutS, size_t maxBodyBytes) = 0;
};
std::unique_ptr<Transport> makeCurlTransport();

struct ClientConfig {
  std::string baseUrl; // e.g. http://localhost:8000/v1
  std::string model;
  std::string apiKey;  // from HONE_LLM_API_KEY or a config file; never from the command line
  double timeoutS = 120;
  size_t maxReplyBytes = size_t{8} << 20; // a longer reply body is a failed reply (max_reply_mb in the config file)
  int maxRetries = 2;
  double backoffS = 0.5;    // first delay, doubling
  double backoffMaxS = 8;
  double jitter = 0.25;     // up to this fraction of the delay is taken off at random
  int concurrency = 4;      // requests in flight at most
  std::string cachePath;    // empty: no cache
  bool replay = false;      // answer only from the cache; never touch the network
  int64_t tokenBudget = 0;  // prompt + completion tokens; 0: none
  double moneyBudget = 0;   // 0: none
  double pricePromptPerMTok = 0, priceCompletionPerMTok = 0;
  uint64_t seed = 1;        // of the jitter
};

/// Known endpoint kinds: their default base URL and whether they need a key.
struct Preset {
  std::string name, baseUrl;
  bool needsKey = false;
  std::string notes;
};
const std::vector<Preset> &presets();
const Preset *findPreset(const std::string &name);

class Client {
public:
  using Sleep = std::function<void(double seconds)>;
  static support::Expected<std::unique_ptr<Client>> make(ClientConfig config,
                                                         std::unique_ptr<Transport> transport = nullptr,
                                                         Sleep sleep = nullptr);
  ~Client();
  Client(const Client &) = delete;
  Client &operator=(const Client &) = delete;

  /// One chat completion. Errors say what happened and where (status, the server's message), never the key.
  support::Expected<ChatResponse> chat(const ChatRequest &request);

  Usage totals() const;
  double cost() const;
  /// Chat completions answered so far (from the cache or the network).
  int64_t calls() const;
  /// The delays slept before retries, in order (for tests and logs).
  std::vector<double> delays() const;
  /// The cache key of a request: a hash of everything that decides the reply.
  std::string cacheKey(const ChatRequest &request) const;
  /// Where problems that do not stop a call are reported (a reply that could not be cached, so a
  /// replay of the run would miss it); default: kept in warnings().
  void setWarningHandler(std::function<void(const std::string &)> warn);
  std::vector<std::string> warnings() const;

private:
  Client(ClientConfig config, std::unique_ptr<Transport> transport, Sleep sleep);
  std::string redact(std::string text) const;
  /// The request's JSON; `lean` adapts it to what the server refused before (temperature, seed,
  /// max_tokens -> max_completion_tokens).
  nlohmann::json body(const ChatRequest &request, Format format, bool lean = false) const;
  support::Expected<std::optional<ChatResponse>> cached(const std::string &key);
  /// A reply that needs no request (from the cache), or why none may be sent (replay, a budget used
  /// up); nullopt: ask. Takes the lock.
  std::optional<support::Expected<ChatResponse>> withoutAsking(const std::string &key);
  /// How long to wait before retry `retries` + 1 (Retry-After, else jittered exponential backoff).
  double retryDelay(const HttpResult &r, int retries);
  /// What `usage` costs at the configured prices.
  double costOf(const Usage &usage) const;
  support::Expected<bool> store(const std::string &key, const nlohmann::json &request, const ChatResponse &response);
  void warn(const std::string &message);

  ClientConfig config_;
  std::unique_ptr<Transport> transport_;
  Sleep sleep_;
  std::unique_ptr<support::Database> cache_; // the store's llm_cache table (its migrations create it)
  std::function<void(const std::string &)> warn_;
  std::vector<std::string> warnings_;
  mutable std::mutex mutex_; // totals, delays, format downgrades, cache, the jitter generator
  Usage totals_;
  double cost_ = 0;
  int64_t calls_ = 0;
  std::vector<double> delays_;
  Format maxFormat_ = Format::JsonSchema; // lowered when a server refuses structured output
  bool noTemperature_ = false, noSeed_ = false; // set when a server refuses them (e.g. reasoning models)
  bool completionTokensName_ = false;           // max_tokens refused: send max_completion_tokens
  uint64_t jitterState_;
  int inFlight_ = 0;
  std::condition_variable_any slots_;
};

/// The first fenced code block (```lang ... ```), preferring one tagged `lang`; nullopt if none.
std::optional<std::string> extractCodeBlock(const std::string &text, const std::string &lang = "");
/// A JSON object in the text: the whole text, a fenced block, or the outermost {...}.
std::optional<nlohmann::json> extractJson(const std::string &text);

} // namespace hone::llm
