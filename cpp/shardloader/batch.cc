#include "shardloader/batch.h"

namespace shardloader {

int64_t TensorView::num_elements() const {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

const BatchField* Batch::Find(absl::string_view name) const {
  for (const BatchField& field : fields_) {
    if (field.name == name) return &field;
  }
  return nullptr;
}

}  // namespace shardloader
