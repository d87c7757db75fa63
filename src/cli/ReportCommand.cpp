// hone report [RUN ...] [--db PATH] [-o FILE] [--title TEXT] [--max-steps N]
// hone plot RUN [RUN ...] [--db PATH] -o FILE.svg|FILE.png
// hone serve [--db PATH] [--host H] [--port N] [--poll-ms MS]
// Reading runs as people judge them: best-so-far curves, summaries, and every
// step; a file to keep (report, plot) or a live page while runs go on (serve).
#include "cli/Commands.h"

#include "report/Dashboard.h"
#include "report/Html.h"
#include "report/Svg.h"
#include "support/FileUtil.h"
#include "support/Subprocess.h"
#include "tune/Session.h"

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <pthread.h>
#include <thread>

namespace hone::cli {

namespace {

std::string nowUtc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

/// The runs `ids` of the store at `db` (all when empty), read-only; prints why not.
std::optional<std::vector<report::RunView>> readRuns(const std::string &db, const std::vector<int64_t> &ids) {
  if (!std::filesystem::exists(db)) {
    std::cerr << fmt::format("hone: --db {}: no such store (hone tune creates it)\n", db);
    return std::nullopt;
  }
  auto st = store::Store::openReadOnly(db);
  if (!st) {
    std::cerr << "hone: --db " << db << ": " << st.error().message << "\n";
    return std::nullopt;
  }
  auto views = report::loadRuns(**st, ids);
  if (!views) {
    std::cerr << fmt::format("hone: {} in {} (hone runs --db {} lists them)\n", views.error().message, db, db);
    return std::nullopt;
  }
  return std::move(*views);
}

bool sameFile(const std::string &a, const std::string &b) {
  std::error_code ec;
  return std::filesystem::exists(a, ec) && std::filesystem::exists(b, ec) && std::filesystem::equivalent(a, b, ec);
}

int writeOut(const std::string &path, const std::string &text, const std::string &db) {
  if (sameFile(path, db)) {
    std::cerr << fmt::format("hone: -o {} is the store itself; choose another file\n", path);
    return kUsage;
  }
  std::string error;
  if (!support::writeFileAtomically(path, text, &error)) {
    std::cerr << "hone: " << error << "\n";
    return kRejected;
  }
  return kOk;
}

} // namespace

void addReportCommand(CLI::App &app, Action &action) {
  struct Options {
    std::vector<int64_t> runs;
    std::string db = "hone.db", out, title = "hone report";
    size_t maxSteps = 500;
  };
  auto opts = std::make_shared<Options>();
  auto *cmd = app.add_subcommand("report", "Write one self-contained HTML report of runs: curves, summaries, steps");
  cmd->add_option("runs", opts->runs, "Run ids (default: every run of the store)");
  cmd->add_option("--db", opts->db, "Experiment store (SQLite)")->capture_default_str();
  cmd->add_option("-o,--out", opts->out, "The HTML file (default: beside the store, STORE-report.html)");
  cmd->add_option("--title", opts->title, "The report's title")->capture_default_str();
  cmd->add_option("--max-steps", opts->maxSteps,
                  "Runs with more steps list only those that improved the best (0: every step)")
      ->capture_default_str();
  cmd->callback([opts, &action] {
    action = [opts]() -> int {
      auto runs = readRuns(opts->db, opts->runs);
      if (!runs)
        return kUsage;
      report::ReportOptions o;
      o.title = opts->title;
      o.source = opts->db;
      o.generatedAt = nowUtc();
      o.maxSteps = opts->maxSteps;
      std::string out = opts->out.empty() ? tune::besideStore(opts->db, "report.html") : opts->out;
      if (int rc = writeOut(out, report::reportHtml(*runs, o), opts->db); rc != kOk)
        return rc;
      std::cout << fmt::format("hone: wrote {} ({} run{})\n", out, runs->size(), runs->size() == 1 ? "" : "s");
      return kOk;
    };
  });
}

void addPlotCommand(CLI::App &app, Action &action) {
  struct Options {
    std::vector<int64_t> runs;
    std::string db = "hone.db", out;
    int width = 760, height = 400;
  };
  auto opts = std::make_shared<Options>();
  auto *cmd = app.add_subcommand("plot", "Draw runs' best score so far against evaluations (SVG, or PNG)");
  cmd->add_option("runs", opts->runs, "Run ids (overlaid in one figure)")->required();
  cmd->add_option("--db", opts->db, "Experiment store (SQLite)")->capture_default_str();
  cmd->add_option("-o,--out", opts->out, "The figure: FILE.svg, or FILE.png (needs rsvg-convert)")->required();
  cmd->add_option("--width", opts->width, "Pixels")->capture_default_str()->check(CLI::Range(200, 8000));
  cmd->add_option("--height", opts->height, "Pixels")->capture_default_str()->check(CLI::Range(150, 8000));
  cmd->callback([opts, &action] {
    action = [opts]() -> int {
      std::string ext = std::filesystem::path(opts->out).extension().string();
      for (auto &c : ext)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (ext != ".svg" && ext != ".png") {
        std::cerr << fmt::format("hone: -o {}: the figure is written as .svg or .png\n", opts->out);
        return kUsage;
      }
      auto runs = readRuns(opts->db, opts->runs);
      if (!runs)
        return kUsage;
      // One figure over the runs given, in their order (whatever their apps).
      report::RunGroup g{runs->front().info.domain, runs->front().info.app, runs->front().info.machine, {}};
      for (const auto &r : *runs) {
        g.runs.push_back(&r);
        if (r.info.app != g.app)
          g.app = "several apps";
      }
      std::string svg = report::groupSvg(g, opts->width, opts->height);
      if (ext == ".svg") {
        if (int rc = writeOut(opts->out, svg, opts->db); rc != kOk)
          return rc;
      } else {
        // The SVG goes to a fresh private folder (never a fixed name a planted link could take).
        std::string dirTemplate = (std::filesystem::temp_directory_path() / "hone-plot-XXXXXX").string();
        if (!mkdtemp(dirTemplate.data())) {
          std::cerr << fmt::format("hone: cannot make a temporary folder for the figure: {}\n", std::strerror(errno));
          return kRejected;
        }
        std::string tmp = dirTemplate + "/curve.svg";
        if (int rc = writeOut(tmp, svg, opts->db); rc != kOk) {
          std::filesystem::remove_all(dirTemplate);
          return rc;
        }
        std::error_code made; // a missing folder is created, as for an SVG
        if (auto parent = std::filesystem::path(opts->out).parent_path(); !parent.empty())
          std::filesystem::create_directories(parent, made);
        support::SubprocessOptions so;
        so.argv = {"rsvg-convert", "--format=png", "--output", opts->out, tmp};
        so.timeoutS = 60;
        auto r = support::runSubprocess(so);
        std::filesystem::remove_all(dirTemplate);
        if (!r.ok()) {
          std::cerr << fmt::format("hone: cannot write {}: rsvg-convert {}{}\n", opts->out, r.describe(),
                                   r.started ? ": " + r.output
                                             : " (PNG needs rsvg-convert: Debian package librsvg2-bin, which "
                                               "scripts/install-deps.sh installs; or write .svg)");
          return kRejected;
        }
      }
      std::cout << fmt::format("hone: wrote {}\n", opts->out);
      return kOk;
    };
  });
}

void addServeCommand(CLI::App &app, Action &action) {
  auto opts = std::make_shared<report::DashboardOptions>();
  opts->db = "hone.db";
  auto *cmd = app.add_subcommand("serve", "Serve a live, read-only dashboard of a store's runs over HTTP");
  cmd->add_option("--db", opts->db, "Experiment store (SQLite)")->capture_default_str();
  auto *host = cmd->add_option("--host", opts->host,
                               "Address to listen on (the dashboard has no authentication; without --host it "
                               "answers only requests for 127.0.0.1, localhost or [::1])")
                   ->capture_default_str();
  cmd->add_option("--port", opts->port, "Port (0: any free port, printed)")->capture_default_str()->check(
      CLI::Range(0, 65535));
  cmd->add_option("--poll-ms", opts->pollMs, "How often the page refreshes")->capture_default_str()->check(
      CLI::Range(100, 600000));
  cmd->callback([opts, host, &action] {
    opts->anyHost = host->count() > 0;
    action = [opts]() -> int {
      if (!std::filesystem::exists(opts->db)) {
        std::cerr << fmt::format("hone: --db {}: no such store (hone tune creates it)\n", opts->db);
        return kUsage;
      }
      if (opts->host != "127.0.0.1" && opts->host != "localhost" && opts->host != "::1")
        std::cerr << fmt::format("hone: warning: serving on {}: anyone who reaches it reads every run, candidate "
                                 "and conversation of the store\n",
                                 opts->host);
      // SIGINT/SIGTERM go to a waiter thread that stops the server: block them everywhere first.
      sigset_t signals;
      sigemptyset(&signals);
      sigaddset(&signals, SIGINT);
      sigaddset(&signals, SIGTERM);
      pthread_sigmask(SIG_BLOCK, &signals, nullptr);
      report::Dashboard dashboard(*opts);
      auto port = dashboard.bind();
      if (!port) {
        std::cerr << "hone: " << port.error().message << "\n";
        return kUsage;
      }
      std::cout << fmt::format("hone: serving {} at http://{}:{}/ (read-only; Ctrl-C stops)", opts->db,
                               opts->host.find(':') != std::string::npos ? "[" + opts->host + "]" : opts->host,
                               *port)
                << std::endl;
      std::thread waiter([&] {
        int sig = 0;
        sigwait(&signals, &sig);
        dashboard.stop();
      });
      dashboard.serve();
      pthread_kill(waiter.native_handle(), SIGTERM); // when serving ended some other way
      waiter.join();
      std::cout << "hone: stopped serving" << std::endl;
      return kOk;
    };
  });
}

} // namespace hone::cli
