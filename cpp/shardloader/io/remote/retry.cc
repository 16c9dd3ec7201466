#include "shardloader/io/remote/retry.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace shardloader {

bool IsRetryable(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kDeadlineExceeded:
      return true;
    default:
      return false;
  }
}

absl::Duration Backoff(const RetryPolicy& policy, int attempt) {
  thread_local std::minstd_rand generator{std::random_device{}()};
  const absl::Duration ceiling =
      std::min(policy.max_backoff, policy.initial_backoff * (int64_t{1} << std::min(attempt, 30)));
  std::uniform_real_distribution<double> fraction(0.0, 1.0);
  return ceiling * fraction(generator);
}

absl::Status RunWithRetries(const RetryPolicy& policy, absl::FunctionRef<absl::Status()> attempt) {
  absl::Status status;
  for (int n = 0; n < std::max(policy.max_attempts, 1); ++n) {
    if (n > 0) absl::SleepFor(Backoff(policy, n - 1));
    status = attempt();
    if (status.ok() || !IsRetryable(status)) return status;
  }
  return absl::UnavailableError(
      absl::StrCat("gave up after ", policy.max_attempts, " attempts: ", status.message()));
}

}  // namespace shardloader
