#include "shardloader/stats.h"

#include "absl/strings/str_format.h"

namespace shardloader {

std::string LoaderStats::Summary() const {
  return absl::StrFormat(
      "shardloader: %d samples read (%.1f MB) from %d shards, %d batches "
      "decoded, consumer waited %.2f s, readers busy %.2f s, decode busy "
      "%.2f s, %d batches ready, %d slots, %d errors",
      num_samples_read, num_bytes_read / 1e6, num_shards_opened, num_batches,
      absl::ToDoubleSeconds(consumer_wait), absl::ToDoubleSeconds(read_busy),
      absl::ToDoubleSeconds(decode_busy), ready_queue_depth, batch_slots_created, num_errors);
}

}  // namespace shardloader
