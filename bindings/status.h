// Turning absl::Status into Python exceptions: the one place where error
// codes map to shardloader.errors classes.
#ifndef SHARDLOADER_BINDINGS_STATUS_H_
#define SHARDLOADER_BINDINGS_STATUS_H_

#include <pybind11/pybind11.h>

#include <type_traits>
#include <utility>

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

// Runs `fn` with the GIL released (so other Python threads run while it
// blocks), then unwraps its absl::StatusOr<T> or absl::Status result.
template <typename Fn>
auto WithoutGil(Fn&& fn) {
  using Result = decltype(fn());
  Result result;
  {
    pybind11::gil_scoped_release release;
    result = fn();
  }
  if constexpr (std::is_same_v<Result, absl::Status>) {
    ThrowIfError(result);
  } else {
    return Unwrap(std::move(result));
  }
}

}  // namespace shardloader::bindings

#endif  // SHARDLOADER_BINDINGS_STATUS_H_
