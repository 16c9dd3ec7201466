// BatchPool: a pool of reusable batch slots, so that a warm loader allocates
// no batch memory.
//
// A slot holds one buffer per field (plus offsets for ragged fields). Acquire() hands out a free
// slot, or a new one when the consumer still holds every slot (so `list(loader)` works instead of
// deadlocking); a released slot returns to the free list while the list is
// below `capacity`, and is freed otherwise. Memory therefore stays bounded by
// capacity x batch bytes plus whatever the consumer chooses to keep.
//
// Ownership: slots are shared_ptrs whose deleter returns them to the pool;
// they may outlive the pool. Thread-safety: thread-safe.
#ifndef SHARDLOADER_ENGINE_BATCH_POOL_H_
#define SHARDLOADER_ENGINE_BATCH_POOL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "shardloader/internal/aligned_buffer.h"

namespace shardloader::internal_batch {

struct FieldBuffers {
  explicit FieldBuffers(bool pin) : values(pin), offsets(pin) {}
  AlignedBuffer values;
  AlignedBuffer offsets;  // ragged fields only
};

struct BatchSlot {
  std::vector<FieldBuffers> fields;  // one per declared field, in order
};

class BatchPool : public std::enable_shared_from_this<BatchPool> {
 public:
  // `pin`: page-lock slot memory with CUDA when a runtime is present.
  static std::shared_ptr<BatchPool> Create(size_t num_fields, size_t capacity, bool pin);

  std::shared_ptr<BatchSlot> Acquire();

  // Slots ever created (for tests and stats).
  int64_t num_created() const;

 private:
  BatchPool(size_t num_fields, size_t capacity, bool pin)
      : num_fields_(num_fields), capacity_(capacity), pin_(pin) {}
  void Release(BatchSlot* slot);

  const size_t num_fields_;
  const size_t capacity_;
  const bool pin_;
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<BatchSlot>> free_ ABSL_GUARDED_BY(mu_);
  int64_t num_created_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shardloader::internal_batch

#endif  // SHARDLOADER_ENGINE_BATCH_POOL_H_
