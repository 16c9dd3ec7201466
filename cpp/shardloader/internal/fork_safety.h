// Fork safety: a process forked while shardloader's threads run can create
// and use Loaders of its own (the DataLoader worker pattern).
//
// fork() copies one thread, and every lock as it was: a lock another thread
// held at that moment stays held in the child for ever. Abseil initialises
// some process-wide values once, on first use, under a spin lock: the CPU's
// nominal frequency (base_internal::NominalCPUFrequency(), measured with
// sleeps for several milliseconds when absl::Mutex first sees contention)
// and the CPU count. Forked in that window, the child's first contended
// Mutex waits for an initialisation that no thread will finish.
// InitForFork() runs those initialisations now and registers a
// pthread_atfork() prepare handler that runs them again before every fork:
// the forking thread then waits for one in progress, so the child always
// sees it finished. (The idea is that of glibc's own atfork handlers, which
// take malloc's locks before forking.)
//
// Thread-safety: InitForFork() is thread-safe and idempotent.
#ifndef SHARDLOADER_INTERNAL_FORK_SAFETY_H_
#define SHARDLOADER_INTERNAL_FORK_SAFETY_H_

#include <new>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace shardloader::internal_fork {

// Call before starting threads (Loader::Create does).
void InitForFork();

// For a pthread_atfork() child handler: makes `mu`, which the prepare
// handler locked, a fresh unlocked Mutex. Unlock() would not do: waiters
// the parent had queued on it are threads the child does not have, and
// they stay queued (one may be the designated waker), which can leave
// the Mutex unusable. The old state is abandoned, not destroyed.
inline void ResetMutexInChild(absl::Mutex& mu) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  new (&mu) absl::Mutex(absl::kConstInit);
}

}  // namespace shardloader::internal_fork

#endif  // SHARDLOADER_INTERNAL_FORK_SAFETY_H_
