// Running an external command the way an evaluator must: in its own process
// group, with a time limit (the whole group is killed, children included)
// and an address-space limit, its output captured (bounded).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace hone::support {

struct SubprocessOptions {
  std::vector<std::string> argv; // argv[0] is looked up on PATH
  std::string workdir;           // empty: the current directory
  double timeoutS = 0;           // 0: no limit
  size_t memoryLimitBytes = 0;   // RLIMIT_AS of the child; 0: no limit
  size_t outputLimitBytes = 1 << 20; // keep at most this much of stdout+stderr (the end)
  bool runWhenInterrupted = false;   // clean-up commands (scancel) run to the end after Ctrl-C too
  // Files the command writes, removed before it runs so that a stale one never passes for its own;
  // "DIR/prefix*" removes the files of DIR whose names start with prefix. (An executor whose jobs outlive
  // hone removes them in the job: a result adopted after a restart keeps its files.)
  std::vector<std::string> clearFirst;
};

struct SubprocessResult {
  bool started = false;   // false: could not start (see error)
  int exitCode = -1;      // when it exited normally
  int signal = 0;         // when a signal ended it
  bool timedOut = false;  // killed at the time limit
  bool interrupted = false; // killed because hone was interrupted (support/Interrupt.h)
  std::string output;     // stdout and stderr, interleaved as written
  bool outputTruncated = false;
  double seconds = 0;
  std::string error;
  bool ok() const { return started && !timedOut && !interrupted && signal == 0 && exitCode == 0; }
  /// "exit 2", "killed by signal 9", "timed out after 3.0 s", "interrupted", "could not start: ...", or
  /// the error of a command that started and whose end is not known (exitCode -1).
  std::string describe() const;
};

SubprocessResult runSubprocess(const SubprocessOptions &options);
/// Removes the files of `clearFirst` (as runSubprocess does before it starts the command).
void clearOutputs(const std::vector<std::string> &clearFirst);

} // namespace hone::support
