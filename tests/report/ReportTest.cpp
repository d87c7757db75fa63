// Reports and the dashboard: what a run's curve and tables say is what the
// store holds, hostile text stays text, and the dashboard reads a store that
// a run is still writing.
#include "report/Dashboard.h"
#include "report/Export.h"
#include "report/Html.h"
#include "report/RunView.h"
#include "report/Svg.h"
#include "store/Store.h"
#include "TestUtil.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>

#include <filesystem>
#include <regex>
#include <thread>
#include <unistd.h>

namespace hone::report {
namespace {

using nlohmann::json;

struct TempStore {
  std::string path = std::filesystem::temp_directory_path() /
                     ("hone-report-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + ".db");
  std::unique_ptr<store::Store> store;
  TempStore() {
    auto s = store::Store::open(path);
    EXPECT_TRUE(s.ok()) << s.error().message;
    store = std::move(s).value();
  }
  ~TempStore() {
    store.reset();
    for (const char *suffix : {"", "-wal", "-shm"})
      std::filesystem::remove(path + suffix);
  }
  int64_t run(const std::string &agent, const std::string &app = "circuit") {
    store::RunInfo r;
    r.app = app;
    r.machine = "p100x4";
    r.agent = agent;
    r.config = {{"iterations", 10}, {"baseline", 2.0}, {"baseline_label", "the expert mapper"}};
    return *store->createRun(r);
  }
  void step(int64_t run, int64_t sequence, const std::string &status, double score,
            const std::string &artifact = "Task * GPU;\n", const std::string &rationale = "because") {
    store::StepRecord s;
    s.sequence = sequence;
    s.artifact = artifact;
    s.hash = "h" + std::to_string(run) + "-" + std::to_string(sequence);
    s.rationale = rationale;
    s.status = status;
    s.score = score;
    s.error = status == "ok" ? "" : "Out of memory: region r\nsecond line";
    s.feedback = hone::test::feedbackOf({{"findings", json::array({{{"rule", "oom"}, {"evidence", "1.6 GB of 2 GB"}}})}});
    ASSERT_TRUE(store->recordStep(run, s).ok());
  }
  static inline int counter = 0;
};

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

TEST(RunView, TheBestSoFarHoldsOverFailuresAndCountsThemByKind) {
  TempStore t;
  int64_t id = t.run("guided");
  t.step(id, 0, "run_failed", 0);
  t.step(id, 1, "ok", 1.0);
  t.step(id, 2, "ok", 0.8);
  t.step(id, 3, "timed_out", 0);
  t.step(id, 4, "ok", 1.3);
  t.step(id, 5, "run_failed", 0);
  auto views = loadRuns(*t.store, {});
  ASSERT_TRUE(views.ok());
  const RunView &v = views->front();
  EXPECT_EQ(v.bestSoFar, (std::vector<double>{0, 1.0, 1.0, 1.0, 1.3, 1.3}));
  EXPECT_EQ(v.best, 4u);
  EXPECT_EQ(v.failures, 3u);
  EXPECT_EQ(v.byStatus.at("run_failed"), 2u);
  json j = summaryJson(v);
  EXPECT_EQ(j["failures_by_status"], (json{{"run_failed", 2}, {"timed_out", 1}}));
  EXPECT_EQ(j["best_step"], 4);
  EXPECT_FALSE(loadRuns(*t.store, {id + 1}).ok());
}

TEST(Svg, EveryPointCarriesItsRunStepAndValueAndTextIsEscaped) {
  TempStore t;
  int64_t id = t.run("guided");
  t.step(id, 0, "run_failed", 0);
  t.step(id, 1, "ok", 1.0);
  t.step(id, 2, "ok", 1.25);
  t.step(id, 3, "ok", 1.1);
  auto views = loadRuns(*t.store, {});
  Series s = bestSoFarSeries(views->front(), "<b>guided</b> & co", "#000");
  ASSERT_EQ(s.points.size(), 3u); // from the first success on
  EXPECT_EQ(s.steps, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(s.improved, (std::vector<bool>{true, true, false}));
  PlotOptions o;
  o.title = "<script>alert(1)</script>";
  o.reference = 1.0;
  std::string svg = curveSvg({s}, o);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_NE(svg.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(svg.find("&lt;b&gt;guided&lt;/b&gt; &amp; co"), std::string::npos);
  EXPECT_EQ(count(svg, "<circle"), 3u);
  EXPECT_NE(svg.find("data-step=\"2\" data-evaluation=\"3\" data-value=\"1.25\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("class=\"reference\" data-value=\"1\""), std::string::npos);
  // Nothing to draw is still a figure, with no NaN in it.
  std::string empty = curveSvg({Series{"none", 9, "#000", {}, {}, {}}}, PlotOptions{});
  EXPECT_EQ(empty.find("nan"), std::string::npos) << empty;
  EXPECT_NE(empty.find("none (no successful step)"), std::string::npos);
  EXPECT_EQ(escapeXml(std::string("a\x01z")), "a\xEF\xBF\xBDz"); // not allowed in XML
}

TEST(Html, OneSectionPerAppEveryStepAndHostileTextStaysText) {
  TempStore t;
  int64_t a = t.run("guided"), b = t.run("random"), c = t.run("guided", "stencil");
  t.step(a, 0, "ok", 1.0, "Task * GPU;\n");
  t.step(a, 1, "ok", 1.2, "Task * GPU;\n# </pre><script>window.x=1</script>\n", "<img src=x onerror=alert(1)>");
  t.step(b, 0, "run_failed", 0);
  t.step(c, 0, "ok", 1.0);
  auto views = loadRuns(*t.store, {});
  ReportOptions o;
  o.source = "runs/<x>.db";
  std::string html = reportHtml(*views, o);
  EXPECT_EQ(count(html, "<section class=\"app\""), 2u);
  EXPECT_EQ(count(html, "<svg"), 2u);
  EXPECT_EQ(count(html, "<tr data-step="), 4u);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
  EXPECT_NE(html.find("runs/&lt;x&gt;.db"), std::string::npos);
  // The diff from the start to the best, and the failed run's failures by kind.
  EXPECT_NE(html.find("<span class=\"add\">+# &lt;/pre&gt;&lt;script&gt;"), std::string::npos);
  EXPECT_NE(html.find("1 run_failed"), std::string::npos);
  EXPECT_NE(html.find("No step succeeded."), std::string::npos);
  EXPECT_NE(html.find("oom: 1.6 GB of 2 GB"), std::string::npos); // the feedback the agent saw
}

TEST(Html, TheBestsEvidenceIsShownTypedAndUnreadableEvidenceIsSaidNotLost) {
  TempStore t;
  int64_t id = t.run("guided");
  t.step(id, 0, "ok", 1.0);
  store::StepRecord s;
  s.sequence = 1;
  s.artifact = "Task * CPU;\n";
  s.hash = "profiled";
  s.parent = "h1-0";
  s.status = "ok";
  s.score = 1.5;
  s.evidence.tool = "simulator";
  support::Bottleneck channel;
  channel.kind = "channel";
  channel.subject = "nvlink <GPU1>";
  channel.share = 0.42;
  channel.detail = "busy 42% of the time";
  s.evidence.bottlenecks = {channel};
  ASSERT_TRUE(t.store->recordStep(id, s).ok());
  store::StepRecord child = s;
  child.sequence = 2;
  child.hash = "child";
  child.parent = "profiled";
  child.score = 1.2;
  child.evidence = {};
  child.profile = {{"evidence_version", 7}, {"bottlenecks", json::array()}}; // a newer hone's row
  ASSERT_TRUE(t.store->recordStep(id, child).ok());
  auto views = loadRuns(*t.store, {});
  std::string html = reportHtml(*views, ReportOptions{});
  EXPECT_NE(html.find("Top findings of the profile of step 1"), std::string::npos) << html;
  EXPECT_NE(html.find("<td>channel</td><td>nvlink &lt;GPU1&gt;</td><td class=\"num\">42%</td>"), std::string::npos);
  EXPECT_NE(html.find("The evidence of 1 step could not be read and is left out (the evidence of step 2: "
                      "evidence_version 7: written by a newer hone"),
            std::string::npos);
  // The corpus line of the child summarises its parent's evidence; the export says what it could not read.
  auto run = t.store->run(id);
  auto steps = t.store->steps(id);
  json line = corpusJson(*run, steps, 2);
  ASSERT_EQ(line["profile_summary"].size(), 1u) << line.dump();
  EXPECT_EQ(line["profile_summary"][0], json({{"kind", "channel"}, {"resource", "nvlink <GPU1>"}, {"share", 0.42}}));
  EXPECT_EQ(stepJson(*run, steps, 2)["evidence_problem"],
            "the evidence of step 2: evidence_version 7: written by a newer hone (this one reads up to 2)");
  EXPECT_FALSE(stepJson(*run, steps, 1).contains("evidence_problem"));
}

TEST(Html, ALongRunListsItsImprovingSteps) {
  TempStore t;
  int64_t id = t.run("random");
  for (int i = 0; i < 12; ++i)
    t.step(id, i, i % 3 == 0 ? "ok" : "run_failed", 1.0 + i * 0.1);
  auto views = loadRuns(*t.store, {});
  ReportOptions o;
  o.maxSteps = 5;
  std::string html = reportHtml(*views, o);
  EXPECT_EQ(count(html, "<tr data-step="), 4u); // steps 0, 3, 6, 9 each improved the best
  EXPECT_NE(html.find("hone show 1 --trajectory"), std::string::npos);
  o.maxSteps = 0;
  EXPECT_EQ(count(reportHtml(*views, o), "<tr data-step="), 12u);
}

TEST(Store, ReadOnlyRefusesWhatIsNotAStoreOfThisSchema) {
  std::string path = std::filesystem::temp_directory_path() / ("hone-report-empty-" + std::to_string(getpid()) + ".db");
  { std::FILE *f = std::fopen(path.c_str(), "w"); std::fclose(f); }
  auto st = store::Store::openReadOnly(path);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("not a hone store"), std::string::npos) << st.error().message;
  std::filesystem::remove(path);
}

TEST(Dashboard, AnswersFromWhatIsCommittedWhileARunWrites) {
  TempStore t;
  int64_t id = t.run("guided");
  t.step(id, 0, "ok", 1.0, "# <script>x</script>\n");
  DashboardOptions o;
  o.db = t.path;
  o.port = 0;
  Dashboard d(o);
  auto port = d.bind();
  ASSERT_TRUE(port.ok()) << port.error().message;
  std::thread server([&] { d.serve(); });
  httplib::Client client("127.0.0.1", *port);
  auto get = [&](const std::string &path) {
    for (int i = 0; i < 50; ++i) // the server may still be starting
      if (auto r = client.Get(path.c_str()))
        return r;
      else
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return httplib::Result{nullptr, httplib::Error::Connection};
  };
  auto runs = get("/api/runs");
  ASSERT_TRUE(runs);
  EXPECT_EQ(runs->status, 200);
  EXPECT_NE(runs->get_header_value("Content-Security-Policy").find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(json::parse(runs->body).size(), 1u);
  // The run goes on: the writer is not blocked, and the next read sees its step.
  t.step(id, 1, "ok", 1.5);
  auto detail = get("/api/runs/" + std::to_string(id));
  ASSERT_TRUE(detail);
  json j = json::parse(detail->body);
  ASSERT_EQ(j["steps"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["steps"][1]["best_so_far"], 1.5);
  EXPECT_EQ(j["best"]["step"], 1);
  auto svg = get("/api/runs/" + std::to_string(id) + "/curve.svg");
  ASSERT_TRUE(svg);
  EXPECT_EQ(svg->get_header_value("Content-Type"), "image/svg+xml");
  EXPECT_EQ(count(svg->body, "<circle"), 2u);
  auto step = get("/api/runs/" + std::to_string(id) + "/steps/0");
  ASSERT_TRUE(step);
  EXPECT_EQ(json::parse(step->body)["artifact"], "# <script>x</script>\n"); // JSON: the page writes it as text
  EXPECT_EQ(get("/api/runs/99")->status, 404);
  EXPECT_EQ(get("/api/runs/" + std::to_string(id) + "/steps/7")->status, 404);
  EXPECT_EQ(get("/nothing")->status, 404);
  auto page = get("/");
  ASSERT_TRUE(page);
  EXPECT_NE(page->body.find("<script src=\"/dashboard.js\">"), std::string::npos);
  EXPECT_EQ(count(page->body, "<script"), 1u); // no inline script: the policy forbids it
  auto script = get("/dashboard.js");
  ASSERT_TRUE(script);
  EXPECT_EQ(script->body.find("innerHTML"), std::string::npos); // text from the store goes in as text
  d.stop();
  server.join();
}

TEST(Dashboard, AnswersOnlyRequestsForTheLoopbackUnlessAHostWasChosen) {
  // DNS rebinding: a page of evil.example whose name resolves to 127.0.0.1 sends Host: evil.example.
  EXPECT_TRUE(loopbackHost("127.0.0.1:8080"));
  EXPECT_TRUE(loopbackHost("localhost"));
  EXPECT_TRUE(loopbackHost("LOCALHOST:1"));
  EXPECT_TRUE(loopbackHost("[::1]:8080"));
  EXPECT_TRUE(loopbackHost("[::1]"));
  EXPECT_FALSE(loopbackHost("evil.example"));
  EXPECT_FALSE(loopbackHost("127.0.0.1.evil.example:80"));
  EXPECT_FALSE(loopbackHost("localhost.evil.example"));
  EXPECT_FALSE(loopbackHost("[::1]x"));
  EXPECT_FALSE(loopbackHost(""));
  TempStore t;
  t.run("guided");
  for (bool anyHost : {false, true}) {
    DashboardOptions o;
    o.db = t.path;
    o.port = 0;
    o.anyHost = anyHost;
    Dashboard d(o);
    auto port = d.bind();
    ASSERT_TRUE(port.ok()) << port.error().message;
    std::thread server([&] { d.serve(); });
    httplib::Client client("127.0.0.1", *port);
    for (int i = 0; i < 50 && !client.Get("/api/runs"); ++i) // the server may still be starting
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto fine = client.Get("/api/runs");
    auto evil = client.Get("/api/runs", {{"Host", "evil.example"}});
    ASSERT_TRUE(fine);
    ASSERT_TRUE(evil);
    EXPECT_EQ(fine->status, 200);
    EXPECT_EQ(evil->status, anyHost ? 200 : 421) << evil->body;
    if (!anyHost) {
      EXPECT_NE(evil->body.find("not 'evil.example'"), std::string::npos) << evil->body;
    }
    d.stop();
    server.join();
  }
}

TEST(Dashboard, ClientsSendingTheirHeadersAByteAtATimeDoNotHoldIt) {
  TempStore t;
  t.run("guided");
  DashboardOptions o;
  o.db = t.path;
  o.port = 0;
  Dashboard d(o);
  auto port = d.bind();
  ASSERT_TRUE(port.ok()) << port.error().message;
  std::thread server([&] { d.serve(); });
  httplib::Client client("127.0.0.1", *port);
  for (int i = 0; i < 50 && !client.Get("/api/runs"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // 16 connections that send a header byte every half second (each read well inside any timeout).
  std::vector<int> slow;
  for (int i = 0; i < 16; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(*port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr), 0);
    slow.push_back(fd);
  }
  std::atomic<bool> done{false};
  std::thread dribble([&] {
    const char *header = "GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    for (size_t k = 0; !done && header[k]; ++k) {
      for (int fd : slow)
        (void)!::send(fd, header + k, 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  auto t0 = std::chrono::steady_clock::now();
  auto r = client.Get("/api/runs");
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  done = true;
  dribble.join();
  for (int fd : slow)
    ::close(fd);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_LT(waited, 1.5) << "a normal request waited behind the slow clients";
  d.stop();
  server.join();
}

} // namespace
} // namespace hone::report
