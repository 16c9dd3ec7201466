// Batch: the tensors of one batch of samples, as the loader hands them out.
//
// Each declared field becomes one tensor, or two for ragged fields: a values
// tensor and an int64 offsets tensor of shape (B + 1,) where sample i's bytes
// are values[offsets[i]:offsets[i+1]]. Tensors are C-contiguous views into
// memory from the loader's batch pool; the memory returns to the pool when
// the Batch and every copy of memory() are gone, so zero-copy wrappers
// (NumPy, DLPack, torch) hold memory() for as long as they live.
//
// Ownership: a Batch shares ownership of its memory. Thread-safety: a Batch
// is immutable once handed out; copies may be used from any thread.
#ifndef SHARDLOADER_BATCH_H_
#define SHARDLOADER_BATCH_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "shardloader/dtype.h"

namespace shardloader {

struct TensorView {
  DType dtype = DType::kUInt8;
  std::vector<int64_t> shape;  // C-contiguous, outermost dimension first
  void* data = nullptr;        // valid while the Batch's memory() lives

  int64_t num_elements() const;
  size_t size_bytes() const { return num_elements() * DTypeSize(dtype); }
};

struct BatchField {
  std::string name;
  TensorView values;                  // (B, *sample_shape), or (N,) if ragged
  std::optional<TensorView> offsets;  // int64 (B + 1,), only if ragged
};

class Batch {
 public:
  Batch(int64_t num_samples, std::vector<BatchField> fields, std::vector<std::string> keys,
        std::shared_ptr<const void> memory, bool pinned)
      : num_samples_(num_samples),
        fields_(std::move(fields)),
        keys_(std::move(keys)),
        memory_(std::move(memory)),
        pinned_(pinned) {}

  // Number of samples B (batch_size, or fewer in an epoch's last batch).
  int64_t num_samples() const { return num_samples_; }
  // Fields in the order they were declared.
  const std::vector<BatchField>& fields() const { return fields_; }
  // The field named `name`, or nullptr.
  const BatchField* Find(absl::string_view name) const;
  // Sample keys (WebDataset's __key__), in batch order.
  const std::vector<std::string>& keys() const { return keys_; }
  // Owner of the tensors' memory; keep a copy to keep them valid.
  const std::shared_ptr<const void>& memory() const { return memory_; }
  // Whether every tensor's memory is page-locked with CUDA (pinned).
  bool pinned() const { return pinned_; }

 private:
  int64_t num_samples_;
  std::vector<BatchField> fields_;
  std::vector<std::string> keys_;
  std::shared_ptr<const void> memory_;
  bool pinned_;
};

}  // namespace shardloader

#endif  // SHARDLOADER_BATCH_H_
