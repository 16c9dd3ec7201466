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

// Runs `fn` with the GIL released and returns its result. Not
// py::gil_scoped_release: at interpreter shutdown, a daemon thread that
// takes the GIL back is ended by pthread_exit(), a forced unwind, which calls
// std::terminate() when it reaches a destructor (noexcept). Here the GIL is
// taken back outside any destructor, so the unwind goes through.
template <typename Fn>
auto CallWithoutGil(Fn&& fn) -> decltype(fn()) {
  using Result = decltype(fn());
  PyThreadState* state = PyEval_SaveThread();
  if constexpr (std::is_void_v<Result>) {
    try {
      fn();
    } catch (...) {
      PyEval_RestoreThread(state);
      throw;
    }
    PyEval_RestoreThread(state);
  } else {
    Result result;
    try {
      result = fn();
    } catch (...) {
      PyEval_RestoreThread(state);
      throw;
    }
    PyEval_RestoreThread(state);
    return result;
  }
}

// Runs `fn` with the GIL released (so other Python threads run while it
// blocks), then unwraps its absl::StatusOr<T> or absl::Status result.
template <typename Fn>
auto WithoutGil(Fn&& fn) {
  auto result = CallWithoutGil(std::forward<Fn>(fn));
  if constexpr (std::is_same_v<decltype(result), absl::Status>) {
    ThrowIfError(result);
  } else {
    return Unwrap(std::move(result));
  }
}

}  // namespace shardloader::bindings

#endif  // SHARDLOADER_BINDINGS_STATUS_H_
