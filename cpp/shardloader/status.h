// Status helpers shared by every part of shardloader.
//
// The public C++ API never throws: it returns absl::Status / absl::StatusOr<T>.
// Errors about data carry their context (shard URI, byte offset, sample key)
// twice: in the message, for people, and as Status payloads, for code (the
// Python bindings turn the payloads into `.uri`, `.offset` and `.key`).
//
// Debian's Abseil (20220623) has no ABSL_RETURN_IF_ERROR, hence our macros.
// Thread-safety: all functions are pure.
#ifndef SHARDLOADER_STATUS_H_
#define SHARDLOADER_STATUS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shardloader {

// Payload type URLs under which the context is stored.
inline constexpr absl::string_view kUriPayload = "shardloader/uri";
inline constexpr absl::string_view kOffsetPayload = "shardloader/offset";
inline constexpr absl::string_view kKeyPayload = "shardloader/key";

// Where in the input an error happened. Unset members are omitted.
struct ErrorContext {
  std::string uri;                // shard URI or path; empty if unknown
  std::optional<int64_t> offset;  // byte offset within the shard
  std::string key;                // sample key; empty if unknown
};

// Returns `status` with `context` added: the message becomes
// "<message> (shard <uri>, offset <n>, sample <key>)" and the context is
// stored as payloads. Context already present in `status` is kept (the
// innermost, most precise context wins). OK stays OK.
absl::Status WithContext(const absl::Status& status, const ErrorContext& context);

// `status` with `prefix` put before its message, keeping its code and
// payloads (context).
absl::Status Prefixed(const absl::Status& status, absl::string_view prefix);

// Reads the context back from a status' payloads.
ErrorContext GetContext(const absl::Status& status);

// Maps an errno value from a failed system call to a status code following
// the project's table (ENOENT NotFound, EACCES PermissionDenied, ...), with
// `what` and strerror in the message.
absl::Status ErrnoToStatus(int errno_value, absl::string_view what);

}  // namespace shardloader

#define SHARDLOADER_STATUS_CONCAT_INNER_(a, b) a##b
#define SHARDLOADER_STATUS_CONCAT_(a, b) SHARDLOADER_STATUS_CONCAT_INNER_(a, b)

// Returns from the current function if `expr` (an absl::Status) is not OK.
#define SHARDLOADER_RETURN_IF_ERROR(expr)                      \
  do {                                                         \
    const ::absl::Status shardloader_status_ = (expr);         \
    if (!shardloader_status_.ok()) return shardloader_status_; \
  } while (0)

// Evaluates `rexpr` (an absl::StatusOr<T>); returns its status on error,
// otherwise moves the value into `lhs` (which may be a declaration).
#define SHARDLOADER_ASSIGN_OR_RETURN(lhs, rexpr)                                                  \
  SHARDLOADER_ASSIGN_OR_RETURN_IMPL_(SHARDLOADER_STATUS_CONCAT_(shardloader_statusor_, __LINE__), \
                                     lhs, rexpr)
#define SHARDLOADER_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                       \
  if (!statusor.ok()) return std::move(statusor).status();       \
  lhs = std::move(statusor).value()

#endif  // SHARDLOADER_STATUS_H_
