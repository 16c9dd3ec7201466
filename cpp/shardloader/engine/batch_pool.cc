#include "shardloader/engine/batch_pool.h"

namespace shardloader::internal_batch {

std::shared_ptr<BatchPool> BatchPool::Create(size_t num_fields, size_t capacity, bool pin) {
  return std::shared_ptr<BatchPool>(new BatchPool(num_fields, capacity, pin));
}

std::shared_ptr<BatchSlot> BatchPool::Acquire() {
  std::unique_ptr<BatchSlot> slot;
  {
    absl::MutexLock lock(&mu_);
    if (!free_.empty()) {
      slot = std::move(free_.back());
      free_.pop_back();
    } else {
      ++num_created_;
    }
  }
  if (slot == nullptr) {
    slot = std::make_unique<BatchSlot>();
    slot->fields.reserve(num_fields_);
    for (size_t i = 0; i < num_fields_; ++i) slot->fields.emplace_back(pin_);
  }
  std::weak_ptr<BatchPool> pool = weak_from_this();
  return std::shared_ptr<BatchSlot>(slot.release(), [pool](BatchSlot* s) {
    if (std::shared_ptr<BatchPool> owner = pool.lock()) {
      owner->Release(s);
    } else {
      delete s;
    }
  });
}

void BatchPool::Release(BatchSlot* slot) {
  std::unique_ptr<BatchSlot> owned(slot);
  absl::MutexLock lock(&mu_);
  if (free_.size() < capacity_) free_.push_back(std::move(owned));
}

int64_t BatchPool::num_created() const {
  absl::MutexLock lock(&mu_);
  return num_created_;
}

}  // namespace shardloader::internal_batch
