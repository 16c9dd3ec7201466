#include "shardloader/internal/fork_safety.h"

#include <pthread.h>

#include <atomic>

#include "absl/base/internal/sysinfo.h"

namespace shardloader::internal_fork {
namespace {

// Runs (or waits for) Abseil's once-initialisations that absl::Mutex and
// absl::CondVar reach from their contended paths.
void FinishAbseilInit() {
  (void)absl::base_internal::NominalCPUFrequency();
  (void)absl::base_internal::NumCPUs();
}

}  // namespace

void InitForFork() {
  // No lock and no once-flag (a fork could copy those mid-way too): the
  // initialisations are finished before the handler is registered, and a
  // fork that races the registration finds them finished.
  FinishAbseilInit();
  static std::atomic<bool> registered{false};
  if (!registered.exchange(true)) pthread_atfork(&FinishAbseilInit, nullptr, nullptr);
}

}  // namespace shardloader::internal_fork
