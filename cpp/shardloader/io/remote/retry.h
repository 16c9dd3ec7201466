// Retry policy for remote reads and writes: which failures are worth another
// attempt, and how long to wait before it.
//
// Retried: Unavailable (connection refused or reset, 5xx), ResourceExhausted
// (429 Too Many Requests, 503 SlowDown) and DeadlineExceeded (connect and
// low-speed timeouts). Never retried: NotFound, PermissionDenied, DataLoss,
// InvalidArgument; retrying cannot fix them. Retries key on the status code,
// never on the message (DESIGN.md).
//
// Backoff is exponential with "full jitter": attempt n waits a uniformly
// random time in [0, min(max_backoff, initial_backoff * 2^n)]
// (AWS Architecture Blog, "Exponential Backoff And Jitter", 2015).
//
// Thread-safety: pure functions (Backoff draws from a thread-local generator).
#ifndef SHARDLOADER_IO_REMOTE_RETRY_H_
#define SHARDLOADER_IO_REMOTE_RETRY_H_

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/time/time.h"

namespace shardloader {

struct RetryPolicy {
  int max_attempts = 8;  // first try included
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(10);
};

// Whether `status` is a transient failure worth another attempt.
bool IsRetryable(const absl::Status& status);

// The pause before retry number `attempt` (0 for the first retry).
absl::Duration Backoff(const RetryPolicy& policy, int attempt);

// Calls `attempt` until it succeeds, fails with an error that is not
// retryable (returned as is), or `policy.max_attempts` calls have failed:
// then Unavailable, "gave up after N attempts: <last error>". Sleeps
// Backoff() between calls. `attempt` may keep state between calls (e.g.
// how many bytes already arrived, so the next call resumes there).
absl::Status RunWithRetries(const RetryPolicy& policy, absl::FunctionRef<absl::Status()> attempt);

}  // namespace shardloader

#endif  // SHARDLOADER_IO_REMOTE_RETRY_H_
