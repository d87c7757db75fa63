#include "report/Dashboard.h"

#include "report/Html.h"
#include "report/RunView.h"
#include "report/Svg.h"
#include "store/Store.h"

#include <fmt/format.h>
#include <httplib.h>

#include <cctype>

namespace hone::report {

using nlohmann::json;

namespace {

const char *kSecurityPolicy = "default-src 'none'; script-src 'self'; connect-src 'self'; img-src 'self' data:; "
                              "style-src 'self' 'unsafe-inline'";

void sendJson(httplib::Response &res, const json &j, int status = 200) {
  res.status = status;
  res.set_content(j.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void sendError(httplib::Response &res, int status, const std::string &message) {
  sendJson(res, {{"error", message}}, status);
}

json stepRow(const RunView &r, size_t i) {
  const store::StepRecord &s = r.steps[i];
  return {{"step", s.sequence},
          {"status", s.status},
          {"score", s.score},
          {"best_so_far", r.bestSoFar[i]},
          {"rationale", s.rationale},
          {"feedback", feedbackSummary(s)},
          {"seconds", s.seconds}};
}

} // namespace

bool loopbackHost(const std::string &host) {
  std::string name = host;
  if (!name.empty() && name.front() == '[') { // [::1] or [::1]:port
    size_t close = name.find(']');
    if (close == std::string::npos || (close + 1 < name.size() && name[close + 1] != ':'))
      return false;
    name = name.substr(1, close - 1);
  } else if (size_t colon = name.find(':'); colon != std::string::npos) {
    if (name.find(':', colon + 1) != std::string::npos)
      return false; // an IPv6 address must be in brackets in a Host header
    name = name.substr(0, colon);
  }
  for (char &c : name)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name == "127.0.0.1" || name == "localhost" || name == "::1";
}

struct Dashboard::Impl {
  DashboardOptions options;
  httplib::Server server;

  support::Expected<std::unique_ptr<store::Store>> open() const { return store::Store::openReadOnly(options.db); }

  /// Run N, or an error response.
  std::optional<RunView> run(const httplib::Request &req, httplib::Response &res) const {
    auto st = open();
    if (!st) {
      sendError(res, 503, st.error().message);
      return std::nullopt;
    }
    int64_t id = 0;
    try {
      id = std::stoll(req.matches[1]);
    } catch (const std::exception &) {
      sendError(res, 404, "no such run");
      return std::nullopt;
    }
    auto views = loadRuns(**st, {id});
    if (!views) {
      sendError(res, 404, views.error().message);
      return std::nullopt;
    }
    return std::move(views->front());
  }

  void routes() {
    server.set_default_headers({{"Content-Security-Policy", kSecurityPolicy},
                                {"X-Content-Type-Options", "nosniff"},
                                {"Cache-Control", "no-store"}});
    // cpp-httplib 0.11 bounds each read of a request (not the whole of its headers) and serves with a
    // fixed pool of workers (8 here): 8 clients sending their headers a byte at a time held them all,
    // and normal requests waited 20-45 s. Many more workers than a browser opens connections, a short
    // read timeout, and one request per connection keep the page answered.
    server.new_task_queue = [] { return new httplib::ThreadPool(kWorkers); };
    server.set_read_timeout(kReadTimeoutS, 0);
    server.set_keep_alive_max_count(1);
    server.set_pre_routing_handler([this](const httplib::Request &req, httplib::Response &res) {
      if (options.anyHost || loopbackHost(req.get_header_value("Host")))
        return httplib::Server::HandlerResponse::Unhandled;
      sendError(res, 421,
                fmt::format("this dashboard answers requests for 127.0.0.1, localhost or [::1], not '{}' "
                            "(hone serve --host ADDRESS answers any)",
                            req.get_header_value("Host")));
      return httplib::Server::HandlerResponse::Handled;
    });
    server.Get("/", [this](const httplib::Request &, httplib::Response &res) {
      res.set_content(dashboardPage(options.pollMs), "text/html; charset=utf-8");
    });
    server.Get("/dashboard.js", [](const httplib::Request &, httplib::Response &res) {
      res.set_content(dashboardScript(), "text/javascript; charset=utf-8");
    });
    server.Get("/api/runs", [this](const httplib::Request &, httplib::Response &res) {
      auto st = open();
      if (!st)
        return sendError(res, 503, st.error().message);
      auto views = loadRuns(**st, {});
      json list = json::array();
      for (const auto &v : *views)
        list.push_back(summaryJson(v));
      sendJson(res, list);
    });
    server.Get(R"(/api/runs/(\d+))", [this](const httplib::Request &req, httplib::Response &res) {
      auto r = run(req, res);
      if (!r)
        return;
      json steps = json::array();
      for (size_t i = 0; i < r->steps.size(); ++i)
        steps.push_back(stepRow(*r, i));
      json j{{"run", summaryJson(*r)}, {"label", runLabel(*r)}, {"baseline", r->baseline()},
             {"artifact_name", r->artifactName()}, {"steps", steps}, {"best", nullptr}};
      if (r->best)
        j["best"] = {{"step", r->steps[*r->best].sequence}, {"score", r->bestScore},
                     {"rationale", r->steps[*r->best].rationale}, {"artifact", r->steps[*r->best].artifact}};
      sendJson(res, j);
    });
    server.Get(R"(/api/runs/(\d+)/curve\.svg)", [this](const httplib::Request &req, httplib::Response &res) {
      auto r = run(req, res);
      if (!r)
        return;
      std::vector<RunView> one{std::move(*r)};
      res.set_content(groupSvg(groupRuns(one).front()), "image/svg+xml");
    });
    server.Get(R"(/api/runs/(\d+)/steps/(\d+))", [this](const httplib::Request &req, httplib::Response &res) {
      auto r = run(req, res);
      if (!r)
        return;
      size_t k = 0;
      try {
        k = static_cast<size_t>(std::stoull(req.matches[2]));
      } catch (const std::exception &) {
        k = r->steps.size();
      }
      if (k >= r->steps.size())
        return sendError(res, 404, fmt::format("run {} has no step {}", r->info.id, req.matches[2].str()));
      const store::StepRecord &s = r->steps[k];
      sendJson(res, {{"step", s.sequence}, {"status", s.status}, {"score", s.score}, {"rationale", s.rationale},
                     {"artifact", s.artifact}, {"error", s.error}, {"output", s.rawOutput},
                     {"feedback", support::toJson(s.feedback)}, {"metrics", s.metrics}, {"seconds", s.seconds}});
    });
    server.set_error_handler([](const httplib::Request &, httplib::Response &res) {
      if (res.body.empty())
        sendError(res, res.status, res.status == 404 ? "not found" : "error");
    });
  }
};

Dashboard::Dashboard(DashboardOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->routes();
}

Dashboard::~Dashboard() = default;

support::Expected<int> Dashboard::bind() {
  if (auto st = impl_->open(); !st)
    return st.error();
  int port = impl_->options.port;
  if (port == 0) {
    port = impl_->server.bind_to_any_port(impl_->options.host);
    if (port < 0)
      return support::Error{fmt::format("cannot bind a port on {}", impl_->options.host)};
  } else if (!impl_->server.bind_to_port(impl_->options.host, port)) {
    return support::Error{fmt::format("cannot bind {}:{} (in use? --port 0 takes any free port)",
                                      impl_->options.host, port)};
  }
  return port;
}

void Dashboard::serve() { impl_->server.listen_after_bind(); }

void Dashboard::stop() { impl_->server.stop(); }

} // namespace hone::report
