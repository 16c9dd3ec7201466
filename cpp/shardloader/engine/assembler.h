// Batch assembly: decodes a batch's samples straight into a pool slot.
//
// Samples are decoded in parallel in the loader's TBB arena (or, where TBB
// cannot be used, on `num_threads` plain threads). Fixed-shape
// fields (int, npy, image) go to row i of one contiguous (B, ...) tensor;
// ragged fields (bytes, text) are concatenated with int64 offsets, laid out
// once every row has been decoded. A sample that could not be read or
// decoded is handed to `replace`, which either puts another sample in its
// place (then decoded in turn) or returns the error to raise. When several
// rows fail, the error of the lowest batch position is returned, so errors
// are deterministic too.
//
// Thread-safety: AssembleBatch may run concurrently on distinct slots.
#ifndef SHARDLOADER_ENGINE_ASSEMBLER_H_
#define SHARDLOADER_ENGINE_ASSEMBLER_H_

#include <memory>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "oneapi/tbb/task_arena.h"
#include "shardloader/batch.h"
#include "shardloader/decode/decode_field.h"
#include "shardloader/engine/batch_pool.h"
#include "shardloader/format/sample.h"
#include "shardloader/plan/epoch_order.h"

namespace shardloader::internal_pipeline {

// Called for row `row` whose sample failed with `error` (its read error, or
// its decode error). Returns OK once `*sample` holds a readable replacement;
// otherwise the error to raise. `*tries` counts the replacements tried for
// the row so far (0 at first); the callee advances it.
using ReplaceFn = absl::FunctionRef<absl::Status(size_t row, const absl::Status& error, int* tries,
                                                 Sample* sample)>;

// Decodes `samples` per `fields` into `slot` and returns the Batch viewing
// it. `read_errors[i]` is the error reading sample i (OK if it was read).
// Random augmentations derive from the epoch's `order` seed and epoch (see
// SampleAugmentationSeed).
// Errors: what `replace` returns, e.g. DataLoss (missing field, corrupt
// value) with the sample's shard, offset and key.
absl::StatusOr<Batch> AssembleBatch(absl::Span<const FieldSpec> fields, absl::Span<Sample> samples,
                                    absl::Span<const absl::Status> read_errors,
                                    std::shared_ptr<internal_batch::BatchSlot> slot,
                                    tbb::task_arena* arena, int num_threads,
                                    const OrderOptions& order, ReplaceFn replace);

}  // namespace shardloader::internal_pipeline

#endif  // SHARDLOADER_ENGINE_ASSEMBLER_H_
