// Positional reads of a local file (a path on a local or mounted file
// system: ext4, NFS, CephFS, ...).
//
// Regular files are memory-mapped (SourceOptions::memory_map) or read with
// pread(2), with POSIX_FADV_RANDOM. Pipes and FIFOs cannot seek: they are
// read once, whole, into memory (up to `max_unseekable_bytes`).
//
// Ownership: the source owns its descriptor and mapping. Thread-safety:
// ReadAt() may be called from many threads at once.
#ifndef SHARDLOADER_IO_LOCAL_LOCAL_RANDOM_ACCESS_H_
#define SHARDLOADER_IO_LOCAL_LOCAL_RANDOM_ACCESS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "shardloader/io/random_access.h"
#include "shardloader/io/source_options.h"

namespace shardloader {

// Opens the local file at `path`. Errors: NotFound (ENOENT),
// PermissionDenied, InvalidArgument (a directory), ResourceExhausted for a
// pipe longer than `options.max_unseekable_bytes`, each naming the path.
absl::StatusOr<std::shared_ptr<RandomAccessSource>> OpenLocalRandomAccess(
    const std::string& path, const SourceOptions& options = {});

}  // namespace shardloader

#endif  // SHARDLOADER_IO_LOCAL_LOCAL_RANDOM_ACCESS_H_
