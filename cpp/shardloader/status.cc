#include "shardloader/status.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace shardloader {

absl::Status WithContext(const absl::Status& status, const ErrorContext& context) {
  if (status.ok()) return status;
  const ErrorContext existing = GetContext(status);
  ErrorContext added;
  if (existing.uri.empty()) added.uri = context.uri;
  if (!existing.offset.has_value()) added.offset = context.offset;
  if (existing.key.empty()) added.key = context.key;
  std::string where;
  auto append = [&where](absl::string_view part) {
    absl::StrAppend(&where, where.empty() ? "" : ", ", part);
  };
  if (!added.uri.empty()) append(absl::StrCat("shard ", added.uri));
  if (added.offset.has_value()) append(absl::StrCat("offset ", *added.offset));
  if (!added.key.empty()) append(absl::StrCat("sample ", added.key));
  if (where.empty()) return status;
  absl::Status result(status.code(), absl::StrCat(status.message(), " (", where, ")"));
  status.ForEachPayload([&result](absl::string_view type_url, const absl::Cord& payload) {
    result.SetPayload(type_url, payload);
  });
  if (!added.uri.empty()) result.SetPayload(kUriPayload, absl::Cord(added.uri));
  if (added.offset.has_value()) {
    result.SetPayload(kOffsetPayload, absl::Cord(absl::StrCat(*added.offset)));
  }
  if (!added.key.empty()) result.SetPayload(kKeyPayload, absl::Cord(added.key));
  return result;
}

ErrorContext GetContext(const absl::Status& status) {
  ErrorContext context;
  if (auto uri = status.GetPayload(kUriPayload)) context.uri = std::string(*uri);
  if (auto key = status.GetPayload(kKeyPayload)) context.key = std::string(*key);
  if (auto offset = status.GetPayload(kOffsetPayload)) {
    int64_t value = 0;
    if (absl::SimpleAtoi(std::string(*offset), &value)) context.offset = value;
  }
  return context;
}

absl::Status ErrnoToStatus(int errno_value, absl::string_view what) {
  std::string message = absl::StrCat(what, ": ", std::strerror(errno_value));
  switch (errno_value) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    case EINVAL:
    case EISDIR:
    case ENAMETOOLONG:
      return absl::InvalidArgumentError(message);
    case ENOSPC:
    case ENOMEM:
    case EMFILE:
    case ENFILE:
      return absl::ResourceExhaustedError(message);
    case ETIMEDOUT:
      return absl::DeadlineExceededError(message);
    case EAGAIN:
    case EINTR:
    case ECONNRESET:
    case EIO:
      return absl::UnavailableError(message);
    default:
      return absl::UnknownError(message);
  }
}

absl::Status Prefixed(const absl::Status& status, absl::string_view prefix) {
  if (status.ok()) return status;
  absl::Status out(status.code(), absl::StrCat(prefix, status.message()));
  status.ForEachPayload([&out](absl::string_view type_url, const absl::Cord& payload) {
    out.SetPayload(type_url, payload);
  });
  return out;
}

}  // namespace shardloader
