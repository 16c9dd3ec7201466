// Turning absl::Status into Python exceptions: the one place where error
// codes map to shardloader.errors classes.
#ifndef SHARDLOADER_BINDINGS_STATUS_H_
#define SHARDLOADER_BINDINGS_STATUS_H_

#include <utility>

#include <pybind11/pybind11.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shardloader::bindings {

// Raises the shardloader.errors class matching status.code() (with .code,
// .uri, .offset and .key set) unless `status` is OK.
void ThrowIfError(const absl::Status& status);

template <typename T>
T Unwrap(absl::StatusOr<T> result) {
  ThrowIfError(result.status());
  return *std::move(result);
}

}  // namespace shardloader::bindings

#endif  // SHARDLOADER_BINDINGS_STATUS_H_
