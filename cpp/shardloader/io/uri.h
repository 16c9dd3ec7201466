// URI schemes: which backend a shard URI names, and the local path of a
// local one. Pure string functions; the backend is opened by io/open/.
//
// Thread-safety: thread-safe.
#ifndef SHARDLOADER_IO_URI_H_
#define SHARDLOADER_IO_URI_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shardloader {

// Whether `uri` names a remote object (http://, https://, s3://).
bool IsRemoteUri(absl::string_view uri);

// The local path a URI names (a plain path or file://). Errors:
// Unimplemented for remote schemes (http, https, s3), InvalidArgument for an
// unknown scheme, each naming the URI.
absl::StatusOr<std::string> LocalPathOf(const std::string& uri);

}  // namespace shardloader

#endif  // SHARDLOADER_IO_URI_H_
