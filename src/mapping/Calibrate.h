// How well the performance model predicts real runs, and a fit of the machine model's cost numbers
// to them (`hone model calibrate`).
//
// Observations are mappers measured for real: the successful steps of command-evaluator runs in an
// experiment store (their metric is the measured time). Each is simulated on the app's model; the
// fidelity is the Spearman rank correlation of predicted and measured times and the median
// relative error. Calibration scales four groups of the machine model's numbers -- processors'
// flop rates, memories' access bandwidths, copy channels' bandwidths, and the runtime's per-task
// and per-copy costs (with processors' task overheads) -- by factors that minimise the squared
// error of log(predicted / measured) over the observations (a least-squares fit, by pattern search
// over the log factors), and reports the residuals before and after.
#pragma once

#include "model/App.h"
#include "model/Machine.h"
#include "support/Expected.h"

#include <optional>
#include <string>
#include <vector>

namespace hone::store {
class Store;
}

namespace hone::mapping {

struct Observation {
  std::string mapper;    // the policy's text
  double measuredS = 0;  // the real run's time
  std::string label;     // where it came from ("run 3 step 7")
};

/// The successful steps of the store's command-evaluator runs of `app` (whose metric is a time).
/// `notes` says what was skipped and why.
support::Expected<std::vector<Observation>> observationsFromStore(store::Store &store, const std::string &app,
                                                                  std::vector<std::string> *notes = nullptr);

struct Fidelity {
  std::vector<double> predictedS; // per observation; NaN where the model rejects the mapper
  double spearman = 0;            // over the observations the model predicts
  double medianRelError = 0;      // median |predicted - measured| / measured
  size_t compared = 0;
};

/// The model's predictions for the observations on `machine`.
Fidelity fidelity(const std::vector<Observation> &obs, const model::AppModel &app, const model::MachineModel &machine,
                  std::optional<double> size);

struct Calibration {
  // Multipliers of: processors' gflops, memory access bandwidths, channel bandwidths, runtime costs.
  double compute = 1, memory = 1, copies = 1, runtime = 1;
  Fidelity before, after;
  double lossBefore = 0, lossAfter = 0; // mean squared log error over the mappers the model predicts
  model::MachineModel machine;          // the calibrated machine
  std::string toml;                     // the machine file's text with the calibrated numbers
};

/// Fits the four factors; `machineText` is the machine file's text (rewritten with the new numbers).
support::Expected<Calibration> calibrate(const std::vector<Observation> &obs, const model::AppModel &app,
                                         const model::MachineModel &machine, const std::string &machineText,
                                         std::optional<double> size);

/// Spearman's rank correlation of two equally long series (ties get their mean rank); 0 when
/// either is constant or shorter than 2.
double spearman(const std::vector<double> &a, const std::vector<double> &b);

} // namespace hone::mapping
