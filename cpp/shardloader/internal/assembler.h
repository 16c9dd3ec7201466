// Batch assembly: decodes a batch's samples straight into a pool slot.
//
// Samples are decoded in parallel in the loader's TBB arena. Fixed-shape
// fields (int, npy, image) go to row i of one contiguous (B, ...) tensor;
// ragged fields (bytes, text) are concatenated with int64 offsets. When
// several samples fail, the error of the lowest batch position is returned,
// so errors are deterministic too.
//
// Thread-safety: AssembleBatch may run concurrently on distinct slots.
#ifndef SHARDLOADER_INTERNAL_ASSEMBLER_H_
#define SHARDLOADER_INTERNAL_ASSEMBLER_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "oneapi/tbb/task_arena.h"
#include "shardloader/batch.h"
#include "shardloader/decode/field.h"
#include "shardloader/format/sample.h"
#include "shardloader/internal/batch_pool.h"

namespace shardloader::internal_pipeline {

// What random augmentations derive from (see SampleAugmentationSeed).
struct AugmentationKey {
  uint64_t seed = 0;
  int64_t epoch = 0;
};

// Decodes `samples` per `fields` into `slot` and returns the Batch viewing
// it. Errors: DataLoss (missing field, corrupt value) with the sample's
// shard, offset and key.
absl::StatusOr<Batch> AssembleBatch(
    absl::Span<const FieldSpec> fields, absl::Span<const Sample> samples,
    std::shared_ptr<internal_batch::BatchSlot> slot, tbb::task_arena& arena,
    const AugmentationKey& augmentation);

}  // namespace shardloader::internal_pipeline

#endif  // SHARDLOADER_INTERNAL_ASSEMBLER_H_
