// Helpers for simulator tests: load shipped or inline models, check a policy
// from text, simulate.
#pragma once

#include "dsl/Frontend.h"
#include "model/App.h"
#include "model/Catalog.h"
#include "model/Machine.h"
#include "sim/Simulator.h"
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace hone::sim::test {

/// A machine, an app instantiated on it and a simulation context.
struct Setup {
  model::MachineModel machine;
  model::AppModel app;
  std::unique_ptr<model::Program> program;
  std::unique_ptr<Context> context;

  Setup(model::MachineModel m, model::AppModel a, std::optional<double> size = std::nullopt)
      : machine(std::move(m)), app(std::move(a)) {
    auto p = model::instantiate(app, machine, size);
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
    program = std::make_unique<model::Program>(std::move(*p));
    context = std::make_unique<Context>(machine, *program);
  }

  /// Shipped models by name.
  static std::unique_ptr<Setup> shipped(const std::string &app, const std::string &machine = "p100x4",
                                        std::optional<double> size = std::nullopt) {
    auto m = model::loadMachine(*model::findModel("machines", machine));
    auto a = model::loadApp(*model::findModel("apps", app));
    EXPECT_TRUE(m.ok() && a.ok());
    return std::make_unique<Setup>(std::move(*m), std::move(*a), size);
  }

  /// Simulates a policy given as text; the policy must check cleanly.
  Result run(const std::string &policy, const Options &options = {}) const {
    auto checked = hone::test::checkText(policy, "policy.map");
    EXPECT_TRUE(checked.ok()) << "policy does not check:\n" << policy;
    return simulate(*context, checked.program, options);
  }

  Result runFile(const std::string &path, const Options &options = {}) const { return run(hone::test::readFile(path), options); }
};

inline std::string expertPath(const std::string &app) { return hone::test::sourcePath("examples/mappers/" + app + ".map"); }

inline std::string expertText(const std::string &app) { return hone::test::readFile(expertPath(app)); }

/// Replaces the first occurrence of `from` (which must occur).
inline std::string replaced(std::string text, const std::string &from, const std::string &to) {
  auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "missing: " << from;
  if (at != std::string::npos)
    text.replace(at, from.size(), to);
  return text;
}

} // namespace hone::sim::test
