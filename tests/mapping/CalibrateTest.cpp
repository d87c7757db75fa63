// The model against "real" runs: observations made on a machine whose numbers differ from the
// model's (a stand-in for a real host), the fidelity measures, and the calibration's fit.
#include "mapping/Calibrate.h"
#include "mapping/Space.h"
#include "model/Catalog.h"
#include "sim/SimTestUtil.h"
#include "support/FileUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace {

using hone::mapping::calibrate;
using hone::mapping::Observation;
using hone::mapping::Space;
using hone::mapping::spearman;

TEST(Spearman, RanksWithTies) {
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  EXPECT_NEAR(spearman({1, 2, 3, 4, 5}, {2, 1, 4, 3, 5}), 0.8, 1e-12);
  // Ties share their mean rank: ranks (0.5, 0.5, 2) against (0, 1, 2).
  EXPECT_NEAR(spearman({1, 1, 2}, {1, 2, 3}), 0.8660254037844386, 1e-12);
  EXPECT_EQ(spearman({1, 1, 1}, {1, 2, 3}), 0); // a constant series has no ranking
  EXPECT_EQ(spearman({1}, {2}), 0);
}

/// Mappers from the decision space, "measured" on `truth` (the model's machine with other numbers).
std::vector<Observation> observe(const hone::sim::test::Setup &nominal, const hone::model::MachineModel &truth,
                                 size_t want) {
  Space space = Space::build(nominal.app, nominal.machine);
  hone::sim::test::Setup real(truth, nominal.app, 2000);
  std::mt19937_64 rng(7);
  std::vector<Observation> obs;
  for (int tries = 0; tries < 400 && obs.size() < want; ++tries) {
    std::vector<int> a;
    for (size_t n : space.sizes())
      a.push_back(static_cast<int>(rng() % n));
    std::string text = space.render(a);
    auto checked = hone::test::checkText(text, "drawn.map");
    if (!checked.ok())
      continue;
    hone::sim::Result r = hone::sim::simulate(*real.context, checked.program);
    if (r.ok)
      obs.push_back({text, r.timeS, "drawn " + std::to_string(tries)});
  }
  return obs;
}

TEST(Calibrate, RecoversAMachineWhoseNumbersDiffer) {
  auto nominal = hone::sim::test::Setup::shipped("circuit", "cpu-only", 2000);
  // The "real" host: the runtime's per-task and per-copy costs three times what the model says
  // (at this size they dominate circuit's time on CPUs).
  hone::model::MachineModel truth = nominal->machine;
  truth.runtime.taskAnalysisUs *= 3;
  truth.runtime.copyIssueUs *= 3;
  for (auto &p : truth.processors)
    p.overheadUs *= 3;
  auto obs = observe(*nominal, truth, 10);
  ASSERT_GE(obs.size(), 8u);

  auto text = hone::support::readFile(*hone::model::findModel("machines", "cpu-only"));
  ASSERT_TRUE(text.ok());
  auto cal = calibrate(obs, nominal->app, nominal->machine, *text, 2000.0);
  ASSERT_TRUE(cal.ok()) << cal.error().message;
  EXPECT_EQ(cal->before.compared, obs.size());
  EXPECT_GT(cal->lossBefore, 0.01);
  EXPECT_LT(cal->lossAfter, 0.05 * cal->lossBefore);
  EXPECT_LT(cal->after.medianRelError, 0.05);
  EXPECT_GT(cal->before.medianRelError, 0.2);
  EXPECT_NEAR(cal->runtime, 3.0, 0.3);
  std::cerr << "factors: " << cal->compute << " " << cal->memory << " " << cal->copies << " " << cal->runtime << "\n";
  // The calibrated file is the original with the fitted numbers, and it loads.
  auto reread = hone::model::parseMachine("calibrated.toml", cal->toml);
  ASSERT_TRUE(reread.ok()) << reread.error().message;
  EXPECT_NEAR(reread->runtime.taskAnalysisUs, nominal->machine.runtime.taskAnalysisUs * cal->runtime,
              1e-3 * nominal->machine.runtime.taskAnalysisUs);
  EXPECT_NEAR(reread->processors[0].overheadUs, nominal->machine.processors[0].overheadUs * cal->runtime,
              1e-3 * nominal->machine.processors[0].overheadUs);
  EXPECT_NE(cal->toml.find("# [calibrated] x"), std::string::npos);
  EXPECT_NE(cal->toml.find("# cpu-only"), std::string::npos); // comments kept
}

TEST(Calibrate, NeedsObservationsTheModelPredicts) {
  auto nominal = hone::sim::test::Setup::shipped("circuit", "cpu-only", 2000);
  std::vector<Observation> none = {{"Task * GPUU;", 1.0, "a"}, {"not a policy", 2.0, "b"}};
  auto cal = calibrate(none, nominal->app, nominal->machine, "", 2000.0);
  ASSERT_FALSE(cal.ok());
  EXPECT_NE(cal.error().message.find("predicts only 0 of the 2"), std::string::npos) << cal.error().message;
  EXPECT_FALSE(calibrate({none[0]}, nominal->app, nominal->machine, "", 2000.0).ok());
}

} // namespace
