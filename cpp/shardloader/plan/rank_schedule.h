// RankSchedule: which positions of the epoch's global order each rank (and
// each DataLoader worker of a rank) turns into batches.
//
// Dealing is by global batch, as DistributedSampler + DataLoader would do on
// one long list: from the epoch position `start` (0, or where a resumed job
// left off), global batch g covers world_size × batch_size consecutive
// positions, and rank r takes the r-th block of batch_size of them. Every
// rank therefore gets exactly the same number of batches, and after g global
// batches the job has consumed positions [start, start + g·W·B), whatever W
// was: a checkpoint is one number, and a job resumed with another world size
// continues the same order with no sample lost or repeated.
//
// The remaining samples R = N − start rarely divide by the world size W:
//   kPad  (default) the order is extended to a multiple of W by repeating
//         samples from the epoch's start (like DistributedSampler's padding);
//   kDrop the last R mod W samples are left out of the epoch.
// The last global batch may then be short: each rank's last batch has the
// same size R'/W − (full batches)·B, or is dropped with `drop_last`.
// DataLoader worker k of K takes the rank's batches k, k+K, k+2K, ...: the
// DataLoader's round-robin puts them back in the rank's order.
//
// Thread-safety: immutable after construction.
#ifndef SHARDLOADER_PLAN_RANK_SCHEDULE_H_
#define SHARDLOADER_PLAN_RANK_SCHEDULE_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace shardloader {

enum class Remainder { kPad, kDrop };

struct ScheduleOptions {
  int64_t num_samples = 0;  // N: samples in the epoch's order
  int64_t start = 0;        // first position still to deal, in [0, N]
  int rank = 0;
  int world_size = 1;
  int worker = 0;  // DataLoader worker of this rank
  int num_workers = 1;
  int64_t batch_size = 1;
  bool drop_last = false;
  Remainder remainder = Remainder::kPad;
};

class RankSchedule {
 public:
  // Errors: InvalidArgument for a rank, worker, batch size or start out of
  // range.
  static absl::StatusOr<RankSchedule> Create(const ScheduleOptions& options);

  const ScheduleOptions& options() const { return options_; }

  // Batches this reader (rank and worker) yields.
  int64_t num_batches() const;

  // This reader's batch `j` covers positions [first, first + size) of the
  // extended order; a position p >= N stands for sample p − N (mod N).
  struct Span {
    int64_t first = 0;
    int64_t size = 0;
  };
  Span Batch(int64_t j) const;

  // The epoch position once every rank has consumed its first
  // `rank_batches` batches: where a job stopped there resumes. At most N.
  int64_t PositionAfter(int64_t rank_batches) const;

 private:
  explicit RankSchedule(const ScheduleOptions& options);

  ScheduleOptions options_;
  int64_t dealt_ = 0;         // R': positions dealt from `start`
  int64_t full_batches_ = 0;  // global batches of W × B
  int64_t tail_ = 0;          // per-rank size of the short last batch
  int64_t rank_batches_ = 0;
};

}  // namespace shardloader

#endif  // SHARDLOADER_PLAN_RANK_SCHEDULE_H_
