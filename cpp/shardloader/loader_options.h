// LoaderOptions: everything a Loader is configured with, declared once.
//
// The engine (engine/) reads what it needs from the one LoaderOptions it is
// given (shared, immutable), instead of copying fields into option structs
// of its own; plan/ takes the plain values its pure functions need
// (OrderOptions, ScheduleOptions).
//
// Thread-safety: plain value type.
#ifndef SHARDLOADER_LOADER_OPTIONS_H_
#define SHARDLOADER_LOADER_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shardloader/decode/field.h"
#include "shardloader/io/source_options.h"
#include "shardloader/plan/rank_schedule.h"

namespace shardloader {

// What a bad sample (unreadable, or failing to decode) does.
enum class OnError {
  kRaise,  // its error ends the epoch (the default)
  kSkip,   // it is replaced by another sample, deterministically (see
           // engine/bad_samples.h), within a budget
};

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
  // Shards whose samples are shuffled together (see plan/epoch_order.h).
  int64_t window_shards = 8;
  // Samples that do not divide evenly among the ranks: padded with repeats
  // (the default) or dropped (see plan/rank_schedule.h).
  Remainder remainder = Remainder::kPad;
  // Distributed training: default from the RANK and WORLD_SIZE environment
  // variables (as torchrun sets them), else 0 and 1.
  std::optional<int> rank;
  std::optional<int> world_size;
  // DataLoader workers of this rank (each runs its own Loader and takes
  // every num_workers-th of the rank's batches).
  int worker = 0;
  int num_workers = 1;
  // Bad samples. With kSkip, an epoch may skip up to
  // max(max_errors, max_error_fraction × this reader's samples) of them.
  OnError on_error = OnError::kRaise;
  int64_t max_errors = 0;
  double max_error_fraction = 0.0;
  // Decode threads; 0 means the CPUs this process may run on.
  int num_threads = 0;
  int num_io_threads = 2;       // threads reading samples
  size_t prefetch_batches = 2;  // batches assembled ahead of the consumer
  // How shards are opened and read (read sizes; remote storage settings).
  SourceOptions source;
  // Page-lock batch memory with CUDA when a CUDA runtime and device are
  // present (Batch::pinned() tells); ordinary memory otherwise.
  bool pin_memory = true;
};

}  // namespace shardloader

#endif  // SHARDLOADER_LOADER_OPTIONS_H_
