// A chat-completions server on 127.0.0.1 whose replies are scripted per
// test: started by the test, stopped with it. It records every request body
// and Authorization header.
#pragma once

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hone::llm::test {

using nlohmann::json;
using Handler = std::function<void(const httplib::Request &, httplib::Response &)>;

class FakeServer {
public:
  FakeServer() {
    server_.Post("/v1/chat/completions", [this](const httplib::Request &req, httplib::Response &res) {
      Handler next;
      {
        std::lock_guard lock(mutex_);
        requests.push_back(json::parse(req.body, nullptr, false));
        authorization.push_back(req.get_header_value("Authorization"));
        if (!script_.empty()) {
          next = script_.front();
          script_.pop_front();
        }
      }
      if (next)
        next(req, res);
      else
        reply("default reply")(req, res);
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() before the loop runs would be lost; wait until it listens.
    while (!server_.is_running())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeServer() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  void then(Handler h) {
    std::lock_guard lock(mutex_);
    script_.push_back(std::move(h));
  }
  static Handler reply(const std::string &content, int prompt = 10, int completion = 5) {
    return [=](const httplib::Request &, httplib::Response &res) {
      json j{{"choices", {{{"message", {{"role", "assistant"}, {"content", content}}}, {"finish_reason", "stop"}}}},
             {"usage", {{"prompt_tokens", prompt}, {"completion_tokens", completion}}}};
      res.set_content(j.dump(), "application/json");
    };
  }
  static Handler status(int code, const std::string &body, std::map<std::string, std::string> headers = {}) {
    return [=](const httplib::Request &, httplib::Response &res) {
      res.status = code;
      for (const auto &[k, v] : headers)
        res.set_header(k, v);
      res.set_content(body, "application/json");
    };
  }
  std::vector<json> requests;
  std::vector<std::string> authorization;

private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::deque<Handler> script_;
};


} // namespace hone::llm::test
