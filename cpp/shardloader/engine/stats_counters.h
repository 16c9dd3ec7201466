// StatsCounters: the lock-free counters behind LoaderStats, shared by the
// loader, its pipeline and its (detached) reader threads.
//
// Thread-safety: thread-safe (relaxed atomics: totals, not synchronisation).
#ifndef SHARDLOADER_ENGINE_STATS_COUNTERS_H_
#define SHARDLOADER_ENGINE_STATS_COUNTERS_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "shardloader/stats.h"
#include "shardloader/status.h"

namespace shardloader::internal_stats {

struct StatsCounters {
  std::atomic<int64_t> num_shards_opened{0};
  std::atomic<int64_t> num_samples_read{0};
  std::atomic<int64_t> num_bytes_read{0};
  std::atomic<int64_t> num_batches{0};
  std::atomic<int64_t> num_samples_decoded{0};
  std::atomic<int64_t> num_errors{0};
  std::atomic<int64_t> read_busy_ns{0};
  std::atomic<int64_t> decode_busy_ns{0};
  std::atomic<int64_t> consumer_wait_ns{0};
  std::atomic<int64_t> num_skipped{0};

  // Counts a skipped sample and lists the first LoaderStats::kMaxListedSkips.
  void RecordSkip(const absl::Status& error) ABSL_LOCKS_EXCLUDED(skipped_mu) {
    Add(num_skipped, 1);
    absl::MutexLock lock(&skipped_mu);
    if (skipped.size() >= LoaderStats::kMaxListedSkips) return;
    const ErrorContext context = GetContext(error);
    skipped.push_back({.uri = context.uri,
                       .offset = context.offset.value_or(-1),
                       .key = context.key,
                       .error = std::string(error.message())});
  }
  std::vector<SkippedSample> Skipped() const ABSL_LOCKS_EXCLUDED(skipped_mu) {
    absl::MutexLock lock(&skipped_mu);
    return skipped;
  }

  mutable absl::Mutex skipped_mu;
  std::vector<SkippedSample> skipped ABSL_GUARDED_BY(skipped_mu);

  static void Add(std::atomic<int64_t>& counter, int64_t value) {
    counter.fetch_add(value, std::memory_order_relaxed);
  }
};

// Adds the time from construction to destruction to a nanosecond counter.
class ScopedTimer {
 public:
  explicit ScopedTimer(std::atomic<int64_t>& counter) : counter_(counter), start_(absl::Now()) {}
  ~ScopedTimer() { StatsCounters::Add(counter_, absl::ToInt64Nanoseconds(absl::Now() - start_)); }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  std::atomic<int64_t>& counter_;
  absl::Time start_;
};

}  // namespace shardloader::internal_stats

#endif  // SHARDLOADER_ENGINE_STATS_COUNTERS_H_
