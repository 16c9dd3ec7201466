// Loader: streams batches of decoded samples from tar shards (WebDataset
// convention) for training.
//
// A Loader resolves its shard specs once, then, for each epoch, reads this
// reader's shards (split by rank and DataLoader worker) with its own I/O
// threads, shuffles samples in a seeded shuffle buffer, decodes the declared
// fields in its own TBB arena of `num_threads` threads, and assembles
// batches into a reusable pool. The batch sequence is a pure function of
// (shards, fields, seed, epoch, rank, world size, worker, number of workers,
// batch size, shuffle buffer size): it does not depend on thread counts or
// timing.
//
//   auto loader = shardloader::Loader::Create(options);  // StatusOr
//   while (true) {
//     absl::StatusOr<std::optional<shardloader::Batch>> batch = (*loader)->Next();
//     if (!batch.ok()) { /* error with shard, offset, key */ break; }
//     if (!batch->has_value()) break;  // end of epoch
//     ...
//   }
//   (*loader)->SetEpoch(1);  // the next Next() starts epoch 1
//
// Ownership: a Loader owns its threads, arena and batch pool; batches it
// returned stay valid after it is destroyed. Thread-safety: thread-safe; a
// Loader created before fork() refuses to work in the child (its threads do
// not exist there) with FailedPrecondition instead of hanging.
#ifndef SHARDLOADER_LOADER_H_
#define SHARDLOADER_LOADER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "shardloader/batch.h"
#include "shardloader/decode/field.h"
#include "shardloader/io/open_source.h"
#include "shardloader/plan/epoch_plan.h"
#include "shardloader/stats.h"

namespace shardloader {

namespace internal_pipeline {
class Pipeline;
}  // namespace internal_pipeline

struct LoaderOptions {
  // Shard specs: paths, URIs, brace patterns, directories, "::"-joined lists
  // (see plan/shard_list.h).
  std::vector<std::string> shards;
  // Fields of each batch, in order. At least one.
  std::vector<FieldSpec> fields;
  int64_t batch_size = 1;  // samples per batch, > 0
  bool drop_last = false;  // drop an epoch's last, smaller batch
  bool shuffle = true;     // permute shards and shuffle samples each epoch
  uint64_t seed = 0;
  int64_t epoch = 0;
  size_t shuffle_buffer_size = 1000;  // samples held by the shuffle buffer
  // Distributed training: default from the RANK and WORLD_SIZE environment
  // variables (as torchrun sets them), else 0 and 1.
  std::optional<int> rank;
  std::optional<int> world_size;
  // DataLoader workers of this rank (each runs its own Loader).
  int worker = 0;
  int num_workers = 1;
  // Decode threads; 0 means the CPUs this process may run on.
  int num_threads = 0;
  int num_io_threads = 2;          // shards read concurrently
  int prefetch_shards = 2;         // shards read ahead of the current one
  size_t prefetch_batches = 2;     // batches assembled ahead of the consumer
  // How shards are opened and read (read sizes; remote storage settings).
  SourceOptions source;
  // Page-lock batch memory with CUDA when a CUDA runtime and device are
  // present (Batch::pinned() tells); ordinary memory otherwise.
  bool pin_memory = true;
};

class Loader {
 public:
  // Validates `options` and resolves the shard specs (listing directories).
  // Errors: InvalidArgument for bad options (naming the option), NotFound
  // for a missing shard directory.
  static absl::StatusOr<std::unique_ptr<Loader>> Create(LoaderOptions options);
  ~Loader();

  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // The next batch of the current epoch, waiting for it; nullopt at the end
  // of the epoch. Starts the epoch on first use. Errors: those of reading and
  // decoding (NotFound, DataLoss, ...) with shard, offset and sample key,
  // after which the epoch is over; FailedPrecondition after fork() or
  // Close().
  absl::StatusOr<std::optional<Batch>> Next();

  // Waits up to `timeout` until Next() would not block (a batch, the end of
  // the epoch or an error is ready). Lets callers stay responsive, e.g. to
  // Ctrl-C.
  bool WaitReady(absl::Duration timeout);

  // Ends the current epoch (if running) and makes the next Next() start
  // `epoch` from its beginning.
  void SetEpoch(int64_t epoch);
  // Ends the current epoch and restarts it from the beginning.
  void Restart();
  int64_t epoch() const;

  // Samples and batches this reader yields in the current epoch. Counts the
  // samples of its shards by reading their headers once (cached).
  absl::StatusOr<int64_t> NumSamples();
  absl::StatusOr<int64_t> NumBatches();

  // Counters and queue depths (see stats.h).
  LoaderStats Stats() const;

  // Stops the threads; later Next() calls fail with FailedPrecondition.
  void Close();

  const std::vector<std::string>& shards() const { return shards_; }
  const LoaderOptions& options() const { return options_; }

 private:
  class Engine;
  Loader(LoaderOptions options, std::vector<std::string> shards);
  // The running epoch's pipeline, started if need be.
  absl::StatusOr<std::shared_ptr<internal_pipeline::Pipeline>> StartedPipeline()
      ABSL_LOCKS_EXCLUDED(mu_);
  ReaderPosition Position() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckUsable() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const LoaderOptions options_;
  const std::vector<std::string> shards_;
  const int creator_pid_;
  std::unique_ptr<Engine> engine_;  // arena, pool, running epoch

  mutable absl::Mutex mu_;
  int64_t epoch_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::optional<int64_t>> sample_counts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shardloader

#endif  // SHARDLOADER_LOADER_H_
