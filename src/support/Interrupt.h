// Ctrl-C and kill while hone runs for hours: the first SIGINT or SIGTERM sets
// a flag that long operations poll (a running command's process group is
// killed, the tuning loop stops before recording the interrupted batch, an
// LLM request is abandoned) so that the run can be marked interrupted, its
// best so far written and the way to resume printed. A second signal ends
// hone at once, as if no handler were installed.
#pragma once

namespace hone::support {

/// Installs the handlers for SIGINT and SIGTERM (idempotent). Only commands that poll
/// interrupted() install them; every other command keeps the default behaviour.
void installInterruptHandlers();
/// Whether a SIGINT or SIGTERM arrived since the handlers were installed (async-signal-safe read).
bool interrupted();
/// The signal that arrived (SIGINT, SIGTERM), or 0.
int interruptSignal();
/// For tests: forget a signal that arrived.
void clearInterrupt();

} // namespace hone::support
