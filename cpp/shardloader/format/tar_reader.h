// TarReader: a streaming reader of tar archives (V7, ustar, GNU, PAX).
//
// Reads member headers and data from a forward-only ByteSource, never seeking
// backwards. Understands GNU long names and long link names ('L', 'K'), PAX
// extended ('x') and global ('g') headers, base-256 numeric fields, and skips
// the data of GNU and PAX sparse members correctly. Malformed input is
// rejected as Go's archive/tar rejects it (its test vectors live in
// ../shared/data/edge/tar): the error is DataLoss and names the shard and the
// byte offset of the offending header.
//
// Unlike Go, which stops reading at the end-of-archive marker, the bytes after
// it are read and must be zero (see Next()).
//
// As in Go, the last of several extension headers of one kind wins, and the
// stream may end cleanly right after extension headers or within a member's
// padding. Beyond Go: the path, linkpath and size records of PAX global
// headers apply to every later member until a local record overrides them
// (POSIX), and Solaris 'X' headers are read as PAX 'x' headers. Errors about
// the archive are sticky: later calls of Next() and ReadData() return them.
//
// Ownership: does not own the source, which must outlive the reader.
// Thread-safety: thread-compatible.
#ifndef SHARDLOADER_FORMAT_TAR_READER_H_
#define SHARDLOADER_FORMAT_TAR_READER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shardloader/io/byte_source.h"

namespace shardloader {

enum class TarEntryType {
  kRegular,    // '0', '\0', '7' (contiguous); the only type with sample data
  kDirectory,  // '5'
  kSymlink,    // '2'
  kHardLink,   // '1'
  kOther,      // character/block devices, FIFOs, sparse files, ...
};

struct TarMember {
  std::string name;       // full path after GNU/PAX overrides
  std::string link_name;  // target of a link; empty otherwise
  TarEntryType type = TarEntryType::kOther;
  int64_t header_offset = 0;  // offset of this member's first header block
                              // (including its GNU/PAX extension headers)
  int64_t data_offset = 0;    // offset of the member's data in the archive
  int64_t size = 0;           // data size in bytes as stored in the archive
};

// Whether the 512-byte `block` is a tar header with a valid checksum whose
// size field equals `size`: the check a reader makes before trusting an
// index's offset.
bool IsHeaderOfSize(const char* block, int64_t size);

class TarReader {
 public:
  explicit TarReader(ByteSource* source) : source_(source) {}

  // Advances to the next member, skipping any unread data of the current one.
  // Returns std::nullopt at the end of the archive (two zero blocks, or a
  // clean end of the stream on a block boundary). Only zero bytes may follow
  // the two zero blocks (tar pads the archive to its record size, 10 KiB by
  // default): non-zero data after them means a damaged shard, such as one
  // whose first blocks were zeroed, not an empty one. Errors: DataLoss for
  // malformed headers, bad checksums, truncated archives and data after the
  // end, with the shard and the offset of the header (or of the first
  // non-zero byte after the end); I/O errors from the source.
  absl::StatusOr<std::optional<TarMember>> Next();

  // Reads the whole data of the current member into `out` (resized to the
  // member's size, reusing its capacity). At most once per member, after
  // Next() returned it. The data of kOther members (sparse files, ...) is
  // returned as stored. Errors: DataLoss if the archive ends early;
  // FailedPrecondition before Next() or on a second call for a member.
  absl::Status ReadData(std::string* out);

 private:
  // The body of Next(); Next() makes its errors sticky.
  absl::StatusOr<std::optional<TarMember>> ReadNextMember();
  // Skips the unread data and the padding of the current member.
  absl::Status SkipCurrent();
  // Validates the sparse map of an old GNU sparse header ('S') in `block`,
  // reading its extension blocks (which `block` is reused for).
  absl::Status ReadOldGnuSparseMap(char* block);
  // Reads the rest of the stream after the end-of-archive marker at
  // `end_offset`. Errors: DataLoss at the first non-zero byte.
  absl::Status CheckOnlyZerosFollow(int64_t end_offset);
  // Reads up to `size` bytes; fewer only at the end of the stream.
  absl::StatusOr<size_t> ReadUpTo(char* dst, size_t size);
  // Skips up to `size` bytes; fewer only at the end of the stream.
  absl::StatusOr<int64_t> SkipUpTo(int64_t size);
  // Reads one 512-byte block into `block`. Returns false at a clean end of
  // the stream; a partial block is DataLoss.
  absl::StatusOr<bool> ReadBlock(char* block);
  // Reads the `size` data bytes of an extension header into `out` and skips
  // their padding.
  absl::Status ReadExtension(int64_t size, std::string* out);
  // Parses and validates `pax_data_` into `pax_records_`.
  absl::Status ParsePaxData();
  // Applies the records of a PAX global header ('g') to `global_*_`.
  void ApplyGlobalRecords();
  // The value of the last local PAX record `key`, if any.
  std::optional<absl::string_view> LocalRecord(absl::string_view key) const;
  // Validates the PAX GNU sparse records (formats 0.0, 0.1, 1.0) of a member
  // of stored size `size`. Returns whether the member is sparse; may rename
  // it (GNU.sparse.name).
  absl::StatusOr<bool> CheckPaxSparse(int64_t size, std::string* name) const;

  ByteSource* source_;
  absl::Status status_;       // sticky error of Next() and ReadData()
  bool at_end_ = false;       // the end of the archive was reached
  int64_t error_offset_ = 0;  // header that errors are attributed to

  // The current member.
  std::string member_name_;    // for error messages
  int64_t member_offset_ = 0;  // offset of its first header block
  int64_t remaining_ = 0;      // unread data bytes
  int64_t padding_ = 0;        // padding after the data
  bool data_read_ = true;      // ReadData() was called (or no member yet)

  // Extension headers of the member being assembled. Buffers are reused
  // from member to member; `pax_records_` points into `pax_data_`.
  std::string pax_data_;
  std::vector<std::pair<absl::string_view, absl::string_view>> pax_records_;
  std::string long_name_;  // GNU 'L'
  std::string long_link_;  // GNU 'K'

  // Records of PAX global headers ('g'), applied to every later member
  // unless a local record overrides them.
  std::optional<std::string> global_path_;
  std::optional<std::string> global_link_path_;
  std::optional<int64_t> global_size_;
};

}  // namespace shardloader

#endif  // SHARDLOADER_FORMAT_TAR_READER_H_
