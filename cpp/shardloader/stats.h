// LoaderStats: what a Loader has done so far, for monitoring and tuning.
//
// Counters are cumulative over the Loader's life (all epochs); depths are
// read at the moment of the call. Busy times add up the time threads spent
// in each stage, so with N threads they can exceed wall-clock time.
//
// Thread-safety: plain value type.
#ifndef SHARDLOADER_STATS_H_
#define SHARDLOADER_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace shardloader {

// A sample left out under on_error="skip", and why.
struct SkippedSample {
  std::string uri;      // its shard
  int64_t offset = -1;  // byte offset in the shard; -1 if unknown
  std::string key;
  std::string error;  // the error's message
};

struct LoaderStats {
  int64_t num_shards_opened = 0;
  int64_t num_samples_read = 0;        // parsed from shards
  int64_t num_bytes_read = 0;          // shard bytes consumed by the readers
  int64_t num_batches = 0;             // assembled (decoded) batches
  int64_t num_samples_decoded = 0;     // samples in those batches
  int64_t num_errors = 0;              // errors that ended an epoch
  int64_t num_skipped = 0;             // bad samples replaced (on_error="skip")
  std::vector<SkippedSample> skipped;  // the first kMaxListedSkips of them
  absl::Duration read_busy;            // I/O threads opening, reading, parsing
  absl::Duration decode_busy;          // assembling batches (decode in the arena)
  absl::Duration consumer_wait;        // the consumer blocked waiting for batches
  int64_t ready_queue_depth = 0;       // batches ready for the consumer now
  int64_t batch_slots_created = 0;     // pool slots ever allocated

  static constexpr size_t kMaxListedSkips = 1000;

  // One line for logs: "shardloader: 12345 samples, 1.2 GB read, ...".
  std::string Summary() const;
};

}  // namespace shardloader

#endif  // SHARDLOADER_STATS_H_
