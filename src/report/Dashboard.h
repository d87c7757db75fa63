// `hone serve`: a live, read-only dashboard over a store, on HTTP (cpp-httplib).
// Every request opens the store read-only (WAL: a tuning run writing to it is
// never blocked) and answers from what is committed at that moment; the page
// polls, so a run's curve grows while it goes on.
//   GET /                        the page (HTML; its script is /dashboard.js)
//   GET /api/runs                the runs, as `hone runs --json` lists them
//   GET /api/runs/N              run N: its summary, every step, the best candidate
//   GET /api/runs/N/curve.svg    run N's best score so far (the figure of `hone plot`)
//   GET /api/runs/N/steps/K      step K of run N, whole (candidate, error, output, feedback)
#pragma once

#include "support/Expected.h"

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace hone::report {

struct DashboardOptions {
  std::string db;
  std::string host = "127.0.0.1";
  int port = 8080; // 0: any free port
  int pollMs = 1000;
  /// False (the default, 127.0.0.1): only requests whose Host header names 127.0.0.1, localhost or
  /// [::1] are answered, so that a web page whose name resolves to 127.0.0.1 (DNS rebinding) cannot
  /// read the store. True when the user chose the address (--host): any Host is answered.
  bool anyHost = false;
};

/// Whether a Host header value (with or without a port) names the loopback by 127.0.0.1, localhost
/// or [::1].
bool loopbackHost(const std::string &host);

/// The server's workers (connections served at once) and how long one read of a request may wait:
/// clients that send their headers a byte at a time hold one worker each, so it takes many more of
/// them than a browser ever opens to hold the dashboard.
inline constexpr size_t kWorkers = 64;
inline constexpr int kReadTimeoutS = 2;

class Dashboard {
public:
  explicit Dashboard(DashboardOptions options);
  ~Dashboard();
  Dashboard(const Dashboard &) = delete;
  Dashboard &operator=(const Dashboard &) = delete;

  /// Binds the port; the one bound (useful with port 0).
  support::Expected<int> bind();
  /// Serves until stop() (from another thread or a signal waiter).
  void serve();
  void stop();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The page and its script, as served (for tests and `hone serve --print-page`).
std::string dashboardPage(int pollMs);
std::string dashboardScript();

} // namespace hone::report
